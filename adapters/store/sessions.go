package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/journal"
)

// OpenSession registers a new session. Registering an ID twice is an error,
// because two journals would then claim one head.
func (s *Ledger) OpenSession(ctx context.Context, sess workflow.Session) error {
	if sess.ID == "" {
		return fmt.Errorf("%w: session has no ID", workflow.ErrUsage)
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
		_, err := tx.ExecContext(ctx, `
INSERT INTO sessions (id, actor, command, release_id, started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?)`,
			sess.ID, sess.Actor, sess.Command, sess.ReleaseID, ts[0], ts[1])
		return err
	})
}

// CloseSession records when session id ended. An unknown id is an error
// wrapping workflow.ErrNotFound.
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
			return fmt.Errorf("session %s: %w", id, workflow.ErrNotFound)
		}
		return nil
	})
}

// SetJournalHead moves the session's journal head forward. It refuses to
// move it back, or to change the hash of the current head, because either
// would let a rewritten journal verify.
func (s *Ledger) SetJournalHead(ctx context.Context, h journal.Head) error {
	return s.inTx(ctx, "set journal head of session "+h.SessionID, func(tx ledgerTx) error {
		// Read, compared, then moved: two writers of one head must not
		// both read the old one.
		if err := tx.serialize(ctx, "session/"+h.SessionID); err != nil {
			return err
		}
		var (
			seq  int64
			hash string
		)
		err := tx.QueryRowContext(ctx, `SELECT head_seq, head_hash FROM sessions WHERE id = ?`, h.SessionID).Scan(&seq, &hash)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("session %s: %w", h.SessionID, workflow.ErrNotFound)
		}
		if err != nil {
			return err
		}
		switch {
		case h.Seq == seq && h.Hash == hash:
			return nil
		case h.Seq <= seq:
			return fmt.Errorf("journal head of session %s is entry %d; refusing to set it to entry %d", h.SessionID, seq, h.Seq)
		}
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET head_seq = ?, head_hash = ? WHERE id = ?`, h.Seq, h.Hash, h.SessionID)
		return err
	})
}

// JournalHead returns the last journal entry the ledger confirmed for
// sessionID (Seq 0 before the first), or an error wrapping
// workflow.ErrNotFound.
func (s *Ledger) JournalHead(ctx context.Context, sessionID string) (journal.Head, error) {
	h := journal.Head{SessionID: sessionID}
	err := s.db.QueryRowContext(ctx, `SELECT head_seq, head_hash FROM sessions WHERE id = ?`, sessionID).Scan(&h.Seq, &h.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return journal.Head{}, fmt.Errorf("session %s: %w", sessionID, workflow.ErrNotFound)
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

// SessionSeal returns session id's head as the ledger holds it, with its
// seal (Sealed() false for a session never sealed), or an error wrapping
// workflow.ErrNotFound.
func (s *SQLite) SessionSeal(ctx context.Context, id string) (workflow.SessionSeal, error) {
	var (
		seal   workflow.SessionSeal
		sealed sql.NullInt64
	)
	h := &seal.Head
	err := s.db.QueryRowContext(ctx, `
SELECT actor, command, release_id, head_seq, head_hash, sealed_at,
	head_signature, head_signing_key, head_unsigned, head_anchor, head_unanchored
FROM sessions WHERE id = ?`, id).Scan(&h.Actor, &h.Command, &h.Release, &h.Seq, &h.Hash, &sealed,
		&seal.Signature.Armored, &seal.Signature.Key, &seal.Unsigned, &seal.Anchor, &seal.Unanchored)
	if errors.Is(err, sql.ErrNoRows) {
		return workflow.SessionSeal{}, fmt.Errorf("session %s: %w", id, workflow.ErrNotFound)
	}
	if err != nil {
		return workflow.SessionSeal{}, s.fail("read the seal of session "+id, err)
	}
	h.Session, h.At = id, timeOf(sealed)
	return seal, nil
}

// SealSession records the seal of a session's head, once. It refuses a
// session already sealed and a seal of another head than the one the
// ledger holds (the head moved, or the seal names another actor, command
// or release), since either would let a seal vouch for what it never saw.
func (s *SQLite) SealSession(ctx context.Context, seal workflow.SessionSeal) error {
	h := seal.Head
	if h.At.IsZero() {
		return fmt.Errorf("%w: seal of session %s has no time", workflow.ErrUsage, h.Session)
	}
	at, err := timeValue(h.At)
	if err != nil {
		return fmt.Errorf("seal session %s: %w", h.Session, err)
	}
	return s.inTx(ctx, "seal session "+h.Session, func(tx ledgerTx) error {
		var (
			cur    workflow.SessionHead
			sealed sql.NullInt64
		)
		err := tx.QueryRowContext(ctx, `SELECT actor, command, release_id, head_seq, head_hash, sealed_at FROM sessions WHERE id = ?`, h.Session).
			Scan(&cur.Actor, &cur.Command, &cur.Release, &cur.Seq, &cur.Hash, &sealed)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("session %s: %w", h.Session, workflow.ErrNotFound)
		}
		if err != nil {
			return err
		}
		cur.Session, cur.At = h.Session, h.At
		switch {
		case sealed.Valid:
			return fmt.Errorf("session %s was sealed at %s; a seal is never replaced", h.Session, timeOf(sealed).Format(time.RFC3339))
		case cur != h:
			return fmt.Errorf("seal of session %s is of entry %d by %s (%s), but the ledger holds entry %d by %s (%s): seal the head the ledger holds",
				h.Session, h.Seq, h.Actor, h.Command, cur.Seq, cur.Actor, cur.Command)
		}
		_, err = tx.ExecContext(ctx, `
UPDATE sessions SET sealed_at = ?, head_signature = ?, head_signing_key = ?, head_unsigned = ?, head_anchor = ?, head_unanchored = ?
WHERE id = ?`, at, seal.Signature.Armored, seal.Signature.Key, seal.Unsigned, seal.Anchor, seal.Unanchored, h.Session)
		return err
	})
}
