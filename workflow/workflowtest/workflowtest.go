// Package workflowtest holds fakes of every workflow port, for tests only.
// Fakes record their calls; side-effecting fakes count the effects they
// really made, so resume tests can prove nothing happened twice.
package workflowtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/tfplan"
)

// Ledger is an in-memory workflow.Ledger. It stores copies (JSON
// round-trips), as a real store would, so callers cannot alias its state.
type Ledger struct {
	mu           sync.Mutex
	releases     map[string][]byte
	plans        map[string]tfplan.Summary
	approvals    []approval.Approval
	effort       []effort.Entry
	convergences []workflow.ConvergenceRecord
	sightings    map[string]workflow.Sighting
	findings     map[string][]finding.Finding
	sessions     map[string]workflow.Session
	heads        map[string]journal.Head
	copies       map[string][]journal.Line // the ledger's copy of each journal
	legacy       map[string]bool           // sessions whose journal the ledger does not keep
	seals        map[string]audit.SessionSeal
	// Identity is the ledger's identity; empty until first asked, when
	// the fake names itself.
	Identity string
	// Gate, when set, runs before every write; a non-nil error refuses the
	// write, as a dead process writes nothing.
	Gate func() error
	// AfterSave, when set, runs after every successful SaveRelease with the
	// count of saves so far.
	AfterSave func(n int)
	saves     int

	rehearsals     map[string][]byte
	rehearsalSaves int
	// AfterRehearsalSave, when set, runs after every SaveRehearsal with
	// the count so far and what was saved; its error is returned as if
	// the process had died right after the save.
	AfterRehearsalSave func(n int, r *rehearsal.Rehearsal) error
}

func (l *Ledger) gate() error {
	if l.Gate != nil {
		return l.Gate()
	}
	return nil
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{
		releases: map[string][]byte{}, plans: map[string]tfplan.Summary{},
		sightings: map[string]workflow.Sighting{}, findings: map[string][]finding.Finding{},
		sessions: map[string]workflow.Session{}, heads: map[string]journal.Head{},
		copies: map[string][]journal.Line{}, legacy: map[string]bool{},
		seals: map[string]audit.SessionSeal{},
	}
}

var (
	_ workflow.Ledger = (*Ledger)(nil)
	_ audit.Ledger    = (*Ledger)(nil)
)

// Saves is how many times SaveRelease succeeded.
func (l *Ledger) Saves() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.saves
}

// SaveRelease stores a copy.
func (l *Ledger) SaveRelease(_ context.Context, r *workflow.Release) error {
	if err := l.gate(); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.releases[r.ID] = b
	l.saves++
	n, hook := l.saves, l.AfterSave
	l.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return nil
}

// LoadRelease returns a copy.
func (l *Ledger) LoadRelease(_ context.Context, id string) (*workflow.Release, error) {
	l.mu.Lock()
	b, ok := l.releases[id]
	l.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("release %s: %w", id, fault.ErrNotFound)
	}
	var r workflow.Release
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ListReleases returns the releases matching f, newest first, as the
// SQLite ledger does.
func (l *Ledger) ListReleases(ctx context.Context, f workflow.ReleaseFilter) ([]*workflow.Release, error) {
	l.mu.Lock()
	ids := make([]string, 0, len(l.releases))
	for id := range l.releases {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	var out []*workflow.Release
	for _, id := range ids {
		r, err := l.LoadRelease(ctx, id)
		if err != nil {
			return nil, err
		}
		if (f.App == "" || r.App == f.App) && (f.Env == "" || r.Env == f.Env) &&
			(f.From.IsZero() || !r.CreatedAt.Before(f.From)) && (f.To.IsZero() || r.CreatedAt.Before(f.To)) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *workflow.Release) int { return b.CreatedAt.Compare(a.CreatedAt) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// RecordConvergence stores c.
func (l *Ledger) RecordConvergence(_ context.Context, c workflow.ConvergenceRecord) error {
	if err := l.gate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.convergences = append(l.convergences, c)
	return nil
}

// HasConverged looks for a convergence of d in env.
func (l *Ledger) HasConverged(_ context.Context, app, env string, d image.Digest) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.convergences {
		if c.App == app && c.Env == env && c.Digest == d {
			return true, nil
		}
	}
	return false, nil
}

// SavePlan stores p.
func (l *Ledger) SavePlan(_ context.Context, p tfplan.Summary) error {
	if err := l.gate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.plans[p.Fingerprint]; ok && p.AppliedAt.IsZero() {
		p.AppliedAt = old.AppliedAt
	}
	l.plans[p.Fingerprint] = p
	return nil
}

// LoadPlan returns the plan with fingerprint fp.
func (l *Ledger) LoadPlan(_ context.Context, fp string) (tfplan.Summary, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.plans[fp]
	if !ok {
		return p, fmt.Errorf("plan %s: %w", fp, fault.ErrNotFound)
	}
	return p, nil
}

// MarkPlanApplied records the first time the plan was applied.
func (l *Ledger) MarkPlanApplied(_ context.Context, fp string, at time.Time) error {
	if err := l.gate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.plans[fp]
	if !ok {
		return fmt.Errorf("plan %s: %w", fp, fault.ErrNotFound)
	}
	if p.AppliedAt.IsZero() {
		p.AppliedAt = at
		l.plans[fp] = p
	}
	return nil
}

// RecordApproval stores a.
func (l *Ledger) RecordApproval(_ context.Context, a approval.Approval) error {
	if err := l.gate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.approvals = append(l.approvals, a)
	return nil
}

// Approvals returns approvals of kind and subject.
func (l *Ledger) Approvals(_ context.Context, kind approval.Kind, subject string) ([]approval.Approval, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []approval.Approval
	for _, a := range l.approvals {
		if a.Kind == kind && a.Subject == subject {
			out = append(out, a)
		}
	}
	return out, nil
}

// RecordEffort stores entries.
func (l *Ledger) RecordEffort(_ context.Context, entries []effort.Entry) error {
	if err := l.gate(); err != nil {
		return err
	}
	for _, e := range entries {
		if err := e.Validate(); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.effort = append(l.effort, entries...)
	return nil
}

// Effort returns a release's entries.
func (l *Ledger) Effort(_ context.Context, releaseID string) ([]effort.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []effort.Entry
	for _, e := range l.effort {
		if e.ReleaseID == releaseID {
			out = append(out, e)
		}
	}
	return out, nil
}

// RecordSighting keeps the first sighting of each reference.
func (l *Ledger) RecordSighting(_ context.Context, ref string, d image.Digest, at time.Time) (workflow.Sighting, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.sightings[ref]; ok {
		return s, nil
	}
	s := workflow.Sighting{Reference: ref, Digest: d, At: at}
	l.sightings[ref] = s
	return s, nil
}

// RecordFindings replaces the open findings of scope.
func (l *Ledger) RecordFindings(_ context.Context, scope string, _ time.Time, fs []finding.Finding) error {
	if err := l.gate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.findings[scope] = append([]finding.Finding(nil), fs...)
	return nil
}

// Findings returns the open findings of scope.
func (l *Ledger) Findings(scope string) []finding.Finding {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.findings[scope]
}

// Close does nothing.
func (l *Ledger) Close() error { return nil }

var _ report.Source = (*Ledger)(nil)

// ReportData selects releases created in the query's period with their
// effort, as the SQLite ledger does; plans, convergences, sightings and
// findings are not kept in this fake's report data.
func (l *Ledger) ReportData(ctx context.Context, q report.Query) (report.Data, error) {
	rs, err := l.ListReleases(ctx, workflow.ReleaseFilter{App: q.App, Env: q.Env, From: q.From, To: q.To})
	if err != nil {
		return report.Data{}, err
	}
	var data report.Data
	for _, r := range rs {
		data.Releases = append(data.Releases, report.FactOf(r))
		entries, err := l.Effort(ctx, r.ID)
		if err != nil {
			return data, err
		}
		for _, e := range entries {
			if q.Person == "" || e.Person == q.Person {
				data.Effort = append(data.Effort, e)
			}
		}
	}
	rehearsals, err := l.ListRehearsals(ctx, rehearsal.Filter{App: q.App, Env: q.Env})
	if err != nil {
		return data, err
	}
	for _, r := range rehearsals {
		if q.To.IsZero() || r.StartedAt.Before(q.To) {
			data.Rehearsals = append(data.Rehearsals, *r)
		}
	}
	return data, nil
}
