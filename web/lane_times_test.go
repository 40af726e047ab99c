package web_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

// A lane that never sent has no next send time: the API says null (as
// for every time that has not happened), the console "any time", and
// neither shows 1970.
func TestALaneThatNeverSentHasNoNextSend(t *testing.T) {
	ctx := context.Background()
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(5))
	if _, err := db.Outbox().AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "hooks", Provider: "webhook", Settings: map[string]string{"url": "http://127.0.0.1:1/"}}}); err != nil {
		t.Fatal(err)
	}
	token, _, err := db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	do := mustServe(t, db, nil)
	r := do("GET", "/api/outbox/lanes", token, nil)
	var page web.Page[map[string]any]
	if r.Code != 200 || json.Unmarshal([]byte(r.Body), &page) != nil || len(page.Items) != 1 {
		t.Fatalf("/api/outbox/lanes: %d %s", r.Code, r.Body)
	}
	if v, ok := page.Items[0]["next_send_at"]; !ok || v != nil {
		t.Errorf("next_send_at of a lane that never sent: %v (present %v), want null", v, ok)
	}
	r = do("GET", "/status/lanes/hooks", token, nil)
	if r.Code != 200 || !strings.Contains(r.Body, "any time (nothing sent yet)") || strings.Contains(r.Body, "1970") {
		t.Errorf("lane page: %d\n%s", r.Code, r.Body)
	}
}
