package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tidemark/tidemark"
)

type fakeEvidence map[string][]byte

func (f fakeEvidence) Evidence(ctx context.Context, id string, rev int) ([]byte, string, error) {
	b, ok := f[fmt.Sprintf("%s/%d", id, rev)]
	if !ok {
		return nil, "", tidemark.ErrNotFound
	}
	return b, tidemark.HashEvidence(b), nil
}

// TestEvidenceDownload: a change page's evidence link serves the frozen
// bytes with their hash; a missing revision is 404 and a bad one 400.
func TestEvidenceDownload(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("GET /evidence/{event}/{revision}", EvidenceHandler(fakeEvidence{"e1/2": []byte("commit x\n")}.Evidence))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/evidence/e1/2")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "commit x\n" || resp.Header.Get("X-Evidence-SHA256") != tidemark.HashEvidence(body) ||
		resp.Header.Get("Content-Disposition") != `attachment; filename="evidence-e1-r2.txt"` {
		t.Fatalf("%d %q %v", resp.StatusCode, body, resp.Header)
	}
	for path, want := range map[string]int{"/evidence/e1/1": 404, "/evidence/e1/x": 400, "/evidence/e1/0": 400} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}
