package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
)

var _ workflow.ReportSource = (*SQLite)(nil)

// ReportData reads a report's records with one query per table, whatever
// the number of releases (issue 9: 100,000 releases in under a second).
// All reads run in one read transaction, so the tables agree with each
// other even while another process writes.
//
// Release bodies are not decoded: the columns carry what reports need, and
// step times are pulled out of the JSON (json_extract) only for releases
// that did not converge, the only ones whose steps a report reads.
func (s *SQLite) ReportData(ctx context.Context, q workflow.ReportQuery) (workflow.ReportData, error) {
	var data workflow.ReportData
	from, err := timeValue(q.From)
	if err != nil {
		return data, fmt.Errorf("report: %w", err)
	}
	to, err := timeValue(q.To)
	if err != nil {
		return data, fmt.Errorf("report: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return data, s.fail("read report", err)
	}
	defer func() { _ = tx.Rollback() }()

	// The release selection, shared by the releases and effort queries.
	var (
		where []string
		args  []any
	)
	if q.App != "" {
		where, args = append(where, "r.app = ?"), append(args, q.App)
	}
	if q.Env != "" {
		where, args = append(where, "r.env = ?"), append(args, q.Env)
	}
	if from != nil {
		where, args = append(where, "r.created_at >= ?"), append(args, from)
	}
	if to != nil {
		where, args = append(where, "r.created_at < ?"), append(args, to)
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}

	if data.Releases, err = readReleaseFacts(ctx, tx, cond, args); err != nil {
		return data, s.fail("read report releases", err)
	}
	effortArgs := args
	effortCond := cond
	if q.Person != "" {
		effortCond = addCond(effortCond, "e.person = ?")
		effortArgs = append(append([]any(nil), args...), q.Person)
	}
	if data.Effort, err = readReportEffort(ctx, tx, effortCond, effortArgs, len(data.Releases)); err != nil {
		return data, s.fail("read report effort", err)
	}
	if data.Plans, err = readPlanFacts(ctx, tx, q.Env, from, to); err != nil {
		return data, s.fail("read report plans", err)
	}
	if data.Convergences, err = readReportConvergences(ctx, tx, q.App, from); err != nil {
		return data, s.fail("read report convergences", err)
	}
	if data.Sightings, err = readFirstSightings(ctx, tx, q.App, from); err != nil {
		return data, s.fail("read report sightings", err)
	}
	if data.Findings, err = readFindingFacts(ctx, tx, from, to); err != nil {
		return data, s.fail("read report findings", err)
	}
	return data, nil
}

func addCond(cond, c string) string {
	if cond == "" {
		return " WHERE " + c
	}
	return cond + " AND " + c
}

func readReleaseFacts(ctx context.Context, tx *sql.Tx, cond string, args []any) ([]workflow.ReleaseFact, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT r.id, r.app, r.env, r.kind, r.captain, r.status, r.created_at, r.updated_at, r.ended_at,
	CASE WHEN r.kind = 'rollback' THEN json_extract(r.body, '$.rollback_of') END,
	CASE WHEN r.status <> 'converged' THEN json_extract(r.body, '$.steps') END
FROM releases r`+cond+` ORDER BY r.created_at, r.id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []workflow.ReleaseFact
	for rows.Next() {
		var (
			f                       workflow.ReleaseFact
			status                  string
			created, updated, ended sql.NullInt64
			rollbackOf, steps       sql.NullString
		)
		if err := rows.Scan(&f.ID, &f.App, &f.Env, &f.Kind, &f.Captain, &status, &created, &updated, &ended, &rollbackOf, &steps); err != nil {
			return nil, err
		}
		f.Status = workflow.ReleaseStatus(status)
		f.CreatedAt, f.UpdatedAt, f.EndedAt = timeOf(created), timeOf(updated), timeOf(ended)
		f.RollbackOf = rollbackOf.String
		if steps.Valid && steps.String != "" {
			var recs []workflow.StepRecord
			if err := json.Unmarshal([]byte(steps.String), &recs); err != nil {
				return nil, fmt.Errorf("release %s: stored steps are unreadable: %w", f.ID, err)
			}
			for _, st := range recs {
				f.Steps = append(f.Steps, workflow.StepTime{Kind: st.Kind, Status: st.Status, StartedAt: st.StartedAt, EndedAt: st.EndedAt})
			}
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// readReportEffort reads the effort of the selected releases in one join.
// Person, role, step and kind repeat across hundreds of thousands of rows,
// so they are read as bytes and interned: one string per distinct value
// instead of one allocation per row.
func readReportEffort(ctx context.Context, tx *sql.Tx, cond string, args []any, releases int) ([]workflow.EffortEntry, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT e.release_id, e.person, e.role, e.step, e.kind, e.duration_ns, e.at
FROM effort e JOIN releases r ON r.id = e.release_id`+cond, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]workflow.EffortEntry, 0, releases*8)
	intern := map[string]string{}
	in := func(b []byte) string {
		if s, ok := intern[string(b)]; ok {
			return s
		}
		s := string(b)
		intern[s] = s
		return s
	}
	var (
		lastID                 string
		id, person, role, step sql.RawBytes
		kind                   sql.RawBytes
		ns                     int64
		at                     sql.NullInt64
	)
	for rows.Next() {
		if err := rows.Scan(&id, &person, &role, &step, &kind, &ns, &at); err != nil {
			return nil, err
		}
		// Rows of one release usually come together; reuse its ID string.
		if string(id) != lastID {
			lastID = string(id)
		}
		out = append(out, workflow.EffortEntry{ReleaseID: lastID, Person: in(person), Role: in(role), Step: in(step),
			Kind: workflow.EffortKind(in(kind)), Duration: time.Duration(ns), At: timeOf(at)})
	}
	return out, rows.Err()
}

// readPlanFacts reads plans created or applied in the period.
func readPlanFacts(ctx context.Context, tx *sql.Tx, env string, from, to any) ([]workflow.PlanFact, error) {
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
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []workflow.PlanFact
	for rows.Next() {
		var (
			p                workflow.PlanFact
			created, applied sql.NullInt64
		)
		if err := rows.Scan(&p.Fingerprint, &p.Env, &created, &applied); err != nil {
			return nil, err
		}
		p.CreatedAt, p.AppliedAt = timeOf(created), timeOf(applied)
		out = append(out, p)
	}
	return out, rows.Err()
}

// readReportConvergences reads convergences from the period's start on,
// and the earlier convergences of the same digests in the same places, so
// "first converged in prod" is not fooled by the period's start.
func readReportConvergences(ctx context.Context, tx *sql.Tx, app string, from any) ([]workflow.ConvergenceRecord, error) {
	q := `SELECT release_id, app, env, digest, revision, at FROM convergences c`
	var (
		where []string
		args  []any
	)
	if app != "" {
		where, args = append(where, "c.app = ?"), append(args, app)
	}
	if from != nil {
		where = append(where, `(c.at >= ? OR EXISTS (SELECT 1 FROM convergences l
	WHERE l.app = c.app AND l.env = c.env AND l.digest = c.digest AND l.at >= ?))`)
		args = append(args, from, from)
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []workflow.ConvergenceRecord
	for rows.Next() {
		var (
			c      workflow.ConvergenceRecord
			digest string
			at     sql.NullInt64
		)
		if err := rows.Scan(&c.ReleaseID, &c.App, &c.Env, &digest, &c.Revision, &at); err != nil {
			return nil, err
		}
		d, err := workflow.ParseDigest(digest)
		if err != nil {
			return nil, fmt.Errorf("convergence of %s: stored digest is unreadable: %w", c.ReleaseID, err)
		}
		c.Digest, c.At = d, timeOf(at)
		out = append(out, c)
	}
	return out, rows.Err()
}

// readFirstSightings returns, for every digest that converged from the
// period's start on, the first time it was seen under any reference.
func readFirstSightings(ctx context.Context, tx *sql.Tx, app string, from any) ([]workflow.Sighting, error) {
	sub := `SELECT digest FROM convergences`
	var (
		where []string
		args  []any
	)
	if app != "" {
		where, args = append(where, "app = ?"), append(args, app)
	}
	if from != nil {
		where, args = append(where, "at >= ?"), append(args, from)
	}
	if len(where) > 0 {
		sub += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := tx.QueryContext(ctx, `SELECT digest, MIN(at) FROM sightings WHERE digest IN (`+sub+`) GROUP BY digest`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []workflow.Sighting
	for rows.Next() {
		var (
			digest string
			at     sql.NullInt64
		)
		if err := rows.Scan(&digest, &at); err != nil {
			return nil, err
		}
		d, err := workflow.ParseDigest(digest)
		if err != nil {
			return nil, fmt.Errorf("sighting: stored digest is unreadable: %w", err)
		}
		out = append(out, workflow.Sighting{Digest: d, At: timeOf(at)})
	}
	return out, rows.Err()
}

// readFindingFacts reads findings alive at some point of the period:
// opened before its end and not resolved before its start.
func readFindingFacts(ctx context.Context, tx *sql.Tx, from, to any) ([]workflow.FindingFact, error) {
	q := `SELECT scope, code, subject, first_seen, resolved_at FROM findings`
	var (
		where []string
		args  []any
	)
	if to != nil {
		where, args = append(where, "first_seen < ?"), append(args, to)
	}
	if from != nil {
		where, args = append(where, "(resolved_at IS NULL OR resolved_at >= ?)"), append(args, from)
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []workflow.FindingFact
	for rows.Next() {
		var (
			f               workflow.FindingFact
			first, resolved sql.NullInt64
		)
		if err := rows.Scan(&f.Scope, &f.Code, &f.Subject, &first, &resolved); err != nil {
			return nil, err
		}
		f.FirstSeen, f.ResolvedAt = timeOf(first), timeOf(resolved)
		out = append(out, f)
	}
	return out, rows.Err()
}
