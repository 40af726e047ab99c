package publish_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize"
)

func TestAcceptance(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		objs := mem.New()
		f := mustFixture(t, b, objs)
		ev := f.mustEvent(t, "c1", "first change", "evidence one")
		draft := summarize.Draft{Text: "Summary one.", Model: "m1", PromptVersion: "p1"}

		s1, created, err := f.st.Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Draft: draft})
		if err != nil || !created || !s1.Current {
			t.Fatalf("accept: %+v created=%v err=%v", s1, created, err)
		}

		t.Run("IdempotentReacceptance", func(t *testing.T) {
			again, created, err := f.st.Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Draft: draft})
			if err != nil || created || again.ID != s1.ID {
				t.Fatalf("re-accept: %+v created=%v err=%v, want %s unchanged", again, created, err, s1.ID)
			}
		})

		t.Run("IdentityConflict", func(t *testing.T) {
			other := draft
			other.Text = "Different text, same identity."
			_, _, err := f.st.Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Draft: other})
			if !errors.Is(err, publish.ErrIdentityConflict) || !errors.Is(err, tidemark.ErrConflict) {
				t.Fatalf("err = %v, want ErrIdentityConflict", err)
			}
			if got := f.mustSummary(t, s1.ID); got.Text != draft.Text || !got.Current {
				t.Fatalf("stored summary changed: %+v", got)
			}
		})

		t.Run("EvidenceMismatch", func(t *testing.T) {
			_, _, err := f.st.Accept(ctx, publish.NewSummary{EventID: ev.ID, EvidenceHash: tidemark.HashEvidence([]byte("other")),
				Draft: summarize.Draft{Text: "x", Model: "m2", PromptVersion: "p1"}})
			if !errors.Is(err, publish.ErrEvidenceMismatch) {
				t.Fatalf("err = %v, want ErrEvidenceMismatch", err)
			}
			if cur, _ := f.st.CurrentSummary(ctx, ev.ID); cur != s1.ID {
				t.Fatalf("pointer moved to %q", cur)
			}
		})

		t.Run("NewerRetiresPrevious", func(t *testing.T) {
			s2 := f.mustAccept(t, ev, "Summary two.", "m2")
			if old := f.mustSummary(t, s1.ID); old.Current || old.RetiredAt == nil {
				t.Fatalf("previous summary not retired: %+v", old)
			}
			if cur, _ := f.st.CurrentSummary(ctx, ev.ID); cur != s2.ID {
				t.Fatalf("pointer = %q, want %s", cur, s2.ID)
			}
			// The retired summary is refused before anything is written.
			_, err := f.svc.Publish(ctx, s1.ID)
			if !errors.Is(err, publish.ErrSuperseded) {
				t.Fatalf("publish retired: %v, want ErrSuperseded", err)
			}
			n := 0
			_ = objs.List(ctx, "", func(objstore.Info) error { n++; return nil })
			if n != 0 {
				t.Fatalf("a refused publication wrote %d objects", n)
			}

			t.Run("Rejection", func(t *testing.T) {
				if _, err := f.st.Reject(ctx, s2.ID, ""); !errors.Is(err, tidemark.ErrInvalid) {
					t.Fatalf("reject without reason: %v", err)
				}
				r, err := f.st.Reject(ctx, s2.ID, "hallucinated a file")
				if err != nil || !r.Rejected() || r.Current || r.RejectedReason != "hallucinated a file" {
					t.Fatalf("reject: %+v %v", r, err)
				}
				if _, err := f.svc.Publish(ctx, s2.ID); !errors.Is(err, publish.ErrRejected) {
					t.Fatalf("publish rejected: %v, want ErrRejected", err)
				}
				mustPublished(t, f.mustSummary(t, s2.ID), false)
				if cur, _ := f.st.CurrentSummary(ctx, ev.ID); cur != "" {
					t.Fatalf("pointer still at %q after rejection", cur)
				}
				n := 0
				_ = objs.List(ctx, "", func(objstore.Info) error { n++; return nil })
				if n != 0 {
					t.Fatalf("a rejected summary wrote %d objects", n)
				}
			})
		})

		t.Run("RefrozenEvidenceRefusesOldSummary", func(t *testing.T) {
			ev2 := f.mustEvent(t, "c2", "second change", "evidence v1")
			s := f.mustAccept(t, ev2, "Second, v1.", "m1")
			// Fresh evidence for the same item re-freezes the event.
			ing := f.db.Ingest()
			c, err := ing.Claim(ctx, f.src.ID, "test-holder", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ing.Settle(ctx, c, ingest.Settlement{Cursor: "c2v2", NextDueAt: f.env.Clock.Now(),
				Items: []tidemark.Item{{Key: "c2", Title: "second change", OccurredAt: f.env.Clock.Now(), Evidence: []byte("evidence v2")}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.svc.Publish(ctx, s.ID); !errors.Is(err, publish.ErrSuperseded) {
				t.Fatalf("publish over re-frozen evidence: %v, want ErrSuperseded", err)
			}
			_, _, err = f.st.Accept(ctx, publish.NewSummary{EventID: ev2.ID, EvidenceHash: ev2.EvidenceHash,
				Draft: summarize.Draft{Text: "late", Model: "m9", PromptVersion: "p1"}})
			if !errors.Is(err, publish.ErrEvidenceMismatch) {
				t.Fatalf("accept for old evidence: %v, want ErrEvidenceMismatch", err)
			}
		})
	})
}

func TestPublishAndHooks(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for name, newStore := range stores(t) {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				f := mustFixture(t, b, newStore(t))
				ev := f.mustEvent(t, "c1", "add <script>alert(1)</script> parser", "evidence")
				s := f.mustAccept(t, ev, "Adds a parser.\n\nSecond <b>paragraph</b>.", "m1")

				// A failing hook rolls the mark back.
				f.svc.Store = f.st.WithHooks(func(ctx context.Context, tx *sqlTx, p tidemark.Publication) error {
					return errors.New("outbox full")
				})
				if _, err := f.svc.Publish(ctx, s.ID); err == nil {
					t.Fatal("publish with a failing hook succeeded")
				}
				mustPublished(t, f.mustSummary(t, s.ID), false)

				var seen []tidemark.Publication
				f.svc.BaseURL = "https://wiki.example/"
				f.svc.Store = f.st.WithHooks(func(ctx context.Context, tx *sqlTx, p tidemark.Publication) error {
					// The hook sees the mark inside the transaction.
					var at *int64
					if err := tx.QueryRowContext(ctx, `SELECT published_at FROM summaries WHERE id = $1`, p.SummaryID).Scan(&at); err != nil || at == nil {
						t.Errorf("hook: published_at %v, %v", at, err)
					}
					seen = append(seen, p)
					return nil
				})
				res, err := f.svc.Publish(ctx, s.ID)
				if err != nil {
					t.Fatal(err)
				}
				if len(seen) != 1 || seen[0].SummaryID != s.ID || seen[0].Generation != res.Generation || seen[0].PageID != res.PageID ||
					seen[0].PageURL != "https://wiki.example/changes/"+res.PageID+".html" || seen[0].Summary != s.Text {
					t.Fatalf("hook saw %+v, result %+v", seen, res)
				}
				mustPublished(t, f.mustSummary(t, s.ID), true)
				o := f.mustPageShows(t, res.PageID, "Adds a parser.", "<script>")
				for _, want := range []string{"Second &lt;b&gt;paragraph&lt;/b&gt;.", `href="../sources/` + f.src.ID + `.html"`, `href="../index.html"`} {
					if !contains(o.Body, want) {
						t.Fatalf("page lacks %q:\n%s", want, o.Body)
					}
				}
				if _, err := f.objs.Head(ctx, publish.CardKey(f.src.ID)); err != nil {
					t.Fatalf("source card: %v", err)
				}
				// Publishing again is a new generation of the same page.
				res2, err := f.svc.Publish(ctx, s.ID)
				if err != nil || res2.PageID != res.PageID || res2.Generation <= res.Generation {
					t.Fatalf("republish: %+v %v (first %+v)", res2, err, res)
				}
				rep, err := f.svc.RefreshListings(ctx)
				// The card, the index and their Atom feeds.
				if err != nil || rep.Written != 4 {
					t.Fatalf("listings: %+v %v", rep, err)
				}
				idx, err := f.objs.Get(ctx, publish.IndexKey)
				if err != nil || !contains(idx.Body, `href="changes/`+res.PageID+`.html"`) {
					t.Fatalf("index: %v\n%s", err, idx.Body)
				}
				if rep, _ := f.svc.RefreshListings(ctx); rep.Written != 0 || rep.Unchanged != 4 {
					t.Fatalf("unchanged listings rewritten: %+v", rep)
				}
			})
		}
	})
}
