package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/relcap/relcap/workflow/fault"
)

// connParams are applied by the driver to every new connection, so each
// pooled connection behaves the same:
//   - WAL lets readers and a writer in other processes work at once;
//   - busy_timeout makes a writer wait for another process's transaction
//     instead of failing with "database is locked": 30 s, since SQLite's
//     busy handler is no queue and a writer among many on a loaded
//     machine was seen to wait past 10 s (make test, under -race);
//   - synchronous(FULL) fsyncs the WAL on every commit, so a write survives
//     a power cut once the method returns;
//   - _txlock=immediate takes the write lock at BEGIN: a deferred
//     transaction that reads and then writes can fail with SQLITE_BUSY
//     without waiting when another process committed in between.
const connParams = "_pragma=busy_timeout(30000)" +
	"&_pragma=journal_mode(WAL)" +
	"&_pragma=foreign_keys(1)" +
	"&_pragma=synchronous(FULL)" +
	"&_txlock=immediate"

// OpenSQLite opens (creating if needed) the ledger at path, creating its
// parent directory with mode 0o700 and applying pending schema migrations.
// It fails with a message naming the path when the location is not
// writable, the file is not a ledger, or its schema is newer than this
// binary knows.
func OpenSQLite(ctx context.Context, path string, opts ...Option) (*Ledger, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: empty ledger path; pass --ledger PATH", fault.ErrUsage)
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
	o := applyOptions(opts)
	d := sqliteDialect{}
	l := &Ledger{db: sqlDB{DB: db, d: d}, d: d, loc: abs, path: abs, secrets: o.secrets}
	return open(ctx, l, func(ctx context.Context) error { return pingSQLite(ctx, db) }, o)
}

// pingSQLite opens the first connection, retrying while another process
// turns a new ledger to WAL mode. That switch upgrades a read lock to a
// write lock, and SQLite answers SQLITE_BUSY at once instead of calling the
// busy handler (it would risk deadlock), so busy_timeout does not cover
// it. Once the file is in WAL mode the pragma only reads and the race is
// gone.
func pingSQLite(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(10 * time.Second)
	wait := 5 * time.Millisecond
	for {
		err := db.PingContext(ctx)
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

// sqliteDialect is SQLite's side of dialect.
type sqliteDialect struct{}

var _ dialect = sqliteDialect{}

func (sqliteDialect) rebind(q string) string          { return q }
func (sqliteDialect) migrationSQL(m migration) string { return m.sqlite }
func (sqliteDialect) greatest() string                { return "max" }

func (sqliteDialect) clockNanos() string {
	return "CAST((julianday('now') - 2440587.5) * 86400000000000 AS INTEGER)"
}
func (sqliteDialect) least() string { return "min" }

func (sqliteDialect) schemaTable() string {
	return `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at INTEGER NOT NULL
) STRICT`
}

// probeWrite: in WAL mode BEGIN succeeds on a read-only file; this does not.
func (sqliteDialect) probeWrite() string {
	return `UPDATE schema_migrations SET version = version WHERE 0`
}

// serialize has nothing to do: every write transaction holds SQLite's one
// write lock from BEGIN (_txlock=immediate).
func (sqliteDialect) serialize(context.Context, *sql.Tx, string) error { return nil }

// notify has nothing to do: Changes notices every commit (PRAGMA
// data_version).
func (sqliteDialect) notify(context.Context, *sql.Tx, string) error { return nil }

// retryable is false: busy_timeout already waits for other writers.
func (sqliteDialect) retryable(error) bool { return false }

// snapshots begins n read transactions that all see the same committed
// state. A read transaction in WAL mode takes its snapshot at its first
// read; the write lock is held while all n take theirs, so no other
// connection or process can commit in between. The lock is released before
// the transactions are returned: writers wait only for the few reads that
// fix the snapshots, never for the report.
func (sqliteDialect) snapshots(ctx context.Context, db *sql.DB, n int) (txs []*sql.Tx, err error) {
	defer func() {
		if err != nil {
			for _, tx := range txs {
				_ = tx.Rollback()
			}
			txs = nil
		}
	}()
	lock, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (connParams)
	if err != nil {
		return nil, err
	}
	defer func() { _ = lock.Rollback() }()
	for range n {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return txs, err
		}
		txs = append(txs, tx)
		if _, err := readVersion(ctx, tx); err != nil {
			return txs, err
		}
	}
	return txs, nil
}

// openError explains a failure to open or first use the file.
func (sqliteDialect) openError(path string, err error) error {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM:
		return notWritable(path, err)
	case sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("ledger %s is not a relcap ledger (not an SQLite database): %w; pass --ledger PATH or move the file away", path, err)
	case sqlite3.SQLITE_CORRUPT:
		return fmt.Errorf("ledger %s is damaged: %w; restore it from a backup or pass --ledger PATH", path, err)
	}
	return fmt.Errorf("open ledger %s: %w", path, err)
}

// fail wraps an error from operation op with the ledger path, and says what
// to do when the cause is one the user can fix.
func (sqliteDialect) fail(path, op string, err error) error {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return fmt.Errorf("ledger %s is not writable: %s: %w; pass --ledger PATH or fix permissions", path, op, err)
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("ledger %s: %s: %w; free disk space and retry", path, op, err)
	}
	return fmt.Errorf("ledger %s: %s: %w", path, op, err)
}
