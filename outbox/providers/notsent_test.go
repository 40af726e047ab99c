package providers_test

import (
	"context"
	"errors"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

var loopback = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// Every provider tells a write that never left from one in doubt. With
// nothing listening where it writes (the dial is refused) no byte of the
// write was sent: it is not sent (*provider.NotSentError), so it did not
// land and is sent again later, whatever the lane's guarantee. With a
// receiver that takes the write and then drops the connection without an
// answer, the write stays in doubt (*provider.UnknownError), never said
// not sent: sending it again could make it twice.
func TestEveryProviderTellsAWriteThatNeverLeft(t *testing.T) {
	kinds := fakes()
	for _, name := range setupNames(t) {
		k := kinds[name]
		kind := k.providerKind(name)
		t.Run(name, func(t *testing.T) {
			env := sqltest.NewEnv(13)
			settings, received, dropper := k.settings(t, env)
			post := func(t *testing.T, settings map[string]string, body string) error {
				t.Helper()
				prov, err := providers.New(outbox.Lane{LaneConfig: outbox.LaneConfig{Name: "lane", Provider: kind, Settings: settings}}, env.Clock)
				if err != nil {
					t.Fatal(err)
				}
				_, err = prov.Post(context.Background(), provider.Write{Target: k.targetFor(settings), Body: []byte(body), IdempotencyKey: "tm-" + strings.Repeat("ab", 16)})
				return err
			}

			t.Run("nothing listens", func(t *testing.T) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				dead := ln.Addr().String()
				if err := ln.Close(); err != nil {
					t.Fatal(err)
				}
				down := map[string]string{}
				moved := false
				for k, v := range settings {
					down[k] = loopback.ReplaceAllString(v, dead)
					moved = moved || down[k] != v
				}
				if !moved {
					t.Skip("the receiver is not on this host")
				}
				err = post(t, down, "nobody hears this")
				if _, ok := errors.AsType[*provider.NotSentError](err); !ok {
					t.Fatalf("a write whose connection was refused: %v; want it not sent", err)
				}
				if _, ok := errors.AsType[*provider.UnknownError](err); ok {
					t.Fatalf("a write whose connection was refused is in doubt: %v", err)
				}
			})

			t.Run("the answer is lost", func(t *testing.T) {
				before := len(received())
				dropper.DropEvery(1)
				defer dropper.DropEvery(0)
				err := post(t, settings, "taken, then the line went dead")
				if _, ok := errors.AsType[*provider.UnknownError](err); !ok {
					t.Fatalf("a write whose answer was lost: %v; want it in doubt", err)
				}
				if _, ok := errors.AsType[*provider.NotSentError](err); ok {
					t.Fatalf("a write the receiver took is said not sent: %v", err)
				}
				if got := len(received()) - before; got != 1 || dropper.Dropped() != 1 {
					t.Fatalf("the receiver took %d writes and dropped %d answers; want 1 and 1", got, dropper.Dropped())
				}
			})
		})
	}
}
