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
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/report"
)

// Clock is a fake clock that moves only when told. Channels from After
// receive when Advance moves the clock past their deadline; WaitForTimers
// lets a test wait until the code under test is waiting on the clock.
type Clock struct {
	mu      sync.Mutex
	t       time.Time
	timers  []timer
	changed chan struct{} // closed and replaced whenever timers change
}

type timer struct {
	at time.Time
	ch chan time.Time
}

// NewClock starts at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t, changed: make(chan struct{})} }

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// After returns a channel that receives once the clock has been advanced
// by d.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.t
		return ch
	}
	c.timers = append(c.timers, timer{at: c.t.Add(d), ch: ch})
	c.notify()
	return ch
}

// Advance moves the clock forward and fires the timers it passes.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(c.t) {
			kept = append(kept, tm)
			continue
		}
		tm.ch <- c.t
	}
	c.timers = kept
	c.notify()
}

// Timers is how many After channels are waiting.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitForTimers blocks until at least n After channels are waiting, or ctx
// ends (false).
func (c *Clock) WaitForTimers(ctx context.Context, n int) bool {
	for {
		c.mu.Lock()
		ok, changed := len(c.timers) >= n, c.changed
		c.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// notify wakes WaitForTimers; c.mu is held.
func (c *Clock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Ledger is an in-memory workflow.Ledger. It stores copies (JSON
// round-trips), as a real store would, so callers cannot alias its state.
type Ledger struct {
	mu           sync.Mutex
	releases     map[string][]byte
	plans        map[string]workflow.PlanSummary
	approvals    []workflow.Approval
	effort       []effort.Entry
	convergences []workflow.ConvergenceRecord
	sightings    map[string]workflow.Sighting
	findings     map[string][]finding.Finding
	sessions     map[string]workflow.Session
	heads        map[string]journal.Head
	copies       map[string][]journal.Line // the ledger's copy of each journal
	legacy       map[string]bool           // sessions whose journal the ledger does not keep
	seals        map[string]workflow.SessionSeal
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
		releases: map[string][]byte{}, plans: map[string]workflow.PlanSummary{},
		sightings: map[string]workflow.Sighting{}, findings: map[string][]finding.Finding{},
		sessions: map[string]workflow.Session{}, heads: map[string]journal.Head{},
		copies: map[string][]journal.Line{}, legacy: map[string]bool{},
		seals: map[string]workflow.SessionSeal{},
	}
}

var _ workflow.Ledger = (*Ledger)(nil)

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
		return nil, fmt.Errorf("release %s: %w", id, workflow.ErrNotFound)
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
func (l *Ledger) HasConverged(_ context.Context, app, env string, d workflow.Digest) (bool, error) {
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
func (l *Ledger) SavePlan(_ context.Context, p workflow.PlanSummary) error {
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
func (l *Ledger) LoadPlan(_ context.Context, fp string) (workflow.PlanSummary, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.plans[fp]
	if !ok {
		return p, fmt.Errorf("plan %s: %w", fp, workflow.ErrNotFound)
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
		return fmt.Errorf("plan %s: %w", fp, workflow.ErrNotFound)
	}
	if p.AppliedAt.IsZero() {
		p.AppliedAt = at
		l.plans[fp] = p
	}
	return nil
}

// RecordApproval stores a.
func (l *Ledger) RecordApproval(_ context.Context, a workflow.Approval) error {
	if err := l.gate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.approvals = append(l.approvals, a)
	return nil
}

// Approvals returns approvals of kind and subject.
func (l *Ledger) Approvals(_ context.Context, kind workflow.ApprovalKind, subject string) ([]workflow.Approval, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []workflow.Approval
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
func (l *Ledger) RecordSighting(_ context.Context, ref string, d workflow.Digest, at time.Time) (workflow.Sighting, error) {
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

// OpenSession stores s.
func (l *Ledger) OpenSession(_ context.Context, s workflow.Session) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sessions[s.ID] = s
	return nil
}

// CloseSession sets the session's end.
func (l *Ledger) CloseSession(_ context.Context, id string, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sessions[id]
	s.EndedAt = at
	l.sessions[id] = s
	return nil
}

// LinkSession sets the session's release.
func (l *Ledger) LinkSession(_ context.Context, id, releaseID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sessions[id]
	if !ok {
		// The fake journal's session is never opened in the ledger.
		s = workflow.Session{ID: id}
	}
	s.ReleaseID = releaseID
	l.sessions[id] = s
	return nil
}

// AppendJournal keeps lines in the session's copy and moves its head to
// the last, only forward and only linked, as the real ledger does.
func (l *Ledger) AppendJournal(_ context.Context, id string, lines []journal.Line) error {
	if err := l.gate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.heads[id]
	h.SessionID = id
	copied := slices.Clone(l.copies[id])
	for _, line := range lines {
		var e journal.Entry
		if err := json.Unmarshal(line.Text, &e); err != nil {
			return fmt.Errorf("%w: line %d is not a journal entry: %w", workflow.ErrUsage, line.Number, err)
		}
		if e.Seq <= h.Seq {
			if int(e.Seq) <= len(copied) && string(copied[e.Seq-1].Text) == string(line.Text) {
				continue
			}
			return fmt.Errorf("journal head of session %s is entry %d; refusing another entry %d", id, h.Seq, e.Seq)
		}
		prev := h.Hash
		if h.Seq == 0 {
			prev = journal.GenesisHash
		}
		if e.Seq != h.Seq+1 || e.Prev != prev || e.ComputeHash() != e.Hash {
			return fmt.Errorf("journal head of session %s is entry %d; refusing entry %d", id, h.Seq, e.Seq)
		}
		copied = append(copied, journal.Line{Number: int(e.Seq), Text: slices.Clone(line.Text)})
		h.Seq, h.Hash = e.Seq, e.Hash
	}
	l.copies[id], l.heads[id] = copied, h
	return nil
}

// SetJournalHead sets the head of a session whose journal the ledger does
// not keep, as one opened before the ledger kept journal entries: it is
// verified from its file alone. Not a port method.
func (l *Ledger) SetJournalHead(_ context.Context, h journal.Head) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heads[h.SessionID] = h
	l.legacy[h.SessionID] = true
	delete(l.copies, h.SessionID)
	return nil
}

// EditJournalCopy replaces the text of entry seq in the ledger's copy of
// session id's journal, as someone with the database could. Not a port
// method.
func (l *Ledger) EditJournalCopy(id string, seq int64, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, line := range l.copies[id] {
		if int64(line.Number) == seq {
			l.copies[id][i].Text = []byte(text)
		}
	}
}

// JournalCopy returns the ledger's copy of a session's journal.
func (l *Ledger) JournalCopy(_ context.Context, id string) (workflow.JournalCopy, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.sessions[id]; !ok {
		return workflow.JournalCopy{}, fmt.Errorf("session %s: %w", id, workflow.ErrNotFound)
	}
	h := l.heads[id]
	h.SessionID = id
	return workflow.JournalCopy{Kept: !l.legacy[id], Lines: slices.Clone(l.copies[id]), Head: h}, nil
}

// JournalHead returns the head of a session.
func (l *Ledger) JournalHead(_ context.Context, id string) (journal.Head, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.heads[id]
	if !ok {
		return h, fmt.Errorf("session %s: %w", id, workflow.ErrNotFound)
	}
	return h, nil
}

// Sessions lists sessions.
func (l *Ledger) Sessions(context.Context) ([]workflow.Session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []workflow.Session
	for _, s := range l.sessions {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b workflow.Session) int { return a.StartedAt.Compare(b.StartedAt) })
	return out, nil
}

// SessionSeal returns the session's head and its seal.
func (l *Ledger) SessionSeal(_ context.Context, id string) (workflow.SessionSeal, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sessions[id]
	if !ok {
		return workflow.SessionSeal{}, fmt.Errorf("session %s: %w", id, workflow.ErrNotFound)
	}
	// As in the SQLite ledger, the head is the session's row as it is
	// now, beside the seal recorded for it.
	seal, sealed := l.seals[id]
	h := l.heads[id]
	ledger := seal.Head.Ledger
	if !sealed {
		ledger = l.identity()
	}
	seal.Head = workflow.SessionHead{
		Session: id, Actor: s.Actor, Command: s.Command, Release: s.ReleaseID, Ledger: ledger, Seq: h.Seq, Hash: h.Hash, At: seal.Head.At,
	}
	return seal, nil
}

// LedgerIdentity is the fake ledger's own name (Identity, else one of its
// own, chosen once).
func (l *Ledger) LedgerIdentity(context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.identity(), nil
}

// identity is LedgerIdentity with l.mu held.
func (l *Ledger) identity() string {
	if l.Identity == "" {
		l.Identity = fmt.Sprintf("fake-ledger-%p", l)
	}
	return l.Identity
}

// SealSession records a seal once.
func (l *Ledger) SealSession(_ context.Context, seal workflow.SessionSeal) error {
	if err := l.gate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	id := seal.Head.Session
	if _, ok := l.sessions[id]; !ok {
		return fmt.Errorf("session %s: %w", id, workflow.ErrNotFound)
	}
	if _, ok := l.seals[id]; ok {
		return fmt.Errorf("session %s is already sealed", id)
	}
	if h := l.heads[id]; h.Seq != seal.Head.Seq || h.Hash != seal.Head.Hash {
		return fmt.Errorf("session %s: seal of entry %d, but the head is entry %d", id, seal.Head.Seq, h.Seq)
	}
	if seal.Head.Ledger != l.identity() {
		return fmt.Errorf("session %s: seal names ledger %q, but this is %q", id, seal.Head.Ledger, l.identity())
	}
	l.seals[id] = seal
	return nil
}

// DeleteSession removes a session's row, as someone editing the ledger
// file would.
func (l *Ledger) DeleteSession(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.sessions, id)
	delete(l.heads, id)
	delete(l.seals, id)
}

// ForgeSeal overwrites a session's seal and head, as someone editing the
// ledger file would.
func (l *Ledger) ForgeSeal(seal workflow.SessionSeal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := seal.Head.Session
	l.seals[id] = seal
	l.heads[id] = journal.Head{SessionID: id, Seq: seal.Head.Seq, Hash: seal.Head.Hash}
}

// Close does nothing.
func (l *Ledger) Close() error { return nil }

// Journal is an in-memory hash-chained journal.
type Journal struct {
	// Gate, when set, runs before every append; a non-nil error refuses it.
	Gate    func() error
	mu      sync.Mutex
	clock   workflow.Clock
	actor   string
	entries []journal.Entry
}

// NewJournal returns an empty journal writing as actor.
func NewJournal(clock workflow.Clock, actor string) *Journal {
	return &Journal{clock: clock, actor: actor}
}

var _ workflow.Journal = (*Journal)(nil)

// Append seals and keeps an entry.
func (j *Journal) Append(_ context.Context, rec workflow.JournalRecord) (journal.Entry, error) {
	if j.Gate != nil {
		if err := j.Gate(); err != nil {
			return journal.Entry{}, err
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var prev *journal.Entry
	if n := len(j.entries); n > 0 {
		prev = &j.entries[n-1]
	}
	e, err := journal.Next(prev, j.clock.Now(), j.actor, rec.JournalKind(), rec)
	if err != nil {
		return e, err
	}
	j.entries = append(j.entries, e)
	return e, nil
}

// SessionID is fixed.
func (j *Journal) SessionID() string { return "test-session" }

// Kinds lists the kinds appended so far.
func (j *Journal) Kinds() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for _, e := range j.entries {
		out = append(out, string(e.Kind))
	}
	return out
}

// Entries returns a copy of the entries.
func (j *Journal) Entries() []journal.Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.entries)
}

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
