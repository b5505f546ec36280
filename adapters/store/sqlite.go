// Package store persists relcap's ledger in SQLite and its session journals
// as append-only JSON-lines files.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/secret"
)

// SQLite is the default workflow.Ledger: one SQLite file that several relcap
// processes may share. Every write runs in its own transaction and is
// durable when the method returns. It is safe for concurrent use.
type SQLite struct {
	db   *sql.DB
	path string
	// secrets are masked in every text the ledger writes.
	secrets *secret.Set
}

// Option configures a ledger or a session journal at open.
type Option func(*options)

type options struct{ secrets *secret.Set }

// WithSecrets masks set's secrets in everything the ledger or the journal
// writes: a release's messages, a plan's attributes, findings, evidence,
// journal entries. What is masked is gone; it cannot be read back.
func WithSecrets(set *secret.Set) Option { return func(o *options) { o.secrets = set } }

func applyOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

var _ workflow.Ledger = (*SQLite)(nil)

// connParams are applied by the driver to every new connection, so each
// pooled connection behaves the same:
//   - WAL lets readers and a writer in other processes work at once;
//   - busy_timeout makes a writer wait for another process's transaction
//     instead of failing with "database is locked";
//   - synchronous(FULL) fsyncs the WAL on every commit, so a write survives
//     a power cut once the method returns;
//   - _txlock=immediate takes the write lock at BEGIN: a deferred
//     transaction that reads and then writes can fail with SQLITE_BUSY
//     without waiting when another process committed in between.
const connParams = "_pragma=busy_timeout(10000)" +
	"&_pragma=journal_mode(WAL)" +
	"&_pragma=foreign_keys(1)" +
	"&_pragma=synchronous(FULL)" +
	"&_txlock=immediate"

// OpenSQLite opens (creating if needed) the ledger at path, creating its
// parent directory with mode 0o700 and applying pending schema migrations.
// It fails with a message naming the path when the location is not
// writable, the file is not a ledger, or its schema is newer than this
// binary knows.
func OpenSQLite(ctx context.Context, path string, opts ...Option) (*SQLite, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: empty ledger path; pass --ledger PATH", workflow.ErrUsage)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("ledger %s is a directory, not a file: pass --ledger PATH naming a file", abs)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, notWritable(abs, err)
	}

	// A file: URI with an escaped path, because the driver cuts a plain
	// name at its first '?', which a directory name may contain.
	dsn := (&url.URL{Scheme: "file", Path: abs, RawQuery: connParams}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", abs, err)
	}
	s := &SQLite{db: db, path: abs, secrets: applyOptions(opts).secrets}
	if err := s.ping(ctx); err != nil {
		_ = db.Close()
		return nil, s.openError(err)
	}
	if err := s.migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// ping opens the first connection, retrying while another process turns a
// new ledger to WAL mode. That switch upgrades a read lock to a write lock,
// and SQLite answers SQLITE_BUSY at once instead of calling the busy
// handler (it would risk deadlock), so busy_timeout does not cover it. Once
// the file is in WAL mode the pragma only reads and the race is gone.
func (s *SQLite) ping(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Second)
	wait := 5 * time.Millisecond
	for {
		err := s.db.PingContext(ctx)
		if err == nil || sqliteCode(err) != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// Path is the absolute path of the ledger file.
func (s *SQLite) Path() string { return s.path }

// Close closes the ledger. Every write was already committed.
func (s *SQLite) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close ledger %s: %w", s.path, err)
	}
	return nil
}

// notWritable is the one message for every way the ledger cannot be
// written, with what the user can do about it.
func notWritable(path string, err error) error {
	return fmt.Errorf("ledger %s is not writable: %w; pass --ledger PATH or fix permissions", path, err)
}

// sqliteCode returns the primary SQLite result code of err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// openError explains a failure to open or first use the file.
func (s *SQLite) openError(err error) error {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM:
		return notWritable(s.path, err)
	case sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("ledger %s is not a relcap ledger (not an SQLite database): %w; pass --ledger PATH or move the file away", s.path, err)
	case sqlite3.SQLITE_CORRUPT:
		return fmt.Errorf("ledger %s is damaged: %w; restore it from a backup or pass --ledger PATH", s.path, err)
	}
	return fmt.Errorf("open ledger %s: %w", s.path, err)
}

// fail wraps an error from operation op with the ledger path, and says what
// to do when the cause is one the user can fix.
func (s *SQLite) fail(op string, err error) error {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return fmt.Errorf("ledger %s is not writable: %s: %w; pass --ledger PATH or fix permissions", s.path, op, err)
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("ledger %s: %s: %w; free disk space and retry", s.path, op, err)
	}
	return fmt.Errorf("ledger %s: %s: %w", s.path, op, err)
}

// inTx runs fn in one write transaction and commits it, so a failure
// leaves the ledger as it was before the call. Domain errors (not found,
// invalid input) pass through unwrapped; others are wrapped with op.
func (s *SQLite) inTx(ctx context.Context, op string, fn func(tx ledgerTx) error) error {
	err := s.runTx(ctx, fn)
	if err == nil || errors.Is(err, workflow.ErrNotFound) || errors.Is(err, workflow.ErrUsage) {
		return err
	}
	return s.fail(op, err)
}

// runTx is inTx without the wrapping.
func (s *SQLite) runTx(ctx context.Context, fn func(tx ledgerTx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(ledgerTx{Tx: tx, secrets: s.secrets}); err != nil {
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
		return nil, fmt.Errorf("%w: time %s is outside the range the ledger stores (1678 to 2262)", workflow.ErrUsage, t.Format(time.RFC3339Nano))
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

// ledgerTx is a transaction whose writes mask the process's secrets:
// every text a ledger row holds passes through ExecContext or a prepared
// statement's ExecContext.
type ledgerTx struct {
	*sql.Tx
	secrets *secret.Set
}

// ExecContext runs q with its text arguments scrubbed.
func (t ledgerTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, q, scrubArgs(t.secrets, args)...)
}

// PrepareContext prepares q; its statement scrubs its text arguments.
func (t ledgerTx) PrepareContext(ctx context.Context, q string) (ledgerStmt, error) {
	st, err := t.Tx.PrepareContext(ctx, q)
	return ledgerStmt{Stmt: st, secrets: t.secrets}, err
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
