package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/report"
)

var _ report.Source = (*Ledger)(nil)

// ReportData reads a report's records with one query per table, whatever
// the number of releases (issue 9: 100,000 releases in under a second).
//
// No release body is read: what reports need of one (the release a
// rollback replaces, the failed steps' kinds and times) is kept in columns
// as the release is saved, and every column read is in the releases_report
// index (migration 15). Effort is not read entry by entry: the
// effort_totals summary (migration 2) holds each release's sums by person,
// role, step and kind in one row.
//
// The releases, their effort sums and (for measures) the other tables are
// read at the same time on three connections, each in a read transaction;
// all see the same committed state of the ledger (see readSnapshots), so
// the tables agree with each other even while another process writes. The
// SQL is shared by both databases.
func (s *Ledger) ReportData(ctx context.Context, q report.Query) (report.Data, error) {
	var data report.Data
	from, err := timeValue(q.From)
	if err != nil {
		return data, fmt.Errorf("report: %w", err)
	}
	to, err := timeValue(q.To)
	if err != nil {
		return data, fmt.Errorf("report: %w", err)
	}
	// Releases, their effort, and (for measures) the other tables are
	// read at once, each on a connection of its own.
	snapshots := 3
	if q.EffortOnly {
		snapshots = 2
	}
	txs, err := s.readSnapshots(ctx, snapshots)
	if err != nil {
		return data, s.fail("read report", err)
	}
	defer func() {
		for _, tx := range txs {
			_ = tx.Rollback()
		}
	}()

	sel, sandbox := reportSelection(q, from, to, false), reportSelection(q, from, to, true)
	cond, args := sel.where(), sel.args

	var (
		wg             sync.WaitGroup
		relErr, effErr error
		relStep        string
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		tx := txs[0]
		var err error
		if data.Releases, err = readReleaseFacts(ctx, tx, cond, args); err != nil {
			relStep, relErr = "read report releases", err
			return
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM releases r`+sandbox.where(), sandbox.args...).Scan(&data.SandboxReleases); err != nil {
			relStep, relErr = "count sandbox releases", err
		}
	}()
	go func() {
		defer wg.Done()
		tx := txs[1]
		keys, err := readEffortKeys(ctx, tx, q.Person)
		if err == nil {
			data.Effort, err = readEffortSums(ctx, tx, cond, args, keys)
		}
		effErr = err
	}()
	// The measures' tables on the third.
	err = func() error {
		if q.EffortOnly {
			return nil
		}
		tx := txs[2]
		var err error
		if data.Plans, err = readPlanFacts(ctx, tx, q.Env, from, to); err != nil {
			return s.fail("read report plans", err)
		}
		if data.Convergences, err = readReportConvergences(ctx, tx, q.App, from); err != nil {
			return s.fail("read report convergences", err)
		}
		if data.Sightings, err = readFirstSightings(ctx, tx, q.App, from); err != nil {
			return s.fail("read report sightings", err)
		}
		if data.Findings, err = readFindingFacts(ctx, tx, from, to); err != nil {
			return s.fail("read report findings", err)
		}
		if data.Approvals, err = readApprovalFacts(ctx, tx, q.Env, from, to); err != nil {
			return s.fail("read report approvals", err)
		}
		if data.Rehearsals, err = readReportRehearsals(ctx, tx, q.App, q.Env, to); err != nil {
			return s.fail("read report rehearsals", err)
		}
		return nil
	}()
	wg.Wait()
	if relErr != nil {
		return report.Data{}, s.fail(relStep, relErr)
	}
	if effErr != nil {
		return report.Data{}, s.fail("read report effort", effErr)
	}
	if err != nil {
		return report.Data{}, err
	}
	return data, nil
}

// reportSelection selects the releases a report counts, or with sandbox
// the sandbox releases (relcap demo's) it leaves out and says it left
// out. A rehearsal's drill and recovery releases are no release of the
// team's: their figures are the rehearsals' own (report measures), and
// counted here they would pass as releases of unmeasured effort, and in
// production as failed deployments. Every column it names is in the
// releases_report index, the two marks leading it.
func reportSelection(q report.Query, from, to any, sandbox bool) filter {
	var sel filter
	sel.add("r.sandbox = ?", sqlBool(sandbox))
	sel.add("r.rehearsal = ''")
	if q.App != "" {
		sel.add("r.app = ?", q.App)
	}
	if q.Env != "" {
		sel.add("r.env = ?", q.Env)
	}
	if from != nil {
		sel.add("r.created_at >= ?", from)
	}
	if to != nil {
		sel.add("r.created_at < ?", to)
	}
	return sel
}

// readSnapshots begins n read transactions on n connections that all see
// the same committed state (see dialect.snapshots).
func (s *Ledger) readSnapshots(ctx context.Context, n int) ([]ledgerTx, error) {
	s.snapshotting.Lock()
	txs, err := s.d.snapshots(ctx, s.db.DB, n)
	s.snapshotting.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([]ledgerTx, len(txs))
	for i, tx := range txs {
		out[i] = ledgerTx{Tx: tx, d: s.d}
	}
	return out, nil
}

// readReleaseFacts reads the selected releases, oldest first. App,
// environment, kind, captain and status repeat across the rows, so they
// are read as bytes and interned: one string per distinct value.
func readReleaseFacts(ctx context.Context, tx ledgerTx, cond string, args []any) ([]report.ReleaseFact, error) {
	rows, err := tx.QueryContext(ctx, releaseFactsSQL(cond), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		facts  []report.ReleaseFact
		intern = map[string]string{}
		in     = func(b []byte) string {
			if s, ok := intern[string(b)]; ok {
				return s
			}
			s := string(b)
			intern[s] = s
			return s
		}
		app, env, kind, captain, status sql.RawBytes
		created, updated, ended         sql.NullInt64
		rollbackOf, steps               sql.RawBytes
		sorted                          = true
	)
	for rows.Next() {
		var f report.ReleaseFact
		if err := rows.Scan(&f.ID, &app, &env, &kind, &captain, &status, &created, &updated, &ended, &rollbackOf, &steps); err != nil {
			return nil, err
		}
		f.App, f.Env, f.Kind, f.Captain, f.Status = in(app), in(env), workflow.ReleaseKind(in(kind)), in(captain), workflow.ReleaseStatus(in(status))
		f.CreatedAt, f.UpdatedAt, f.EndedAt = timeOf(created), timeOf(updated), timeOf(ended)
		f.RollbackOf = string(rollbackOf)
		if len(steps) > 0 && string(steps) != "[]" {
			// StepTime has StepRecord's names for the fields it keeps.
			if err := json.Unmarshal(steps, &f.Steps); err != nil {
				return nil, fmt.Errorf("release %s: stored steps are unreadable: %w", f.ID, err)
			}
			if len(f.Steps) == 0 {
				f.Steps = nil
			}
		}
		if n := len(facts); n > 0 && compareFacts(facts[n-1], f) > 0 {
			sorted = false
		}
		facts = append(facts, f)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Sorting here rather than in SQL spares SQLite a sort of every
	// selected row; the rows usually come in creation order anyway.
	if !sorted {
		slices.SortFunc(facts, compareFacts)
	}
	return facts, nil
}

// releaseFactsSQL reads the releases cond selects, every column from the
// releases_report index. 'failed' and 'blocked' are workflow.Failed and
// workflow.Blocked as release bodies spell them; FailureDetectedAt reads
// no other step.
func releaseFactsSQL(cond string) string {
	return `
SELECT r.id, r.app, r.env, r.kind, r.captain, r.status, r.created_at, r.updated_at, r.ended_at,
	CASE WHEN r.kind = 'rollback' THEN r.rollback_of END,
	CASE WHEN r.status NOT IN ('converged', 'succeeded', 'ended', 'rolled-back', 'abandoned') THEN r.failed_steps END
FROM releases r` + cond
}

// compareFacts orders releases by creation time, then ID (ORDER BY
// created_at, id: no creation time first).
func compareFacts(a, b report.ReleaseFact) int {
	return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
}

// readPlanFacts reads plans created or applied in the period.
func readPlanFacts(ctx context.Context, tx querier, env string, from, to any) ([]report.PlanFact, error) {
	var (
		inPeriod []string
		args     []any
	)
	for _, col := range []string{"created_at", "applied_at"} {
		var c []string
		if from != nil {
			c, args = append(c, col+" >= ?"), append(args, from)
		}
		if to != nil {
			c, args = append(c, col+" < ?"), append(args, to)
		}
		if len(c) == 0 {
			c = []string{col + " IS NOT NULL"}
		}
		inPeriod = append(inPeriod, "("+strings.Join(c, " AND ")+")")
	}
	q := `SELECT fingerprint, env, created_at, applied_at FROM plans WHERE (` + strings.Join(inPeriod, " OR ") + `)`
	if env != "" {
		q += " AND env = ?"
		args = append(args, env)
	}
	return collect(ctx, tx, q, args, func(rows *sql.Rows) (report.PlanFact, error) {
		var (
			p                report.PlanFact
			created, applied sql.NullInt64
		)
		err := rows.Scan(&p.Fingerprint, &p.Env, &created, &applied)
		p.CreatedAt, p.AppliedAt = timeOf(created), timeOf(applied)
		return p, err
	})
}

// readReportConvergences reads convergences from the period's start on,
// and the earlier convergences of the same digests in the same places, so
// "first converged in prod" is not fooled by the period's start.
func readReportConvergences(ctx context.Context, tx querier, app string, from any) ([]workflow.ConvergenceRecord, error) {
	q := `SELECT release_id, app, env, digest, revision, at FROM convergences c`
	var f filter
	if app != "" {
		f.add("c.app = ?", app)
	}
	if from != nil {
		f.add(`(c.at >= ? OR EXISTS (SELECT 1 FROM convergences l
	WHERE l.app = c.app AND l.env = c.env AND l.digest = c.digest AND l.at >= ?))`, from, from)
	}
	return collect(ctx, tx, q+f.where(), f.args, func(rows *sql.Rows) (workflow.ConvergenceRecord, error) {
		var (
			c      workflow.ConvergenceRecord
			digest string
			at     sql.NullInt64
		)
		if err := rows.Scan(&c.ReleaseID, &c.App, &c.Env, &digest, &c.Revision, &at); err != nil {
			return c, err
		}
		d, err := image.ParseDigest(digest)
		if err != nil {
			return c, fmt.Errorf("convergence of %s: stored digest is unreadable: %w", c.ReleaseID, err)
		}
		c.Digest, c.At = d, timeOf(at)
		return c, nil
	})
}

// readFirstSightings returns, for every digest that converged from the
// period's start on, the first time it was seen under any reference.
func readFirstSightings(ctx context.Context, tx querier, app string, from any) ([]workflow.Sighting, error) {
	var f filter
	if app != "" {
		f.add("app = ?", app)
	}
	if from != nil {
		f.add("at >= ?", from)
	}
	q := `SELECT digest, MIN(at) FROM sightings WHERE digest IN (SELECT digest FROM convergences` + f.where() + `) GROUP BY digest`
	return collect(ctx, tx, q, f.args, func(rows *sql.Rows) (workflow.Sighting, error) {
		var (
			digest string
			at     sql.NullInt64
		)
		if err := rows.Scan(&digest, &at); err != nil {
			return workflow.Sighting{}, err
		}
		d, err := image.ParseDigest(digest)
		if err != nil {
			return workflow.Sighting{}, fmt.Errorf("sighting: stored digest is unreadable: %w", err)
		}
		return workflow.Sighting{Digest: d, At: timeOf(at)}, nil
	})
}

// readFindingFacts reads findings alive at some point of the period:
// opened before its end and not resolved before its start.
func readFindingFacts(ctx context.Context, tx querier, from, to any) ([]report.FindingFact, error) {
	var f filter
	if to != nil {
		f.add("first_seen < ?", to)
	}
	if from != nil {
		f.add("(resolved_at IS NULL OR resolved_at >= ?)", from)
	}
	q := `SELECT scope, code, subject, first_seen, resolved_at FROM findings` + f.where()
	return collect(ctx, tx, q, f.args, func(rows *sql.Rows) (report.FindingFact, error) {
		var (
			ff              report.FindingFact
			first, resolved sql.NullInt64
		)
		err := rows.Scan(&ff.Scope, &ff.Code, &ff.Subject, &first, &resolved)
		ff.FirstSeen, ff.ResolvedAt = timeOf(first), timeOf(resolved)
		return ff, err
	})
}

// readApprovalFacts reads the approvals given in the period: who approved
// what, and whether they signed it.
func readApprovalFacts(ctx context.Context, tx querier, env string, from, to any) ([]report.ApprovalFact, error) {
	var f filter
	if env != "" {
		f.add("env = ?", env)
	}
	if from != nil {
		f.add("at >= ?", from)
	}
	if to != nil {
		f.add("at < ?", to)
	}
	q := `SELECT kind, subject, env, approver, at, signing_key FROM approvals` + f.where() + ` ORDER BY at, id`
	return collect(ctx, tx, q, f.args, func(rows *sql.Rows) (report.ApprovalFact, error) {
		var (
			af report.ApprovalFact
			at sql.NullInt64
		)
		err := rows.Scan(&af.Kind, &af.Subject, &af.Env, &af.Approver, &at, &af.Key)
		af.At = timeOf(at)
		return af, err
	})
}

// readReportRehearsals reads the rehearsals started before to, all of
// them: when each drill last passed may be long before the period.
func readReportRehearsals(ctx context.Context, tx querier, app, env string, to any) ([]rehearsal.Rehearsal, error) {
	var f filter
	if app != "" {
		f.add("app = ?", app)
	}
	if env != "" {
		f.add("env = ?", env)
	}
	if to != nil {
		f.add("started_at < ?", to)
	}
	q := `SELECT id, body FROM rehearsals` + f.where() + ` ORDER BY started_at, id`
	return collect(ctx, tx, q, f.args, func(rows *sql.Rows) (rehearsal.Rehearsal, error) {
		var id, body string
		if err := rows.Scan(&id, &body); err != nil {
			return rehearsal.Rehearsal{}, err
		}
		r, err := decodeRehearsal(id, body)
		if err != nil {
			return rehearsal.Rehearsal{}, err
		}
		return *r, nil
	})
}

// filter collects the conditions of a WHERE clause and their arguments.
type filter struct {
	conds []string
	args  []any
}

func (f *filter) add(cond string, args ...any) {
	f.conds = append(f.conds, cond)
	f.args = append(f.args, args...)
}

// where is " WHERE c1 AND c2 ...", or "" without conditions.
func (f filter) where() string {
	if len(f.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(f.conds, " AND ")
}

// collect runs q in tx and scans every row with scan.
func collect[T any](ctx context.Context, tx querier, q string, args []any, scan func(*sql.Rows) (T, error)) ([]T, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
