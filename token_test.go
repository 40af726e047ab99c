package tidemark_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/fieldtext"
)

func TestTokensText(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	var b strings.Builder
	err := tidemark.Tokens{{ID: "T1", Name: "alice", CreatedAt: at, RevokedAt: &at}, {ID: "T2", Name: "bob", CreatedAt: at, LastUsedAt: &at}}.WriteText(&b)
	if err != nil {
		t.Fatal(err)
	}
	day := fieldtext.Day(at)
	pad := strings.Repeat(" ", len(day)-len("CREATED AT"))
	want := "NAME   CREATED AT" + pad + "  LAST USED AT" + pad[2:] + "  REVOKED AT\n" +
		"alice  " + day + "  -" + strings.Repeat(" ", len(day)-1) + "  " + day + "\n" +
		"bob    " + day + "  " + day + "  -\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
