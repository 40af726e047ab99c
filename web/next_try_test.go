package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

// A worker's hold that outlasts a source's next due time is when the
// source is next tried: the status page, the source's page and the API
// (its list and its source) say so alike, with the worker and why.
func TestHoldPastDueShowsEverywhere(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) { testHoldPastDue(t, b) })
}

func testHoldPastDue(t *testing.T, b sqltest.Backend) {
	ctx := context.Background()
	env := sqltest.NewEnv(5)
	db := sqltest.MustOpen(t, b, env)
	st := db.Ingest()
	src, err := st.AddSource(ctx, ingest.NewSource{Name: "docs", Kind: "dir", Location: "/srv/docs", Interval: time.Minute, RetryBudget: 3})
	if err != nil {
		t.Fatal(err)
	}
	now := env.Clock.Now()
	until := src.NextDueAt.Add(2 * time.Hour).Truncate(time.Second)
	if err := st.RecordUnserved(ctx, ingest.Unserved{SourceID: src.ID, Holder: "w1", Reason: "directory /srv/docs not found", At: now, Until: until}); err != nil {
		t.Fatal(err)
	}
	token, _, err := db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&web.Server{Ingest: st, Auth: db.Auth(), Clock: env.Clock}).Handler())
	defer srv.Close()
	get := func(path string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body)
		}
		return string(body)
	}
	stamp := until.UTC().Format(time.DateTime) + " UTC"
	due := src.NextDueAt.UTC().Format(time.DateTime) + " UTC"
	if body := get("/status"); !strings.Contains(body, stamp) || !strings.Contains(body, "w1 holds off") {
		t.Errorf("the status page does not say the source waits for w1 until %s:\n%s", stamp, body)
	}
	body := get("/status/sources/docs")
	for _, want := range []string{stamp, "worker w1 could not serve it and holds off until then: directory /srv/docs not found",
		"may take it from its next due time, " + due} {
		if !strings.Contains(body, want) {
			t.Errorf("the source's page lacks %q:\n%s", want, body)
		}
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(get("/api/sources")), &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("api list %+v %v", list, err)
	}
	var one map[string]any
	if err := json.Unmarshal([]byte(get("/api/sources/docs")), &one); err != nil {
		t.Fatal(err)
	}
	want := until.UTC().Format(time.RFC3339)
	for what, m := range map[string]map[string]any{"list": list.Items[0], "source": one} {
		if m["next_try_at"] != want || !strings.Contains(m["next_try_reason"].(string), "worker w1") {
			t.Errorf("api %s: next_try_at %v (%v), want %s by w1's hold", what, m["next_try_at"], m["next_try_reason"], want)
		}
		if m["next_due_at"] != src.NextDueAt.UTC().Format(time.RFC3339) {
			t.Errorf("api %s: next_due_at %v, want the schedule's %v", what, m["next_due_at"], src.NextDueAt)
		}
	}
}
