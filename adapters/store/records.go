package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/image"
)

// RecordApproval stores a.
func (s *Ledger) RecordApproval(ctx context.Context, a approval.Approval) error {
	if a.Kind == "" || a.Subject == "" || a.Approver == "" {
		return fmt.Errorf("%w: approval needs a kind, a subject and an approver", fault.ErrUsage)
	}
	if a.TimeBox < 0 {
		return fmt.Errorf("%w: approval of %s %s: negative time box %s", fault.ErrUsage, a.Kind, a.Subject, a.TimeBox)
	}
	at, err := timeValue(a.At)
	if err != nil {
		return fmt.Errorf("record approval of %s %s: %w", a.Kind, a.Subject, err)
	}
	return s.inTx(ctx, fmt.Sprintf("record approval of %s %s", a.Kind, a.Subject), func(tx ledgerTx) error {
		// received_at is the database's clock, not the writer's: a
		// signature counts at the time the ledger received it.
		if _, err := tx.ExecContext(ctx, `
INSERT INTO approvals (kind, subject, env, approver, comment, at, commit_sha, digest, signature, signing_key, time_box_ns, people, received_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, `+s.d.clockNanos()+`)`,
			a.Kind, a.Subject, a.Env, a.Approver, a.Comment, at, a.Commit, a.Digest, a.Signature.Armored, a.Signature.Key, int64(a.TimeBox), a.People); err != nil {
			return err
		}
		// An approval is what a captain's open cockpit waits for.
		return tx.notify(ctx, "approvals")
	})
}

// Approvals returns every approval of exactly kind and subject, oldest
// first, duplicates included.
func (s *Ledger) Approvals(ctx context.Context, kind approval.Kind, subject string) ([]approval.Approval, error) {
	rows, err := s.db.QueryContext(ctx, `
SELECT kind, subject, env, approver, comment, at, commit_sha, digest, signature, signing_key, time_box_ns, people, received_at FROM approvals
WHERE kind = ? AND subject = ? ORDER BY at, id`, kind, subject)
	if err != nil {
		return nil, s.fail("read approvals", err)
	}
	defer rows.Close()
	var out []approval.Approval
	for rows.Next() {
		var (
			a        approval.Approval
			at       sql.NullInt64
			received sql.NullInt64
			timeBox  int64
		)
		if err := rows.Scan(&a.Kind, &a.Subject, &a.Env, &a.Approver, &a.Comment, &at, &a.Commit, &a.Digest, &a.Signature.Armored, &a.Signature.Key, &timeBox, &a.People, &received); err != nil {
			return nil, s.fail("read approvals", err)
		}
		a.At, a.TimeBox, a.ReceivedAt = timeOf(at), time.Duration(timeBox), timeOf(received)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("read approvals", err)
	}
	return out, nil
}

// RecordEffort stores entries, all or none: an invalid entry (see
// effort.Entry.Validate) rejects the whole batch.
func (s *Ledger) RecordEffort(ctx context.Context, entries []effort.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	ats := make([]any, len(entries))
	for i, e := range entries {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("%w: record effort: %w", fault.ErrUsage, err)
		}
		v, err := timeValue(e.At)
		if err != nil {
			return fmt.Errorf("record effort: %w", err)
		}
		ats[i] = v
	}
	return s.inTx(ctx, "record effort", func(tx ledgerTx) error {
		stmt, err := tx.PrepareContext(ctx, `
INSERT INTO effort (release_id, person, role, step, kind, duration_ns, at, note, inputs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i, e := range entries {
			if _, err := stmt.ExecContext(ctx, e.ReleaseID, e.Person, e.Role, e.Step, string(e.Kind), int64(e.Duration), ats[i], e.Note, e.Inputs); err != nil {
				return err
			}
		}
		return nil
	})
}

// Effort returns the effort recorded against releaseID, oldest first.
func (s *Ledger) Effort(ctx context.Context, releaseID string) ([]effort.Entry, error) {
	rows, err := s.db.QueryContext(ctx, `
SELECT release_id, person, role, step, kind, duration_ns, at, note, inputs FROM effort
WHERE release_id = ? ORDER BY at, id`, releaseID)
	if err != nil {
		return nil, s.fail("read effort of "+releaseID, err)
	}
	defer rows.Close()
	var out []effort.Entry
	for rows.Next() {
		var (
			e    effort.Entry
			kind string
			ns   int64
			at   sql.NullInt64
		)
		if err := rows.Scan(&e.ReleaseID, &e.Person, &e.Role, &e.Step, &kind, &ns, &at, &e.Note, &e.Inputs); err != nil {
			return nil, s.fail("read effort of "+releaseID, err)
		}
		e.Kind, e.Duration, e.At = effort.Kind(kind), time.Duration(ns), timeOf(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("read effort of "+releaseID, err)
	}
	return out, nil
}

// RecordSighting stores that ref pointed at d at time at and returns the
// first sighting of ref. A pair seen again keeps its earliest time.
func (s *Ledger) RecordSighting(ctx context.Context, ref string, d image.Digest, at time.Time) (workflow.Sighting, error) {
	if ref == "" || d.IsZero() || at.IsZero() {
		return workflow.Sighting{}, fmt.Errorf("%w: sighting needs a reference, a digest and a time", fault.ErrUsage)
	}
	v, err := timeValue(at)
	if err != nil {
		return workflow.Sighting{}, fmt.Errorf("record sighting of %s: %w", ref, err)
	}
	var first workflow.Sighting
	err = s.inTx(ctx, "record sighting of "+ref, func(tx ledgerTx) error {
		if _, err := tx.ExecContext(ctx, `
INSERT INTO sightings (reference, digest, at, last_seen) VALUES (?, ?, ?, ?)
ON CONFLICT (reference, digest) DO UPDATE SET
	at = `+s.d.least()+`(sightings.at, excluded.at), last_seen = `+s.d.greatest()+`(sightings.last_seen, excluded.last_seen)`,
			ref, d.String(), v, v); err != nil {
			return err
		}
		var (
			digest  string
			firstAt sql.NullInt64
		)
		if err := tx.QueryRowContext(ctx, `
SELECT digest, at FROM sightings WHERE reference = ? ORDER BY at, id LIMIT 1`, ref).Scan(&digest, &firstAt); err != nil {
			return err
		}
		fd, err := image.ParseDigest(digest)
		if err != nil {
			return fmt.Errorf("stored digest of %s is unreadable: %w", ref, err)
		}
		first = workflow.Sighting{Reference: ref, Digest: fd, At: timeOf(firstAt)}
		return nil
	})
	return first, err
}

type findingKey struct{ code, subject string }

// RecordFindings makes fs the open findings of scope as of at: a finding
// not open yet is opened with first_seen at; one still open keeps its
// first_seen and gets the new severity and message; an open one absent
// from fs is resolved at at. All of it happens in one transaction.
func (s *Ledger) RecordFindings(ctx context.Context, scope string, at time.Time, fs []finding.Finding) error {
	if scope == "" || at.IsZero() {
		return fmt.Errorf("%w: findings need a scope and a time", fault.ErrUsage)
	}
	v, err := timeValue(at)
	if err != nil {
		return fmt.Errorf("record findings of %s: %w", scope, err)
	}
	// A list may name one finding twice; the last one describes it.
	present := make(map[findingKey]finding.Finding, len(fs))
	var order []findingKey
	for _, f := range fs {
		k := findingKey{f.Code, f.Subject}
		if _, ok := present[k]; !ok {
			order = append(order, k)
		}
		present[k] = f
	}
	return s.inTx(ctx, "record findings of "+scope, func(tx ledgerTx) error {
		// The scope's open findings are read, then resolved: another
		// writer of the scope must not come in between.
		if err := tx.serialize(ctx, "findings/"+scope); err != nil {
			return err
		}
		for _, k := range order {
			f := present[k]
			body, err := json.Marshal(f)
			if err != nil {
				return fmt.Errorf("encode finding %s %s: %w", f.Code, f.Subject, err)
			}
			if _, err := tx.ExecContext(ctx, `
INSERT INTO findings (scope, code, subject, severity, message, body, first_seen, last_seen)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (scope, code, subject) WHERE resolved_at IS NULL DO UPDATE SET
	severity = excluded.severity, message = excluded.message, body = excluded.body,
	last_seen = `+s.d.greatest()+`(findings.last_seen, excluded.last_seen)`,
				scope, f.Code, f.Subject, f.Severity.String(), f.Message, string(body), v, v); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, `
SELECT id, code, subject FROM findings WHERE scope = ? AND resolved_at IS NULL`, scope)
		if err != nil {
			return err
		}
		var gone []int64
		for rows.Next() {
			var (
				id int64
				k  findingKey
			)
			if err := rows.Scan(&id, &k.code, &k.subject); err != nil {
				rows.Close()
				return err
			}
			if _, ok := present[k]; !ok {
				gone = append(gone, id)
			}
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return err
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, id := range gone {
			if _, err := tx.ExecContext(ctx, `UPDATE findings SET resolved_at = ? WHERE id = ?`, v, id); err != nil {
				return err
			}
		}
		return nil
	})
}
