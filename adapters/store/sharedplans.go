package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

var _ workflow.SharedPlanStore = (*Ledger)(nil)

// ciphertext is an encrypted plan file as a column value. It is its own
// type so the ledger's secret scrubbing (which rewrites string and []byte
// arguments) leaves it alone: masking a secret's bytes where they happen
// to occur in ciphertext would corrupt it, and ciphertext reveals nothing.
type ciphertext []byte

// Value hands the bytes to the driver as they are.
func (c ciphertext) Value() (driver.Value, error) { return []byte(c), nil }

// PutSharedPlan inserts or replaces the shared plan with p.Fingerprint.
func (s *Ledger) PutSharedPlan(ctx context.Context, p tfplan.SharedPlan) error {
	switch {
	case p.Fingerprint == "":
		return fmt.Errorf("%w: share plan: no fingerprint", fault.ErrUsage)
	case len(p.Ciphertext) == 0:
		return fmt.Errorf("%w: share plan %s: no ciphertext", fault.ErrUsage, p.Fingerprint)
	case p.SharedAt.IsZero() || p.ExpiresAt.IsZero():
		return fmt.Errorf("%w: share plan %s: no time shared or expiry", fault.ErrUsage, p.Fingerprint)
	}
	recipients, err := json.Marshal(nonNil(p.Recipients))
	if err != nil {
		return fmt.Errorf("share plan %s: encode recipients: %w", p.Fingerprint, err)
	}
	times, err := timeValues(p.SharedAt, p.ExpiresAt)
	if err != nil {
		return fmt.Errorf("share plan %s: %w", p.Fingerprint, err)
	}
	return s.inTx(ctx, "share plan "+p.Fingerprint, func(tx ledgerTx) error {
		_, err := tx.ExecContext(ctx, `
INSERT INTO shared_plans (fingerprint, env, shared_by, shared_at, expires_at, recipients, ciphertext) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (fingerprint) DO UPDATE SET
	env = excluded.env, shared_by = excluded.shared_by, shared_at = excluded.shared_at,
	expires_at = excluded.expires_at, recipients = excluded.recipients, ciphertext = excluded.ciphertext`,
			p.Fingerprint, p.Env, p.SharedBy, times[0], times[1], string(recipients), ciphertext(p.Ciphertext))
		return err
	})
}

// SharedPlan returns the shared plan with fingerprint, or an error
// wrapping fault.ErrNotFound.
func (s *Ledger) SharedPlan(ctx context.Context, fingerprint string) (tfplan.SharedPlan, error) {
	p := tfplan.SharedPlan{Fingerprint: fingerprint}
	var sharedAt, expiresAt sql.NullInt64
	var recipients string
	err := s.db.QueryRowContext(ctx, `
SELECT env, shared_by, shared_at, expires_at, recipients, ciphertext FROM shared_plans WHERE fingerprint = ?`, fingerprint).
		Scan(&p.Env, &p.SharedBy, &sharedAt, &expiresAt, &recipients, &p.Ciphertext)
	if errors.Is(err, sql.ErrNoRows) {
		return tfplan.SharedPlan{}, fmt.Errorf("shared plan %s: %w", fingerprint, fault.ErrNotFound)
	}
	if err != nil {
		return tfplan.SharedPlan{}, s.fail("load shared plan "+fingerprint, err)
	}
	if err := json.Unmarshal([]byte(recipients), &p.Recipients); err != nil {
		return tfplan.SharedPlan{}, fmt.Errorf("shared plan %s: stored recipients are unreadable: %w", fingerprint, err)
	}
	p.SharedAt, p.ExpiresAt = timeOf(sharedAt), timeOf(expiresAt)
	return p, nil
}

// DeleteSharedPlan deletes the shared plan with fingerprint, if any.
func (s *Ledger) DeleteSharedPlan(ctx context.Context, fingerprint string) error {
	return s.inTx(ctx, "delete shared plan "+fingerprint, func(tx ledgerTx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM shared_plans WHERE fingerprint = ?`, fingerprint)
		return err
	})
}

// DeleteExpiredSharedPlans deletes the shared plans that expired before
// now and returns their fingerprints, sorted.
func (s *Ledger) DeleteExpiredSharedPlans(ctx context.Context, now time.Time) ([]string, error) {
	at, err := timeValue(now)
	if err != nil {
		return nil, fmt.Errorf("purge shared plans: %w", err)
	}
	var gone []string
	err = s.inTx(ctx, "purge expired shared plans", func(tx ledgerTx) error {
		gone = nil // a transaction run again starts over
		rows, err := tx.QueryContext(ctx, `DELETE FROM shared_plans WHERE expires_at < ? RETURNING fingerprint`, at)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var fp string
			if err := rows.Scan(&fp); err != nil {
				return err
			}
			gone = append(gone, fp)
		}
		return rows.Err()
	})
	slices.Sort(gone)
	return gone, err
}

// nonNil is s, or an empty slice for nil, so the column holds [] and not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
