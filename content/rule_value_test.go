package content_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidemark/tidemark/content"
)

// A refused value is named as its JSON reads to people: a "<" stays a "<"
// (not Go's HTML-safe \u003c), and a long value is cut between characters.
func TestRefusedValueReadsAsWritten(t *testing.T) {
	rule, _ := content.RuleFor(content.Text, content.Number)
	for _, tc := range []struct {
		in   string
		want string
	}{
		{`"seven\u003cscript\u003e"`, `"seven<script>"`},
		{`"a \u0026 b"`, `"a & b"`},
		{`"é` + strings.Repeat("é", 100) + `"`, ""},
	} {
		_, err := rule.Apply(json.RawMessage(tc.in))
		var re *content.RuleError
		if !errors.As(err, &re) {
			t.Fatalf("apply %s: %v, want a RuleError", tc.in, err)
		}
		if !utf8.ValidString(re.Value) {
			t.Errorf("apply %s: value %q cuts a character in two", tc.in, re.Value)
		}
		if tc.want != "" && re.Value != tc.want {
			t.Errorf("apply %s: value %s, want %s", tc.in, re.Value, tc.want)
		}
		if strings.Contains(err.Error(), `\u00`) {
			t.Errorf("apply %s: error %q shows a JSON escape", tc.in, err)
		}
	}
}
