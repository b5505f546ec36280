package workflowtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// The fake Ledger's sessions: their journal copies, heads and seals.

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
			return fmt.Errorf("%w: line %d is not a journal entry: %w", fault.ErrUsage, line.Number, err)
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
func (l *Ledger) JournalCopy(_ context.Context, id string) (audit.JournalCopy, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.sessions[id]; !ok {
		return audit.JournalCopy{}, fmt.Errorf("session %s: %w", id, fault.ErrNotFound)
	}
	h := l.heads[id]
	h.SessionID = id
	return audit.JournalCopy{Kept: !l.legacy[id], Lines: slices.Clone(l.copies[id]), Head: h}, nil
}

// JournalHead returns the head of a session.
func (l *Ledger) JournalHead(_ context.Context, id string) (journal.Head, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.heads[id]
	if !ok {
		return h, fmt.Errorf("session %s: %w", id, fault.ErrNotFound)
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
func (l *Ledger) SessionSeal(_ context.Context, id string) (audit.SessionSeal, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sessions[id]
	if !ok {
		return audit.SessionSeal{}, fmt.Errorf("session %s: %w", id, fault.ErrNotFound)
	}
	// As in the SQLite ledger, the head is the session's row as it is
	// now, beside the seal recorded for it.
	seal, sealed := l.seals[id]
	h := l.heads[id]
	ledger := seal.Head.Ledger
	if !sealed {
		ledger = l.identity()
	}
	seal.Head = audit.SessionHead{
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
func (l *Ledger) SealSession(_ context.Context, seal audit.SessionSeal) error {
	if err := l.gate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	id := seal.Head.Session
	if _, ok := l.sessions[id]; !ok {
		return fmt.Errorf("session %s: %w", id, fault.ErrNotFound)
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
func (l *Ledger) ForgeSeal(seal audit.SessionSeal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := seal.Head.Session
	l.seals[id] = seal
	l.heads[id] = journal.Head{SessionID: id, Seq: seal.Head.Seq, Hash: seal.Head.Hash}
}
