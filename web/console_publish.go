package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/publish"
)

// PublishOps are publication's operations the console and the API offer
// (*pipeline.Pipeline has them): the ones behind `tidemark publish`,
// `publish sweep`, `publish summaries`, `publish reject` and `publish
// unreject`.
type PublishOps interface {
	// Publish summarizes what is new with the summarizer called
	// summarizer ("": the configured one) and publishes what is pending,
	// at most limit of each: one bounded round. A summarizer that cannot
	// be reached ends it with tidemark.ErrUnavailable; what was published
	// before is kept and counted in the round.
	Publish(ctx context.Context, summarizer string, limit int) (publish.Round, error)
	// Sweep converges every page to its current published summary;
	// pages that failed to converge are counted in the report and make it
	// an error too.
	Sweep(ctx context.Context) (publish.SweepReport, error)
	Summaries(ctx context.Context, f publish.SummaryFilter) (publish.SummaryList, error)
	// RejectSummary rejects a summary with a reason: it is never
	// published, and the next publishing round withdraws its page.
	RejectSummary(ctx context.Context, summaryID, reason string) (publish.Summary, error)
	// UnrejectSummary lifts a summary's rejection with a reason, keeping
	// it on record: a summary of its event's current evidence is current
	// again, and the next publishing round publishes its page.
	UnrejectSummary(ctx context.Context, summaryID, reason string) (publish.Summary, error)
}

// publishRoundLimit bounds one press of Publish now (or one POST
// /api/publish): the events summarized and the pages published, each. The
// daemon's next round, or another press, continues.
const publishRoundLimit = 1000

// publishRoutes serves publishing's console and API (behind a token):
//
//	GET  /console/publish                          pages, summaries by state, the latest summaries (?limit=&cursor=)
//	POST /console/publish                          Publish now: one bounded round
//	POST /console/publish/sweep                    Sweep now
//	POST /console/publish/summaries/{id}/reject    reject a summary (reason required)
//	POST /console/publish/summaries/{id}/unreject  lift a summary's rejection (reason required)
//	POST /api/publish                              one bounded round: publish.Round
//	POST /api/publish/sweep                        publish.SweepReport
//	GET  /api/summaries                            Page[summary] (?event=&limit=&cursor=)
//	POST /api/summaries/{id}/reject                {"reason": …}: the summary
//	POST /api/summaries/{id}/unreject              {"reason": …}: the summary, its rejection lifted
func (s *Server) publishRoutes() []route {
	if s.PublishOps == nil {
		return nil
	}
	r := privateRoute
	get, post := http.MethodGet, http.MethodPost
	return []route{
		r(get, "/console/publish", "", s.publishPage),
		r(post, "/console/publish", "publish round", s.formPublish),
		r(post, "/console/publish/sweep", "publish sweep", s.formSweep),
		r(post, "/console/publish/summaries/{id}/reject", "publish summary reject", s.formReject),
		r(post, "/console/publish/summaries/{id}/unreject", "publish summary unreject", s.formUnreject),
		r(post, "/api/publish", "publish round", s.apiPublish),
		r(post, "/api/publish/sweep", "publish sweep", s.apiSweep),
		r(get, "/api/summaries", "", s.apiSummaries),
		r(post, "/api/summaries/{id}/reject", "publish summary reject", s.apiReject),
		r(post, "/api/summaries/{id}/unreject", "publish summary unreject", s.apiUnreject),
	}
}

// summariesPage reads one page of summaries for ?event=, ?limit= and
// ?cursor=.
func (s *Server) summariesPage(r *http.Request) (Page[publish.Summary], error) {
	limit, cur, err := pageParams(r, "summaries")
	if err != nil {
		return Page[publish.Summary]{}, err
	}
	f := publish.SummaryFilter{EventID: r.URL.Query().Get("event"), Limit: limit + 1}
	if cur.Key != "" {
		f.BeforeCreatedAt, f.BeforeID = time.UnixMilli(cur.At), cur.Key
	}
	sums, err := s.PublishOps.Summaries(r.Context(), f)
	if err != nil {
		return Page[publish.Summary]{}, err
	}
	return paginate([]publish.Summary(sums), limit, func(last publish.Summary) pageCursor {
		return pageCursor{List: "summaries", At: last.CreatedAt.UnixMilli(), Key: last.ID}
	}), nil
}

func (s *Server) apiSummaries(w http.ResponseWriter, r *http.Request) {
	p, err := s.summariesPage(r)
	s.answer(w, r, http.StatusOK, p, err)
}

func (s *Server) apiPublish(w http.ResponseWriter, r *http.Request) {
	if err := noFields(r); err != nil {
		s.fail(w, r, err)
		return
	}
	round, err := s.PublishOps.Publish(r.Context(), "", publishRoundLimit)
	s.answer(w, r, http.StatusOK, servedRound(round), err)
}

// servedRound is round as the API tells it: its index where this server
// serves it (the wiki is served from the site's root), not where the
// server's store keeps it, which names a path of the server's machine.
func servedRound(round publish.Round) publish.Round {
	if round.Index != "" {
		round.Index = "/" + publish.IndexKey
	}
	return round
}

// apiSweep answers the sweep's report. Pages that failed to converge are
// in it (failed, errors), so they answer 200 too: the sweep ran, and the
// report says what it could not do.
func (s *Server) apiSweep(w http.ResponseWriter, r *http.Request) {
	if err := noFields(r); err != nil {
		s.fail(w, r, err)
		return
	}
	rep, err := s.PublishOps.Sweep(r.Context())
	if err != nil && sweepFailures(rep, err) {
		err = nil
	}
	s.answer(w, r, http.StatusOK, rep, err)
}

// sweepFailures reports whether err only says that some of rep's pages
// failed to converge (Pipeline.Sweep's error beside a complete report).
func sweepFailures(rep publish.SweepReport, err error) bool {
	return rep.Failed > 0 && errors.Is(err, tidemark.ErrUnconfirmed)
}

func (s *Server) apiReject(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Reason string `json:"reason"`
	}
	if err := decodeJSON(r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	sum, err := s.PublishOps.RejectSummary(r.Context(), r.PathValue("id"), b.Reason)
	s.answer(w, r, http.StatusOK, sum, err)
}

func (s *Server) apiUnreject(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Reason string `json:"reason"`
	}
	if err := decodeJSON(r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	sum, err := s.PublishOps.UnrejectSummary(r.Context(), r.PathValue("id"), b.Reason)
	s.answer(w, r, http.StatusOK, sum, err)
}

const publishPath = "/console/publish"

// formPublish runs one bounded round and says how many pages it published
// and whether more is pending.
func (s *Server) formPublish(w http.ResponseWriter, r *http.Request) {
	round, err := s.PublishOps.Publish(r.Context(), "", publishRoundLimit)
	t := round.Totals()
	did := fmt.Sprintf("%s accepted, %s published", nounCount(t.Accepted, "summary", "summaries"), nounCount(t.Published, "page", "pages"))
	did += t.RestyledNote() + t.ElsewhereNote()
	if err != nil && errors.Is(err, tidemark.ErrUnavailable) {
		// An outage, not a fault: what the round did is kept, and the
		// rest waits for the next one.
		first, _, _ := strings.Cut(tidemark.Text(err), "\n")
		s.redirectNotice(w, r, publishPath, notice{Error: true, Text: fmt.Sprintf(
			"This round stopped: something it needs did not answer (%s). What it did is kept: %s. The rest waits for the daemon's next round, or press Publish now again once it answers.", first, did)}, err)
		return
	}
	if t.SummariesFailed+t.PagesFailed > 0 {
		did += fmt.Sprintf(", %s and %s failed", nounCount(t.SummariesFailed, "summary", "summaries"), nounCount(t.PagesFailed, "page", "pages"))
		if len(t.Errors) > 0 {
			did += " (first: " + t.Errors[0] + ")"
		}
	}
	if err != nil {
		s.redirect(w, r, publishPath, "", err)
		return
	}
	msg := "Published: " + did + "."
	if undone := t.Undone(); len(undone) > 0 {
		// Held events, events another worker is summarizing (whose
		// claims, until when): what this round could not do.
		msg += " Left undone: " + strings.Join(undone, "; ") + "."
	}
	if round.More {
		msg += " More is pending: the daemon's next round or another press continues."
	} else {
		msg += " Nothing more is pending."
	}
	s.redirect(w, r, publishPath, msg, nil)
}

// nounCount is n with its noun: "1 page", "2 pages".
func nounCount(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func sweepText(rep publish.SweepReport) string {
	text := fmt.Sprintf("%s: %d republished, %d withdrawn, %d orphan objects collected, %d awaiting a new summary, %d overtaken, %d failed; listings: %d written, %d unchanged",
		nounCount(rep.Pages, "page", "pages"), rep.Republished, rep.Withdrawn, rep.Orphans, rep.Awaiting, rep.Superseded, rep.Failed, rep.Listings.Written, rep.Listings.Unchanged)
	if rep.Missing > 0 {
		text += fmt.Sprintf("; %d missing from the object store, listed nowhere until a sweep republishes them", rep.Missing)
	}
	return text
}

func (s *Server) formSweep(w http.ResponseWriter, r *http.Request) {
	rep, err := s.PublishOps.Sweep(r.Context())
	if err != nil && sweepFailures(rep, err) {
		text := "Swept " + sweepText(rep) + "."
		if len(rep.Errors) > 0 {
			text += " First failure: " + rep.Errors[0]
		}
		s.redirectNotice(w, r, publishPath, notice{Error: true, Text: text}, err)
		return
	}
	s.redirect(w, r, publishPath, "Swept "+sweepText(rep)+".", err)
}

func (s *Server) formReject(w http.ResponseWriter, r *http.Request) {
	sum, err := s.PublishOps.RejectSummary(r.Context(), r.PathValue("id"), r.PostFormValue("reason"))
	s.redirect(w, r, summariesBack(r), fmt.Sprintf("Rejected summary %s of event %s: %s. It is never published; the next publishing round withdraws its page.",
		sum.ID, sum.EventID, sum.RejectedReason), err)
}

// formUnreject lifts a summary's rejection, as publish unreject does.
func (s *Server) formUnreject(w http.ResponseWriter, r *http.Request) {
	sum, err := s.PublishOps.UnrejectSummary(r.Context(), r.PathValue("id"), r.PostFormValue("reason"))
	line := publish.UnrejectedLine(sum)
	s.redirect(w, r, summariesBack(r), strings.ToUpper(line[:1])+line[1:]+".", err)
}

// summariesBack is the page of summaries a form posted from was on: its
// event and cursor.
func summariesBack(r *http.Request) string {
	q := url.Values{}
	for _, k := range []string{"event", "cursor"} {
		if v := r.PostFormValue(k); v != "" {
			q.Set(k, v)
		}
	}
	if len(q) > 0 {
		return publishPath + "?" + q.Encode()
	}
	return publishPath
}

func (s *Server) publishPage(w http.ResponseWriter, r *http.Request) {
	p, err := s.summariesPage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	data := map[string]any{"Summaries": p.Items, "States": publish.SummaryStates, "Notice": s.takeNotice(w, r),
		"Cursor": r.URL.Query().Get("cursor"), "Event": r.URL.Query().Get("event"), "Limit": publishRoundLimit}
	if p.Next != "" {
		q := url.Values{"cursor": {p.Next}}
		for _, k := range []string{"event", "limit"} {
			if v := r.URL.Query().Get(k); v != "" {
				q.Set(k, v)
			}
		}
		data["Older"] = publishPath + "?" + q.Encode()
	}
	if s.Publish != nil {
		st, err := s.Publish.PublishStats(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		data["Stats"] = st
	}
	s.render(w, r, "publish.html", data)
}
