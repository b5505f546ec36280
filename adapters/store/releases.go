package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/tfplan"
)

// SaveRelease inserts or replaces the release with r.ID.
func (s *Ledger) SaveRelease(ctx context.Context, r *workflow.Release) error {
	if r == nil || r.ID == "" {
		return fmt.Errorf("%w: save release: release has no ID", fault.ErrUsage)
	}
	cols, err := releaseColumns(r)
	if err != nil {
		return fmt.Errorf("save release %s: %w", r.ID, err)
	}
	return s.inTx(ctx, "save release "+r.ID, func(tx ledgerTx) error {
		if _, err := tx.ExecContext(ctx, upsertRelease, cols...); err != nil {
			return err
		}
		return tx.notify(ctx, "releases")
	})
}

// upsertRelease writes a release's row; releaseColumns gives its values.
const upsertRelease = `
INSERT INTO releases (id, app, env, status, kind, captain, created_at, updated_at, ended_at, rehearsal, sandbox,
	rollback_of, failed_steps, body)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
	app = excluded.app, env = excluded.env, status = excluded.status, kind = excluded.kind,
	captain = excluded.captain, created_at = excluded.created_at, updated_at = excluded.updated_at,
	ended_at = excluded.ended_at, rehearsal = excluded.rehearsal, sandbox = excluded.sandbox,
	rollback_of = excluded.rollback_of, failed_steps = excluded.failed_steps, body = excluded.body`

// releaseColumns are the values of upsertRelease for r: the columns
// reports select and read (so they never decode a body), and the body.
// failed_steps is the failed and blocked steps' kinds, statuses and times
// as report.StepTime spells them, NULL when there are none.
func releaseColumns(r *workflow.Release) ([]any, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	ts, err := timeValues(r.CreatedAt, r.UpdatedAt, r.EndedAt)
	if err != nil {
		return nil, err
	}
	var failed []report.StepTime
	for _, st := range r.Steps {
		if st.Status == workflow.Failed || st.Status == workflow.Blocked {
			failed = append(failed, report.StepTime{Kind: st.Kind, Status: st.Status, StartedAt: st.StartedAt, EndedAt: st.EndedAt})
		}
	}
	var failedSteps any
	if len(failed) > 0 {
		b, err := json.Marshal(failed)
		if err != nil {
			return nil, fmt.Errorf("encode failed steps: %w", err)
		}
		failedSteps = string(b)
	}
	return []any{r.ID, r.App, r.Env, string(r.Status), r.Kind, r.Captain, ts[0], ts[1], ts[2], r.Checkpoints.Rehearsal,
		sqlBool(r.Sandbox), r.RollbackOf, failedSteps, string(body)}, nil
}

// LoadRelease returns the release with id, or an error wrapping
// fault.ErrNotFound.
func (s *Ledger) LoadRelease(ctx context.Context, id string) (*workflow.Release, error) {
	var body string
	err := s.db.QueryRowContext(ctx, `SELECT body FROM releases WHERE id = ?`, id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("release %s: %w", id, fault.ErrNotFound)
	}
	if err != nil {
		return nil, s.fail("load release "+id, err)
	}
	return decodeRelease(id, body)
}

// ListReleases returns the releases f selects, newest first. From is
// inclusive and To exclusive, both on CreatedAt; Limit keeps the newest
// Limit releases when positive.
func (s *Ledger) ListReleases(ctx context.Context, f workflow.ReleaseFilter) ([]*workflow.Release, error) {
	var sel filter
	if f.App != "" {
		sel.add("app = ?", f.App)
	}
	if f.Env != "" {
		sel.add("env = ?", f.Env)
	}
	for _, b := range []struct {
		t  time.Time
		op string
	}{{f.From, ">="}, {f.To, "<"}} {
		if b.t.IsZero() {
			continue
		}
		v, err := timeValue(b.t)
		if err != nil {
			return nil, fmt.Errorf("list releases: %w", err)
		}
		sel.add("created_at "+b.op+" ?", v)
	}
	q := "SELECT id, body FROM releases" + sel.where() + " ORDER BY created_at DESC, id DESC"
	args := sel.args
	if f.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, f.Limit)
	}
	return listBodies(ctx, s, "list releases", q, args, decodeRelease)
}

// listBodies runs q, which selects id and body, and decodes each row's
// JSON body: the records the ledger keeps whole (releases, rehearsals).
func listBodies[T any](ctx context.Context, s *Ledger, what, q string, args []any, decode func(id, body string) (*T, error)) ([]*T, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.fail(what, err)
	}
	defer rows.Close()
	var out []*T
	for rows.Next() {
		var id, body string
		if err := rows.Scan(&id, &body); err != nil {
			return nil, s.fail(what, err)
		}
		r, err := decode(id, body)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(what, err)
	}
	return out, nil
}

func decodeRelease(id, body string) (*workflow.Release, error) {
	var r workflow.Release
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return nil, fmt.Errorf("release %s: stored record is unreadable: %w", id, err)
	}
	return &r, nil
}

// RecordConvergence remembers that c.Digest converged in c.Env.
func (s *Ledger) RecordConvergence(ctx context.Context, c workflow.ConvergenceRecord) error {
	if c.App == "" || c.Env == "" || c.Digest.IsZero() {
		return fmt.Errorf("%w: convergence record needs an app, an environment and a digest", fault.ErrUsage)
	}
	at, err := timeValue(c.At)
	if err != nil {
		return fmt.Errorf("record convergence of %s: %w", c.ReleaseID, err)
	}
	return s.inTx(ctx, "record convergence of "+c.ReleaseID, func(tx ledgerTx) error {
		_, err := tx.ExecContext(ctx, `
INSERT INTO convergences (release_id, app, env, digest, revision, at) VALUES (?, ?, ?, ?, ?, ?)`,
			c.ReleaseID, c.App, c.Env, c.Digest.String(), c.Revision, at)
		if err != nil {
			return err
		}
		return tx.notify(ctx, "convergences")
	})
}

// HasConverged reports whether d ever converged for app in env.
func (s *Ledger) HasConverged(ctx context.Context, app, env string, d image.Digest) (bool, error) {
	var ok bool
	err := s.db.QueryRowContext(ctx, `
SELECT EXISTS (SELECT 1 FROM convergences WHERE app = ? AND env = ? AND digest = ?)`,
		app, env, d.String()).Scan(&ok)
	if err != nil {
		return false, s.fail("read convergence", err)
	}
	return ok, nil
}

// SavePlan inserts or replaces the plan with p.Fingerprint. Saving a plan
// again keeps the time it was marked applied.
func (s *Ledger) SavePlan(ctx context.Context, p tfplan.Summary) error {
	if p.Fingerprint == "" {
		return fmt.Errorf("%w: save plan: plan has no fingerprint", fault.ErrUsage)
	}
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("save plan %s: encode: %w", p.Fingerprint, err)
	}
	created, err := timeValue(p.CreatedAt)
	if err != nil {
		return fmt.Errorf("save plan %s: %w", p.Fingerprint, err)
	}
	return s.inTx(ctx, "save plan "+p.Fingerprint, func(tx ledgerTx) error {
		_, err := tx.ExecContext(ctx, `
INSERT INTO plans (fingerprint, env, author, created_at, body) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (fingerprint) DO UPDATE SET
	env = excluded.env, author = excluded.author, created_at = excluded.created_at, body = excluded.body`,
			p.Fingerprint, p.Env, p.Author, created, string(body))
		if err != nil {
			return err
		}
		return tx.notify(ctx, "plans")
	})
}

// LoadPlan returns the plan with fingerprint, or an error wrapping
// fault.ErrNotFound.
func (s *Ledger) LoadPlan(ctx context.Context, fingerprint string) (tfplan.Summary, error) {
	var body string
	var applied sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT body, applied_at FROM plans WHERE fingerprint = ?`, fingerprint).Scan(&body, &applied)
	if errors.Is(err, sql.ErrNoRows) {
		return tfplan.Summary{}, fmt.Errorf("plan %s: %w", fingerprint, fault.ErrNotFound)
	}
	if err != nil {
		return tfplan.Summary{}, s.fail("load plan "+fingerprint, err)
	}
	var p tfplan.Summary
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return tfplan.Summary{}, fmt.Errorf("plan %s: stored record is unreadable: %w", fingerprint, err)
	}
	p.AppliedAt = timeOf(applied)
	return p, nil
}

// MarkPlanApplied records when the plan was applied. The first time wins:
// an interrupted apply that is resumed does not move it. An unknown
// fingerprint is an error wrapping fault.ErrNotFound.
func (s *Ledger) MarkPlanApplied(ctx context.Context, fingerprint string, at time.Time) error {
	v, err := timeValue(at)
	if err != nil {
		return fmt.Errorf("mark plan %s applied: %w", fingerprint, err)
	}
	return s.inTx(ctx, "mark plan "+fingerprint+" applied", func(tx ledgerTx) error {
		res, err := tx.ExecContext(ctx, `UPDATE plans SET applied_at = COALESCE(applied_at, ?) WHERE fingerprint = ?`, v, fingerprint)
		if err != nil {
			return err
		}
		if err := mustAffect(res, "plan "+fingerprint); err != nil {
			return err
		}
		return tx.notify(ctx, "plans")
	})
}

// mustAffect turns an update of no row into fault.ErrNotFound.
func mustAffect(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, fault.ErrNotFound)
	}
	return nil
}

// sqlBool is a flag column's value (0 or 1), the same in both databases.
func sqlBool(b bool) int {
	if b {
		return 1
	}
	return 0
}
