package ingest

import (
	"context"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/groupcommit"
)

// maxGroup bounds the settlements one transaction carries.
const maxGroup = 256

// group settles runs that finish together in one transaction (group
// commit, see groupcommit.Group).
type group struct {
	g groupcommit.Group[settleReq, SettleReport]
}

type settleReq struct {
	c  tidemark.Claim
	st Settlement
}

func (g *group) settle(ctx context.Context, bs BatchSettler, c tidemark.Claim, st Settlement) (SettleReport, error) {
	return g.g.Do(ctx, settleReq{c, st}, maxGroup, func(ctx context.Context, reqs []settleReq) ([]SettleReport, []error) {
		cs, sts := make([]tidemark.Claim, len(reqs)), make([]Settlement, len(reqs))
		for i, r := range reqs {
			cs[i], sts[i] = r.c, r.st
		}
		return bs.SettleMany(ctx, cs, sts)
	})
}
