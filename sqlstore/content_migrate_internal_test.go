package sqlstore

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// fieldSpan finds a field's value in a stored object wherever it lies and
// however it is written, and refuses what is not one JSON object.
func TestFieldSpan(t *testing.T) {
	var dec jsontext.Decoder
	for _, tc := range []struct {
		fields, want string // want: the value, "" when absent
	}{
		{`{"v":"12","title":"a"}`, `"12"`},
		{`{"title":"a","v":"12"}`, `"12"`},
		{`{"a":{"v":"no"},"v":[1,{"v":2}],"z":null}`, `[1,{"v":2}]`},
		{` { "v" : "1 2" , "w" : true } `, `"1 2"`},
		{`{"\u0076":"escaped name"}`, `"escaped name"`},
		{`{"v":null}`, `null`},
		{`{"title":"a"}`, ``},
		{`{}`, ``},
	} {
		v, start, end, err := fieldSpan(&dec, []byte(tc.fields), "v")
		if err != nil || string(v) != tc.want || (v != nil && tc.fields[start:end] != tc.want) {
			t.Errorf("fieldSpan(%s) = %q [%d:%d] %v, want %q", tc.fields, v, start, end, err, tc.want)
		}
	}
	for _, bad := range []string{``, `[]`, `"v"`, `{"v":1`, `{"v":1}x`, `{"v":1}{}`, `{"v":1,"v":2}`, `{"v":tru}`, `{"a":1,}`} {
		if v, _, _, err := fieldSpan(&dec, []byte(bad), "v"); err == nil {
			t.Errorf("fieldSpan(%s) = %q, want an error", bad, v)
		}
	}
}
