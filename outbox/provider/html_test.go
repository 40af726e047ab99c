package provider_test

import (
	"testing"

	"github.com/tidemark/tidemark/outbox/provider"
)

func TestTextHTML(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"Title <b>", "<p><strong>Title &lt;b&gt;</strong></p>"},
		{"Release 1.2 & more\n\nFixed a bug.\nSee https://example.org/p?a=1&b=2.\n\nhttps://wiki.example/page/1",
			`<p><strong>Release 1.2 &amp; more</strong></p><p>Fixed a bug.<br>See <a href="https://example.org/p?a=1&amp;b=2">https://example.org/p?a=1&amp;b=2</a>.</p>` +
				`<p><a href="https://wiki.example/page/1">https://wiki.example/page/1</a></p>`},
		{"a\r\n\r\n<script>x</script>", "<p><strong>a</strong></p><p>&lt;script&gt;x&lt;/script&gt;</p>"},
	} {
		if got := provider.TextHTML(tc.in); got != tc.want {
			t.Errorf("TextHTML(%q)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}
