package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A write's audit entry is started before the write and finished once;
// sign-in and sign-out write theirs with the session; the log pages
// newest first by (time, ID), entries of one millisecond included.
func TestAuditLog(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(8)
		db := sqltest.MustOpen(t, b, env)
		auth := db.Auth()
		secret, tok, err := auth.CreateToken(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := auth.StartAudit(ctx, tidemark.Token{}, "poke", "/x"); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("an entry without a token: %v, want ErrInvalid", err)
		}
		e, err := auth.StartAudit(ctx, tok, "poke", "/x")
		if err != nil {
			t.Fatal(err)
		}
		if e.Outcome != tidemark.AuditStarted || e.Actor != "alice" || e.TokenID != tok.ID {
			t.Fatalf("started entry %+v", e)
		}
		if err := auth.FinishAudit(ctx, e.ID, tidemark.AuditStarted, ""); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("finishing as started: %v, want ErrInvalid", err)
		}
		if err := auth.FinishAudit(ctx, e.ID, "conflict", "already poked"); err != nil {
			t.Fatal(err)
		}
		if err := auth.FinishAudit(ctx, e.ID, tidemark.AuditOK, ""); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("finishing twice: %v, want ErrConflict", err)
		}
		if err := auth.FinishAudit(ctx, "nope", tidemark.AuditOK, ""); !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("finishing an unknown entry: %v, want ErrConflict", err)
		}
		// Five entries in one millisecond, then a sign-in and a sign-out.
		for range 5 {
			if _, err := auth.StartAudit(ctx, tok, "tick", ""); err != nil {
				t.Fatal(err)
			}
		}
		env.Clock.Advance(time.Second)
		sess, _, err := auth.CreateSession(ctx, secret, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		env.Clock.Advance(time.Second)
		if err := auth.EndSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		if err := auth.EndSession(ctx, sess); err != nil { // gone: nobody to record
			t.Fatal(err)
		}
		all, err := auth.AuditLog(ctx, tidemark.AuditFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, e := range all {
			actions = append(actions, e.Action+" "+e.Outcome)
		}
		want := []string{"signout ok", "signin ok", "tick started", "tick started", "tick started", "tick started", "tick started", "poke conflict"}
		if !slices.Equal(actions, want) {
			t.Fatalf("log %q, want %q", actions, want)
		}
		// Paging two at a time yields the same entries in the same order.
		var paged []string
		f := tidemark.AuditFilter{Limit: 2}
		for {
			page, err := auth.AuditLog(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				paged = append(paged, e.ID)
			}
			if len(page) < 2 {
				break
			}
			f.BeforeAt, f.BeforeID = page[len(page)-1].At, page[len(page)-1].ID
		}
		var ids []string
		for _, e := range all {
			ids = append(ids, e.ID)
		}
		if !slices.Equal(paged, ids) {
			t.Fatalf("paged %q, want %q", paged, ids)
		}
		if byBob, err := auth.AuditLog(ctx, tidemark.AuditFilter{Actor: "bob"}); err != nil || len(byBob) != 0 {
			t.Fatalf("bob's entries: %v %v", byBob, err)
		}
	})
}
