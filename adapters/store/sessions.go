package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// OpenSession registers a new session. Registering an ID twice is an error,
// because two journals would then claim one head.
func (s *Ledger) OpenSession(ctx context.Context, sess workflow.Session) error {
	if sess.ID == "" {
		return fmt.Errorf("%w: session has no ID", fault.ErrUsage)
	}
	ts, err := timeValues(sess.StartedAt, sess.EndedAt)
	if err != nil {
		return fmt.Errorf("open session %s: %w", sess.ID, err)
	}
	return s.inTx(ctx, "open session "+sess.ID, func(tx ledgerTx) error {
		if err := tx.serialize(ctx, "session/"+sess.ID); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?)`, sess.ID).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return fmt.Errorf("session %s is already registered", sess.ID)
		}
		// Opened by a relcap that keeps every entry in the ledger: from
		// now on the session's journal is verifiable without its file.
		_, err := tx.ExecContext(ctx, `
INSERT INTO sessions (id, actor, command, release_id, started_at, ended_at, journal_copy) VALUES (?, ?, ?, ?, ?, ?, TRUE)`,
			sess.ID, sess.Actor, sess.Command, sess.ReleaseID, ts[0], ts[1])
		return err
	})
}

// CloseSession records when session id ended. An unknown id is an error
// wrapping fault.ErrNotFound.
func (s *Ledger) CloseSession(ctx context.Context, id string, at time.Time) error {
	v, err := timeValue(at)
	if err != nil {
		return fmt.Errorf("close session %s: %w", id, err)
	}
	return s.inTx(ctx, "close session "+id, func(tx ledgerTx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET ended_at = ? WHERE id = ?`, v, id)
		if err != nil {
			return err
		}
		return mustAffect(res, "session "+id)
	})
}

// LinkSession records the release a session works on, when the session
// was opened before its release existed. A session that links several
// releases (the demo's) keeps the first in the ledger; its journal names
// them all.
func (s *Ledger) LinkSession(ctx context.Context, id, releaseID string) error {
	return s.inTx(ctx, "link session "+id, func(tx ledgerTx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET release_id = ? WHERE id = ? AND release_id = ''`, releaseID, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?)`, id).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("session %s: %w", id, fault.ErrNotFound)
		}
		return nil
	})
}

// AppendJournal keeps lines of session sessionID's journal, as the file
// holds them, and moves its head to the last, in one transaction (see
// workflow.SessionStore). Each line is read back as an entry and must be
// sealed (its hash is its content's) and continue the copy: sequence head
// + 1, linked to the head's hash. A line the ledger already holds is
// skipped when identical, so a journal that retries lines whose commit it
// could not confirm is harmless; any other line at or below the head is
// refused.
func (s *Ledger) AppendJournal(ctx context.Context, sessionID string, lines []journal.Line) error {
	entries := make([]journal.Entry, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal(l.Text, &entries[i]); err != nil {
			return fmt.Errorf("%w: line %d of session %s's journal is not a journal entry: %w", fault.ErrUsage, l.Number, sessionID, err)
		}
		if e := entries[i]; e.ComputeHash() != e.Hash {
			return fmt.Errorf("%w: entry %d of session %s's journal does not match its hash: it was changed after it was sealed", fault.ErrUsage, e.Seq, sessionID)
		}
	}
	return s.inTx(ctx, "append to the journal of session "+sessionID, func(tx ledgerTx) error {
		// Read, compared, then moved: two writers of one head must not
		// both read the old one.
		if err := tx.serialize(ctx, "session/"+sessionID); err != nil {
			return err
		}
		var (
			seq  int64
			hash string
		)
		err := tx.QueryRowContext(ctx, `SELECT head_seq, head_hash FROM sessions WHERE id = ?`, sessionID).Scan(&seq, &hash)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("session %s: %w", sessionID, fault.ErrNotFound)
		}
		if err != nil {
			return err
		}
		moved := false
		for i, e := range entries {
			if e.Seq <= seq {
				if err := sameAsHeld(ctx, tx, sessionID, seq, hash, e, lines[i].Text); err != nil {
					return err
				}
				continue
			}
			prev := hash
			if seq == 0 {
				prev = journal.GenesisHash
			}
			switch {
			case e.Seq != seq+1:
				return fmt.Errorf("journal head of session %s is entry %d; refusing entry %d, which would leave a gap", sessionID, seq, e.Seq)
			case e.Prev != prev:
				return fmt.Errorf("journal head of session %s is entry %d; refusing entry %d, which is not linked to it", sessionID, seq, e.Seq)
			}
			// Not scrubbed: the line was masked before it was sealed, and
			// masking it again could change it after its hash.
			if _, err := tx.Tx.ExecContext(ctx, tx.d.rebind(`INSERT INTO journal_entries (session_id, seq, hash, line) VALUES (?, ?, ?, ?)`),
				sessionID, e.Seq, e.Hash, string(lines[i].Text)); err != nil {
				return err
			}
			seq, hash, moved = e.Seq, e.Hash, true
		}
		if !moved {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET head_seq = ?, head_hash = ? WHERE id = ?`, seq, hash, sessionID)
		return err
	})
}

// sameAsHeld accepts entry e, at or below the head (seq, hash), only if
// the ledger already holds exactly its line; a session from before the
// ledger kept entries holds only its head.
func sameAsHeld(ctx context.Context, tx ledgerTx, sessionID string, seq int64, hash string, e journal.Entry, line []byte) error {
	var held string
	err := tx.QueryRowContext(ctx, `SELECT line FROM journal_entries WHERE session_id = ? AND seq = ?`, sessionID, e.Seq).Scan(&held)
	switch {
	case err == nil && held == string(line):
		return nil
	case errors.Is(err, sql.ErrNoRows) && e.Seq == seq && e.Hash == hash:
		return nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return err
	}
	return fmt.Errorf("journal head of session %s is entry %d; refusing another entry %d", sessionID, seq, e.Seq)
}

// JournalCopy returns the ledger's copy of session id's journal with the
// head, read in one statement so they are of one state, or an error
// wrapping fault.ErrNotFound.
func (s *Ledger) JournalCopy(ctx context.Context, id string) (audit.JournalCopy, error) {
	rows, err := s.db.QueryContext(ctx, `
SELECT s.journal_copy, s.head_seq, s.head_hash, e.seq, e.line
FROM sessions s LEFT JOIN journal_entries e ON e.session_id = s.id
WHERE s.id = ? ORDER BY e.seq`, id)
	if err != nil {
		return audit.JournalCopy{}, s.fail("read the journal of session "+id, err)
	}
	defer rows.Close()
	c := audit.JournalCopy{Head: journal.Head{SessionID: id}}
	found := false
	for rows.Next() {
		var (
			seq  sql.NullInt64
			line sql.NullString
		)
		if err := rows.Scan(&c.Kept, &c.Head.Seq, &c.Head.Hash, &seq, &line); err != nil {
			return audit.JournalCopy{}, s.fail("read the journal of session "+id, err)
		}
		found = true
		if seq.Valid {
			c.Lines = append(c.Lines, journal.Line{Number: int(seq.Int64), Text: []byte(line.String)})
		}
	}
	if err := rows.Err(); err != nil {
		return audit.JournalCopy{}, s.fail("read the journal of session "+id, err)
	}
	if !found {
		return audit.JournalCopy{}, fmt.Errorf("session %s: %w", id, fault.ErrNotFound)
	}
	// A session opened before schema 8 whose journal file relcap ledger
	// migrate copied in has its entries kept too.
	c.Kept = c.Kept || len(c.Lines) > 0
	return c, nil
}

// JournalHead returns the last journal entry the ledger confirmed for
// sessionID (Seq 0 before the first), or an error wrapping
// fault.ErrNotFound.
func (s *Ledger) JournalHead(ctx context.Context, sessionID string) (journal.Head, error) {
	h := journal.Head{SessionID: sessionID}
	err := s.db.QueryRowContext(ctx, `SELECT head_seq, head_hash FROM sessions WHERE id = ?`, sessionID).Scan(&h.Seq, &h.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return journal.Head{}, fmt.Errorf("session %s: %w", sessionID, fault.ErrNotFound)
	}
	if err != nil {
		return journal.Head{}, s.fail("read journal head of session "+sessionID, err)
	}
	return h, nil
}

// Sessions returns every session, oldest first; Entries is the journal
// head's sequence number.
func (s *Ledger) Sessions(ctx context.Context) ([]workflow.Session, error) {
	rows, err := s.db.QueryContext(ctx, `
SELECT id, actor, command, release_id, started_at, ended_at, head_seq FROM sessions
ORDER BY started_at, id`)
	if err != nil {
		return nil, s.fail("list sessions", err)
	}
	defer rows.Close()
	var out []workflow.Session
	for rows.Next() {
		var (
			sess           workflow.Session
			started, ended sql.NullInt64
		)
		if err := rows.Scan(&sess.ID, &sess.Actor, &sess.Command, &sess.ReleaseID, &started, &ended, &sess.Entries); err != nil {
			return nil, s.fail("list sessions", err)
		}
		sess.StartedAt, sess.EndedAt = timeOf(started), timeOf(ended)
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list sessions", err)
	}
	return out, nil
}

// Ledger is what journal verification reads and seals, beside
// workflow.Ledger.
var _ audit.Ledger = (*Ledger)(nil)

// SessionSeal returns session id's head as the ledger holds it, with its
// seal (Sealed() false for a session never sealed), or an error wrapping
// fault.ErrNotFound.
func (s *SQLite) SessionSeal(ctx context.Context, id string) (audit.SessionSeal, error) {
	var (
		seal   audit.SessionSeal
		sealed sql.NullInt64
	)
	h := &seal.Head
	err := s.db.QueryRowContext(ctx, `
SELECT actor, command, release_id, head_seq, head_hash, sealed_at,
	head_signature, head_signing_key, head_unsigned, head_anchor, head_unanchored,
	CASE WHEN sealed_at IS NULL THEN (SELECT id FROM ledger_identity) ELSE head_ledger END
FROM sessions WHERE id = ?`, id).Scan(&h.Actor, &h.Command, &h.Release, &h.Seq, &h.Hash, &sealed,
		&seal.Signature.Armored, &seal.Signature.Key, &seal.Unsigned, &seal.Anchor, &seal.Unanchored, &h.Ledger)
	if errors.Is(err, sql.ErrNoRows) {
		return audit.SessionSeal{}, fmt.Errorf("session %s: %w", id, fault.ErrNotFound)
	}
	if err != nil {
		return audit.SessionSeal{}, s.fail("read the seal of session "+id, err)
	}
	h.Session, h.At = id, timeOf(sealed)
	return seal, nil
}

// LedgerIdentity is the ledger's own random name (schema 11), which the
// head of a session sealed here names.
func (s *SQLite) LedgerIdentity(ctx context.Context) (string, error) {
	var id string
	if err := s.db.QueryRowContext(ctx, `SELECT id FROM ledger_identity`).Scan(&id); err != nil {
		return "", s.fail("read the ledger's identity", err)
	}
	return id, nil
}

// SealSession records the seal of a session's head, once. It refuses a
// session already sealed and a seal of another head than the one the
// ledger holds (the head moved, or the seal names another actor, command
// or release), since either would let a seal vouch for what it never saw.
func (s *SQLite) SealSession(ctx context.Context, seal audit.SessionSeal) error {
	h := seal.Head
	if h.At.IsZero() {
		return fmt.Errorf("%w: seal of session %s has no time", fault.ErrUsage, h.Session)
	}
	at, err := timeValue(h.At)
	if err != nil {
		return fmt.Errorf("seal session %s: %w", h.Session, err)
	}
	return s.inTx(ctx, "seal session "+h.Session, func(tx ledgerTx) error {
		var (
			cur    audit.SessionHead
			sealed sql.NullInt64
		)
		err := tx.QueryRowContext(ctx, `SELECT actor, command, release_id, head_seq, head_hash, sealed_at, (SELECT id FROM ledger_identity) FROM sessions WHERE id = ?`, h.Session).
			Scan(&cur.Actor, &cur.Command, &cur.Release, &cur.Seq, &cur.Hash, &sealed, &cur.Ledger)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("session %s: %w", h.Session, fault.ErrNotFound)
		}
		if err != nil {
			return err
		}
		cur.Session, cur.At = h.Session, h.At
		switch {
		case sealed.Valid:
			return fmt.Errorf("session %s was sealed at %s; a seal is never replaced", h.Session, timeOf(sealed).Format(time.RFC3339))
		case cur != h:
			return fmt.Errorf("seal of session %s is of entry %d by %s (%s) in ledger %q, but the ledger holds entry %d by %s (%s) in ledger %q: seal the head the ledger holds",
				h.Session, h.Seq, h.Actor, h.Command, h.Ledger, cur.Seq, cur.Actor, cur.Command, cur.Ledger)
		}
		_, err = tx.ExecContext(ctx, `
UPDATE sessions SET sealed_at = ?, head_signature = ?, head_signing_key = ?, head_unsigned = ?, head_anchor = ?, head_unanchored = ?, head_ledger = ?
WHERE id = ?`, at, seal.Signature.Armored, seal.Signature.Key, seal.Unsigned, seal.Anchor, seal.Unanchored, h.Ledger, h.Session)
		return err
	})
}
