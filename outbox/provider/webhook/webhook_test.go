package webhook_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/provider/webhook"
	"github.com/tidemark/tidemark/outbox/providertest"
)

func TestWebhookSignsAndSendsTheIntentsKey(t *testing.T) {
	ctx := context.Background()
	srv := providertest.New(t, clock.System{}, []byte("right"))
	s := srv.Settings()
	good, err := webhook.New(webhook.Config{URL: s["url"], Secret: []byte("right"), ListURL: s["list_url"]})
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := webhook.New(webhook.Config{URL: s["url"], Secret: []byte("wrong")})
	var rej *provider.RejectedError
	if _, err := bad.Post(ctx, provider.Write{Target: "t", Body: []byte("x"), IdempotencyKey: "k1"}); !errors.As(err, &rej) || rej.Status != 401 {
		t.Fatalf("a wrongly signed write: %v", err)
	}
	srv.HonourIdempotencyKeys(true)
	a, err := good.Post(ctx, provider.Write{Target: "t", Body: []byte("x"), IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := good.Post(ctx, provider.Write{Target: "t", Body: []byte("x"), IdempotencyKey: "k1"})
	if err != nil || b.RemoteID != a.RemoteID || srv.Count() != 1 {
		t.Fatalf("the key was not sent: %v %v, %d writes", a, b, srv.Count())
	}
	if _, err := good.Count(ctx); !errors.Is(err, provider.ErrUnsupported) {
		t.Fatalf("count without count_url: %v", err)
	}
	pg, err := good.ListOwn(ctx, provider.ListQuery{})
	if err != nil || len(pg.Writes) != 1 || pg.Writes[0].BodySHA256 != provider.BodySHA256([]byte("x")) || pg.Meta.Age != "0" {
		t.Fatalf("list %+v %v", pg, err)
	}
}
