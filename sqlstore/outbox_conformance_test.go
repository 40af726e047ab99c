package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/outboxtest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func TestOutboxConformance(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		outboxtest.Run(t, func(t *testing.T) outboxtest.Harness {
			env := sqltest.NewEnv(1)
			st := sqltest.MustOpen(t, b, env).Outbox()
			return outboxtest.Harness{
				Store: st,
				Clock: env.Clock,
				AddLane: func(t *testing.T, name string, minGap time.Duration) {
					t.Helper()
					if _, err := st.AddLane(context.Background(), sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: name, Provider: "webhook", MinGap: tidemark.Duration(minGap)}}); err != nil {
						t.Fatalf("add lane %s: %v", name, err)
					}
				},
				AddLaneOf: func(t *testing.T, name, kind string) {
					t.Helper()
					if _, err := st.AddLane(context.Background(), sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: name, Provider: kind}}); err != nil {
						t.Fatalf("add lane %s: %v", name, err)
					}
				},
				Intent: func(t *testing.T, id string) outbox.Intent {
					t.Helper()
					in, err := st.Intent(context.Background(), id)
					if err != nil {
						t.Fatalf("intent %s: %v", id, err)
					}
					return in
				},
				Retire: st.Retire,
				Revive: st.Revive,
			}
		})
	})
}
