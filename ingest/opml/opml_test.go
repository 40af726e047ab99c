package opml

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
)

func TestParseWriteRoundTrip(t *testing.T) {
	feeds, err := Parse(strings.NewReader(`<?xml version="1.0"?>
<opml version="1.0"><head><title>subs</title></head><body>
<outline text="Tech &amp; More"><outline type="rss" text="Go Blog" xmlUrl=" https://go.dev/blog/feed.atom "/>
<outline type="rss" title="Caf&eacute; Notes" text="x" xmlUrl="https://example.org/c.xml"/></outline>
<outline text="folder without a feed"/></body></opml>`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Feed{{Name: "go-blog", Location: "https://go.dev/blog/feed.atom"}, {Name: "caf-notes", Location: "https://example.org/c.xml"}}
	if len(feeds) != 2 || feeds[0] != want[0] || feeds[1] != want[1] {
		t.Fatalf("parsed %+v", feeds)
	}
	var b bytes.Buffer
	if err := Write(&b, "tidemark feeds", time.Unix(0, 0), feeds); err != nil {
		t.Fatal(err)
	}
	again, err := Parse(&b)
	if err != nil || len(again) != 2 || again[0] != want[0] || again[1] != want[1] {
		t.Fatalf("round trip: %v %+v", err, again)
	}
}

func TestParseRefusesWhatIsNotOPMLOrTooDeep(t *testing.T) {
	deep := strings.Repeat("<outline>", MaxDepth+2) + strings.Repeat("</outline>", MaxDepth+2)
	for name, doc := range map[string]string{
		"not xml":  "feeds: a, b",
		"too deep": "<opml><body>" + deep + "</body></opml>",
	} {
		if _, err := Parse(strings.NewReader(doc)); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`<opml version="2.0"><body><outline text="a" xmlUrl="https://e.org/f"/></body></opml>`))
	f.Add([]byte(`<opml><body><outline><outline><outline xmlUrl="x"/></outline></outline></body></opml>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		feeds, err := Parse(bytes.NewReader(b))
		if err == nil && len(feeds) > MaxOutlines {
			t.Fatalf("%d feeds", len(feeds))
		}
	})
}
