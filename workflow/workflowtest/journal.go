package workflowtest

import (
	"context"
	"slices"
	"sync"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/journal"
)

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
func (j *Journal) Append(_ context.Context, rec journal.Record) (journal.Entry, error) {
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
