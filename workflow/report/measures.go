package report

import (
	"slices"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/ownership"
)

// Measures is `relcap report measures`: the five operating measures
// of DESIGN.md ("Effort timing") over a period.
//
// Attribution: a lead time or a recovery belongs to the period its end
// falls in (a plan applied, a digest converged, a finding resolved); the
// failed-release frequency counts releases created in the period, as the
// effort report does.
type Measures struct {
	GeneratedAt  time.Time `json:"generated_at"`
	From         time.Time `json:"from"`
	To           time.Time `json:"to"`
	TimeZone     string    `json:"time_zone"`
	Env          string    `json:"env,omitempty"`
	ProdEnv      string    `json:"prod_env"`
	AbandonAfter Duration  `json:"abandon_after_seconds"`
	// Empty is true when the period holds no release, plan, convergence or
	// finding; Message then says so.
	Empty   bool   `json:"empty"`
	Message string `json:"message,omitempty"`

	// PlanLeadTime: reviewed plan created → applied, for plans applied in
	// the period. PlansPending counts plans created in the period and not
	// applied by GeneratedAt.
	PlanLeadTime Stats `json:"plan_lead_time"`
	PlansPending int   `json:"plans_pending"`
	// DigestLeadTime: digest first seen (registry sightings) → first
	// converged in ProdEnv, for digests whose first convergence there is
	// in the period. DigestsUnseen counts such digests with no sighting.
	DigestLeadTime Stats `json:"digest_lead_time"`
	DigestsUnseen  int   `json:"digests_unseen"`
	// Failed-release frequency over releases created in the period.
	Releases FailureRate `json:"failed_releases"`
	// Recovery: failure detected → the next convergence of the same app in
	// the same environment. Unrecovered counts failures with none yet.
	Recovery    Stats `json:"recovery_time"`
	Unrecovered int   `json:"unrecovered"`
	// DriftAge: ownership and drift findings, first seen → resolved, for
	// findings resolved in the period; open ones are counted with the age
	// of the oldest at the end of the period.
	DriftAge       Stats          `json:"drift_age"`
	DriftOpen      int            `json:"drift_open"`
	DriftOldest    Duration       `json:"drift_oldest_open_seconds"`
	ConflictsWeeks []ConflictWeek `json:"ownership_conflicts"`
	// DORA is the five measures DORA defines today (dora.go).
	DORA DORA `json:"dora"`
	// Approvals given in the period, signed or not; Unsigned lists those
	// nobody signed (where an environment takes unsigned approvals), so an
	// auditor sees which decisions rest on a typed name alone.
	Approvals ApprovalCounts `json:"approvals"`
	// Rehearsals are the recovery drills per environment (relcap
	// rehearse).
	Rehearsals []RehearsalFigures `json:"rehearsals"`
}

// ApprovalCounts counts the period's approvals by whether they were signed.
type ApprovalCounts struct {
	Signed   int            `json:"signed"`
	Unsigned []ApprovalFact `json:"unsigned"`
}

// FailureRate is the failed-release frequency. Rate is Failures / Finished
// (0 when nothing finished): releases still in progress have no outcome
// yet and are left out of both.
type FailureRate struct {
	Total      int `json:"total"`
	Finished   int `json:"finished"`
	Failed     int `json:"failed"`
	RolledBack int `json:"rolled_back"`
	Stalled    int `json:"stalled"`
	// Abandoned were ended on purpose before they shipped: counted
	// here, left out of Finished and never a failure.
	Abandoned int     `json:"abandoned"`
	Failures  int     `json:"failures"`
	Rate      float64 `json:"rate"`
}

// ConflictWeek is one week (Monday to Monday in the report's time zone) of
// ownership conflicts: opened and resolved in the week, open at its end
// (or at the period's end, for the last week).
type ConflictWeek struct {
	Week      string    `json:"week"`
	Start     time.Time `json:"start"`
	Opened    int       `json:"opened"`
	Resolved  int       `json:"resolved"`
	OpenAtEnd int       `json:"open_at_end"`
}

// BuildMeasures computes the operating measures.
func BuildMeasures(data Data, o Options) (*Measures, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	loc := o.loc()
	prod := o.ProdEnv
	if o.Env != "" {
		prod = o.Env
	}
	rep := &Measures{GeneratedAt: o.Now, From: o.From, To: o.To, TimeZone: loc.String(), Env: o.Env, ProdEnv: prod,
		AbandonAfter: Duration(o.abandonAfter())}
	envOK := func(env string) bool { return o.Env == "" || env == o.Env }

	// Reviewed-change lead time, plans.
	var planLead []time.Duration
	for _, p := range data.Plans {
		if !envOK(p.Env) {
			continue
		}
		if !p.AppliedAt.IsZero() && in(p.AppliedAt, o.From, o.To) && !p.AppliedAt.Before(p.CreatedAt) {
			planLead = append(planLead, p.AppliedAt.Sub(p.CreatedAt))
		}
		if in(p.CreatedAt, o.From, o.To) && (p.AppliedAt.IsZero() || p.AppliedAt.After(o.Now)) {
			rep.PlansPending++
		}
	}
	rep.PlanLeadTime = NewStats(planLead)

	// Reviewed-change lead time, digests: the first convergence of each
	// digest in the production environment.
	firstSeen := make(map[image.Digest]time.Time, len(data.Sightings))
	for _, s := range data.Sightings {
		if t, ok := firstSeen[s.Digest]; !ok || s.At.Before(t) {
			firstSeen[s.Digest] = s.At
		}
	}
	firstProd := map[image.Digest]time.Time{}
	for _, c := range data.Convergences {
		if c.Env != prod {
			continue
		}
		if t, ok := firstProd[c.Digest]; !ok || c.At.Before(t) {
			firstProd[c.Digest] = c.At
		}
	}
	var digestLead []time.Duration
	for d, at := range firstProd {
		if !in(at, o.From, o.To) {
			continue
		}
		seen, ok := firstSeen[d]
		if !ok || seen.After(at) {
			rep.DigestsUnseen++
			continue
		}
		digestLead = append(digestLead, at.Sub(seen))
	}
	rep.DigestLeadTime = NewStats(digestLead)

	// Failed releases and recovery. Convergences by app and environment,
	// for "converged again in the same environment".
	type appEnv struct{ app, env string }
	conv := map[appEnv][]time.Time{}
	for _, c := range data.Convergences {
		k := appEnv{c.App, c.Env}
		conv[k] = append(conv[k], c.At)
	}
	// Sorted, so each failure finds its recovery by binary search: a
	// linear scan per failure is quadratic on a large ledger.
	for _, ts := range conv {
		slices.SortFunc(ts, time.Time.Compare)
	}
	var recovery []time.Duration
	seenIDs := map[string]bool{}
	for _, f := range data.Releases {
		if !Counted(f) || !envOK(f.Env) || !in(f.CreatedAt, o.From, o.To) || seenIDs[f.ID] {
			continue
		}
		seenIDs[f.ID] = true
		r := &rep.Releases
		r.Total++
		out := OutcomeOf(f, o.Now, o.abandonAfter())
		switch out {
		case OutcomeInProgress:
			continue
		case OutcomeAbandoned:
			r.Abandoned++
			continue
		case OutcomeFailed:
			r.Failed++
		case OutcomeRolledBack:
			r.RolledBack++
		case OutcomeStalled:
			r.Stalled++
		}
		r.Finished++
		if !out.Failure() {
			continue
		}
		r.Failures++
		detected := FailureDetectedAt(f)
		times := conv[appEnv{f.App, f.Env}]
		i, _ := slices.BinarySearchFunc(times, detected, time.Time.Compare)
		if i == len(times) {
			rep.Unrecovered++
			continue
		}
		recovery = append(recovery, times[i].Sub(detected))
	}
	if rep.Releases.Finished > 0 {
		rep.Releases.Rate = float64(rep.Releases.Failures) / float64(rep.Releases.Finished)
	}
	rep.Recovery = NewStats(recovery)

	// Drift age and ownership conflicts, from the findings history. The
	// end of the period is capped at Now: a finding cannot be older than
	// the report.
	end := o.To
	if !o.Now.IsZero() && o.Now.Before(end) {
		end = o.Now
	}
	var drift []time.Duration
	var findings []FindingFact
	for _, f := range data.Findings {
		if o.Env != "" && scopeEnv(f.Scope) != o.Env {
			continue
		}
		findings = append(findings, f)
		switch {
		case !f.ResolvedAt.IsZero() && in(f.ResolvedAt, o.From, o.To):
			drift = append(drift, f.ResolvedAt.Sub(f.FirstSeen))
		case f.FirstSeen.Before(end) && (f.ResolvedAt.IsZero() || !f.ResolvedAt.Before(end)):
			rep.DriftOpen++
			rep.DriftOldest = max(rep.DriftOldest, Duration(end.Sub(f.FirstSeen)))
		}
	}
	rep.DriftAge = NewStats(drift)
	for _, w := range weeksOf(o.From, o.To, loc) {
		ws, we := maxTime(w.start, o.From), minTime(w.end, o.To)
		cw := ConflictWeek{Week: w.key, Start: w.start}
		for _, f := range findings {
			if f.Code != ownership.CodeConflict {
				continue
			}
			if in(f.FirstSeen, ws, we) {
				cw.Opened++
			}
			if !f.ResolvedAt.IsZero() && in(f.ResolvedAt, ws, we) {
				cw.Resolved++
			}
			if f.FirstSeen.Before(we) && (f.ResolvedAt.IsZero() || !f.ResolvedAt.Before(we)) {
				cw.OpenAtEnd++
			}
		}
		rep.ConflictsWeeks = append(rep.ConflictsWeeks, cw)
	}

	// Approvals, by whether a person's key vouches for them.
	rep.Approvals.Unsigned = []ApprovalFact{}
	for _, a := range data.Approvals {
		switch {
		case !envOK(a.Env) || !in(a.At, o.From, o.To):
		case a.Key == "":
			rep.Approvals.Unsigned = append(rep.Approvals.Unsigned, a)
		default:
			rep.Approvals.Signed++
		}
	}

	rep.DORA = buildDORA(data, o, prod)
	rep.Rehearsals = rehearsalFigures(data.Rehearsals, o)

	if len(rep.Rehearsals) == 0 && rep.Releases.Total == 0 && rep.PlanLeadTime.Count == 0 && rep.PlansPending == 0 && rep.DigestLeadTime.Count == 0 &&
		rep.DigestsUnseen == 0 && rep.DriftAge.Count == 0 && rep.DriftOpen == 0 {
		rep.Empty = true
		rep.Message = strings.Replace(emptyMessage(o, loc), "no releases", "no releases, plans, convergences or findings", 1)
	}
	return rep, nil
}

// scopeEnv is the environment of a findings scope such as
// "ownership/staging"; a scope without one has none.
func scopeEnv(scope string) string {
	_, env, _ := strings.Cut(scope, "/")
	return env
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
