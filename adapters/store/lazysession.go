package store

import (
	"context"
	"path/filepath"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/journal"
)

// A command that records nothing (a refusal, a status with nothing to
// show, a failure before its first decision) must leave no session: no
// journal file, no ledger row, and so no signed or anchored head.
// PrepareSession makes such a journal: it is created, with its first
// entries, by the first Append (or StartRecording), and a Close before
// that leaves nothing behind.

// deferredSession is what creating a prepared session needs.
type deferredSession struct {
	dir   string
	opts  []Option
	first []journal.Record
}

// PrepareSession returns the journal of a session that is created under
// dir and registered in ledger only when something is first recorded in
// it; first are the entries that open it then (the session's own
// "opened" record). s.ID and s.StartedAt are filled as by OpenSession.
func PrepareSession(ledger workflow.SessionStore, dir string, s workflow.Session, clock workflow.Clock, first []journal.Record, opts ...Option) (*FileJournal, error) {
	if s.StartedAt.IsZero() {
		s.StartedAt = clock.Now()
	}
	if s.ID == "" {
		s.ID = NewSessionID(s.StartedAt)
	}
	if err := checkSessionID(s.ID); err != nil {
		return nil, err
	}
	return &FileJournal{ledger: ledger, clock: clock, session: s, path: filepath.Join(dir, s.ID, JournalFile),
		secrets: applyOptions(opts).secrets, deferred: &deferredSession{dir: dir, opts: opts, first: first}}, nil
}

// Recorded reports whether the session exists: it was opened by
// OpenSession, or something was recorded in a prepared one.
func (j *FileJournal) Recorded() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.deferred == nil
}

// Create creates a prepared session now, with its first entries; it does
// nothing for a session that exists.
func (j *FileJournal) Create(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.createDeferred(ctx)
}

// createDeferred creates a prepared session, j.mu held.
func (j *FileJournal) createDeferred(ctx context.Context) error {
	d := j.deferred
	if d == nil || j.closed {
		return nil
	}
	opened, err := OpenSession(ctx, j.ledger, d.dir, j.session, j.clock, d.opts...)
	if err != nil {
		return err
	}
	j.f, j.path, j.deferred = opened.f, opened.path, nil
	for _, rec := range d.first {
		if _, err := j.appendLocked(ctx, rec); err != nil {
			return err
		}
	}
	return nil
}
