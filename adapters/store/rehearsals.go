package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/rehearsal"
)

// The ledger keeps the recovery drills' records (relcap rehearse).
var _ rehearsal.Store = (*Ledger)(nil)

// SaveRehearsal inserts or replaces the rehearsal with r.ID.
func (s *Ledger) SaveRehearsal(ctx context.Context, r *rehearsal.Rehearsal) error {
	if r == nil || r.ID == "" {
		return fmt.Errorf("%w: save rehearsal: rehearsal has no ID", fault.ErrUsage)
	}
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("save rehearsal %s: encode: %w", r.ID, err)
	}
	started, err := timeValue(r.StartedAt)
	if err != nil {
		return fmt.Errorf("save rehearsal %s: %w", r.ID, err)
	}
	return s.inTx(ctx, "save rehearsal "+r.ID, func(tx ledgerTx) error {
		_, err := tx.ExecContext(ctx, `
INSERT INTO rehearsals (id, app, env, drill, state, started_at, body)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
	app = excluded.app, env = excluded.env, drill = excluded.drill, state = excluded.state,
	started_at = excluded.started_at, body = excluded.body`,
			r.ID, r.App, r.Env, string(r.Drill), string(r.State), started, string(body))
		if err != nil {
			return err
		}
		return tx.notify(ctx, "rehearsals")
	})
}

// LoadRehearsal returns the rehearsal with id, or an error wrapping
// fault.ErrNotFound.
func (s *Ledger) LoadRehearsal(ctx context.Context, id string) (*rehearsal.Rehearsal, error) {
	var body string
	err := s.db.QueryRowContext(ctx, `SELECT body FROM rehearsals WHERE id = ?`, id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("rehearsal %s: %w", id, fault.ErrNotFound)
	}
	if err != nil {
		return nil, s.fail("load rehearsal "+id, err)
	}
	return decodeRehearsal(id, body)
}

// ListRehearsals returns the rehearsals f selects, newest first.
func (s *Ledger) ListRehearsals(ctx context.Context, f rehearsal.Filter) ([]*rehearsal.Rehearsal, error) {
	var sel filter
	if f.App != "" {
		sel.add("app = ?", f.App)
	}
	if f.Env != "" {
		sel.add("env = ?", f.Env)
	}
	if f.Drill != "" {
		sel.add("drill = ?", string(f.Drill))
	}
	q := "SELECT id, body FROM rehearsals" + sel.where() + " ORDER BY started_at DESC, id DESC"
	args := sel.args
	if f.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, f.Limit)
	}
	return listBodies(ctx, s, "list rehearsals", q, args, decodeRehearsal)
}

func decodeRehearsal(id, body string) (*rehearsal.Rehearsal, error) {
	var r rehearsal.Rehearsal
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return nil, fmt.Errorf("rehearsal %s: stored record is unreadable: %w", id, err)
	}
	return &r, nil
}
