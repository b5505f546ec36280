// Package store persists relcap's ledger, in SQLite (the embedded default)
// or PostgreSQL (a team's), and its session journals as append-only
// JSON-lines files.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/secret"
)

// Ledger is workflow.Ledger and report.Source over SQL: one SQLite file that
// several relcap processes may share (OpenSQLite), or one PostgreSQL
// database a team shares (OpenPostgres). Both run the same statements over
// the same schema; dialect.go says where they differ. Every write runs in
// its own transaction and is durable when the method returns. It is safe
// for concurrent use.
type Ledger struct {
	db sqlDB
	d  dialect
	// loc is where the ledger is, for messages: the SQLite file's path,
	// or the PostgreSQL URL with its password masked.
	loc  string
	path string // the SQLite file; empty for PostgreSQL
	// secrets are masked in every text the ledger writes.
	secrets *secret.Set
	// snapshotting serialises taking a report's read snapshots: each
	// report holds several connections at once, and reports taking them
	// side by side from a bounded pool (PostgreSQL's) could each hold
	// some and wait for the rest for ever.
	snapshotting sync.Mutex
}

// SQLite is the name Ledger had while SQLite was its only database.
//
// Deprecated: use Ledger. The name stays so that code written against it
// on branches in flight still builds once merged.
type SQLite = Ledger

// Option configures a ledger or a session journal at open.
type Option func(*options)

type options struct {
	secrets *secret.Set
	// schemaVersion, when positive, stops migrations at that version: for
	// tests of a migration's effect on a ledger written before it.
	schemaVersion int
}

// WithSecrets masks set's secrets in everything the ledger or the journal
// writes: a release's messages, a plan's attributes, findings, evidence,
// journal entries. What is masked is gone; it cannot be read back. A
// PostgreSQL ledger also adds its password to set.
func WithSecrets(set *secret.Set) Option { return func(o *options) { o.secrets = set } }

func applyOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

var _ workflow.Ledger = (*Ledger)(nil)

// open finishes opening a ledger over db: it checks the database answers
// and applies pending schema migrations.
func open(ctx context.Context, l *Ledger, ping func(context.Context) error, o options) (*Ledger, error) {
	if err := ping(ctx); err != nil {
		_ = l.db.Close()
		return nil, l.d.openError(l.loc, err)
	}
	target := schemaVersion()
	if o.schemaVersion > 0 {
		target = o.schemaVersion
	}
	if err := l.migrate(ctx, target); err != nil {
		_ = l.db.Close()
		return nil, err
	}
	return l, nil
}

// Path is the absolute path of an SQLite ledger's file; empty for
// PostgreSQL.
func (s *Ledger) Path() string { return s.path }

// Location is where the ledger is, as messages name it: the SQLite file's
// path, or the PostgreSQL URL with its password masked.
func (s *Ledger) Location() string { return s.loc }

// Close closes the ledger. Every write was already committed.
func (s *Ledger) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close ledger %s: %w", s.loc, err)
	}
	return nil
}

// fail wraps an error from operation op with the ledger's location, and
// says what to do when the cause is one the user can fix.
func (s *Ledger) fail(op string, err error) error { return s.d.fail(s.loc, op, err) }

// inTx runs fn in one write transaction and commits it, so a failure
// leaves the ledger as it was before the call. Domain errors (not found,
// invalid input) pass through unwrapped; others are wrapped with op.
func (s *Ledger) inTx(ctx context.Context, op string, fn func(tx ledgerTx) error) error {
	err := s.runTx(ctx, fn)
	if err == nil || errors.Is(err, fault.ErrNotFound) || errors.Is(err, fault.ErrUsage) {
		return err
	}
	return s.fail(op, err)
}

// runTx is inTx without the wrapping. A transaction the database aborted
// to break a deadlock is run again, a few times.
func (s *Ledger) runTx(ctx context.Context, fn func(tx ledgerTx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.tryTx(ctx, fn)
		if err == nil || attempt == 5 || !s.d.retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * 10 * time.Millisecond):
		}
	}
}

func (s *Ledger) tryTx(ctx context.Context, fn func(tx ledgerTx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(ledgerTx{Tx: tx, d: s.d, secrets: s.secrets}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Times are stored as UTC Unix nanoseconds: exact, compact and ordered, so
// range queries use the indexes. The zero time is NULL.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// timeValue converts t for a column; it refuses times outside the range
// int64 nanoseconds can hold (years 1678 to 2262) rather than storing a
// wrong instant.
func timeValue(t time.Time) (any, error) {
	if t.IsZero() {
		return nil, nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return nil, fmt.Errorf("%w: time %s is outside the range the ledger stores (1678 to 2262)", fault.ErrUsage, t.Format(time.RFC3339Nano))
	}
	return t.UnixNano(), nil
}

// timeOf converts a column back; NULL is the zero time.
func timeOf(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// timeValues converts several times at once, failing on the first bad one.
func timeValues(ts ...time.Time) ([]any, error) {
	out := make([]any, len(ts))
	for i, t := range ts {
		v, err := timeValue(t)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// sqlDB is the ledger's database: its statements are shared SQL, their
// placeholders rewritten for the dialect.
type sqlDB struct {
	*sql.DB
	d dialect
}

// QueryContext runs q, rebound for the dialect.
func (db sqlDB) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return db.DB.QueryContext(ctx, db.d.rebind(q), args...)
}

// QueryRowContext runs q, rebound for the dialect.
func (db sqlDB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return db.DB.QueryRowContext(ctx, db.d.rebind(q), args...)
}

// ExecContext runs q, rebound for the dialect. The ledger's writes go
// through ledgerTx instead, which masks secrets.
func (db sqlDB) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return db.DB.ExecContext(ctx, db.d.rebind(q), args...)
}

// querier is what the ledger's reads run on: a ledgerTx.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// ledgerTx is a transaction of shared SQL whose writes mask the process's
// secrets: every text a ledger row holds passes through ExecContext or a
// prepared statement's ExecContext.
type ledgerTx struct {
	*sql.Tx
	d       dialect
	secrets *secret.Set
}

// ExecContext runs q with its text arguments scrubbed.
func (t ledgerTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, t.d.rebind(q), scrubArgs(t.secrets, args)...)
}

// QueryContext runs q, rebound for the dialect.
func (t ledgerTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, t.d.rebind(q), args...)
}

// QueryRowContext runs q, rebound for the dialect.
func (t ledgerTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, t.d.rebind(q), args...)
}

// PrepareContext prepares q; its statement scrubs its text arguments.
func (t ledgerTx) PrepareContext(ctx context.Context, q string) (ledgerStmt, error) {
	st, err := t.Tx.PrepareContext(ctx, t.d.rebind(q))
	return ledgerStmt{Stmt: st, secrets: t.secrets}, err
}

// serialize runs the rest of the transaction alone among those that
// serialize on key (see dialect.serialize).
func (t ledgerTx) serialize(ctx context.Context, key string) error {
	return t.d.serialize(ctx, t.Tx, key)
}

// notify tells the ledger's change feeds, at commit, that topic changed.
func (t ledgerTx) notify(ctx context.Context, topic string) error {
	return t.d.notify(ctx, t.Tx, topic)
}

// ledgerStmt is a prepared statement of a ledgerTx.
type ledgerStmt struct {
	*sql.Stmt
	secrets *secret.Set
}

// ExecContext runs the statement with its text arguments scrubbed.
func (s ledgerStmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	return s.Stmt.ExecContext(ctx, scrubArgs(s.secrets, args)...)
}

func scrubArgs(set *secret.Set, args []any) []any {
	if set.Len() == 0 {
		return args
	}
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = set.Scrub(v)
		case []byte:
			out[i] = set.ScrubBytes(v)
		default:
			out[i] = a
		}
	}
	return out
}
