package store

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// openTest opens a new SQLite ledger, for tests of what only SQLite has.
func openTest(t *testing.T) *Ledger {
	t.Helper()
	return sqliteBackend.openNew(t)
}

func TestOpenSQLiteCreatesPrivateDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data", "relcap")
	l, err := OpenSQLite(t.Context(), filepath.Join(dir, "ledger.db"))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}

func TestOpenSQLiteAppliesPragmas(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	// Several connections, since every pooled connection must have them.
	conns := make([]*sql.Conn, 3)
	for i := range conns {
		c, err := l.db.Conn(t.Context())
		require.NoError(t, err)
		conns[i] = c
	}
	for _, c := range conns {
		var mode string
		var busy, fk, sync int
		require.NoError(t, c.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode))
		require.NoError(t, c.QueryRowContext(t.Context(), "PRAGMA busy_timeout").Scan(&busy))
		require.NoError(t, c.QueryRowContext(t.Context(), "PRAGMA foreign_keys").Scan(&fk))
		require.NoError(t, c.QueryRowContext(t.Context(), "PRAGMA synchronous").Scan(&sync))
		require.Equal(t, "wal", mode)
		require.Equal(t, 30000, busy)
		require.Equal(t, 1, fk)
		require.Equal(t, 2, sync) // FULL
		require.NoError(t, c.Close())
	}
}

func TestOpenSQLitePathWithQuestionMark(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "odd?dir #1%", "ledger.db")
	l, err := OpenSQLite(t.Context(), path)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, err = os.Stat(path)
	require.NoError(t, err, "the file must be created at the path given, not at a prefix of it")
}

func TestOpenSQLiteRefusesNonLedgerFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	_, err := OpenSQLite(t.Context(), dir)
	require.ErrorContains(t, err, "is a directory")

	junk := filepath.Join(dir, "junk.db")
	require.NoError(t, os.WriteFile(junk, []byte(strings.Repeat("not a database ", 200)), 0o600))
	_, err = OpenSQLite(t.Context(), junk)
	require.ErrorContains(t, err, "ledger "+junk+" is not a relcap ledger")

	_, err = OpenSQLite(t.Context(), "")
	require.ErrorIs(t, err, fault.ErrUsage)
}

// requireNotWritable checks the message a user sees: the path, the cause
// and what to do.
func requireNotWritable(t *testing.T, err error, path string) {
	t.Helper()
	require.Error(t, err)
	msg := err.Error()
	require.Truef(t, strings.HasPrefix(msg, "ledger "+path+" is not writable: "), "got %q", msg)
	require.Truef(t, strings.HasSuffix(msg, "; pass --ledger PATH or fix permissions"), "got %q", msg)
}

func TestOpenSQLiteParentIsAFile(t *testing.T) {
	t.Parallel()
	// Works as root too: no permission bit is involved.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	path := filepath.Join(file, "relcap", "ledger.db")
	_, err := OpenSQLite(t.Context(), path)
	requireNotWritable(t, err, path)
}

// makeReadOnly makes path unwritable: with permission bits for an ordinary
// user, and for root (whom permission bits do not stop) with the immutable
// attribute, skipping where the file system does not support it.
func makeReadOnly(t *testing.T, path string, perm os.FileMode) {
	t.Helper()
	if os.Geteuid() != 0 {
		require.NoError(t, os.Chmod(path, perm))
		t.Cleanup(func() { _ = os.Chmod(path, 0o700) })
		return
	}
	if out, err := exec.CommandContext(t.Context(), "chattr", "+i", path).CombinedOutput(); err != nil {
		t.Skipf("running as root and chattr +i is unavailable here (%v: %s)", err, out)
	}
	t.Cleanup(func() {
		// t.Context is already cancelled in cleanups.
		_ = exec.CommandContext(context.Background(), "chattr", "-i", path).Run()
	})
}

func TestOpenSQLiteReadOnlyDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ro")
	require.NoError(t, os.Mkdir(dir, 0o700))
	makeReadOnly(t, dir, 0o500)
	path := filepath.Join(dir, "ledger.db")
	_, err := OpenSQLite(t.Context(), path)
	requireNotWritable(t, err, path)
}

func TestOpenSQLiteReadOnlyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := OpenSQLite(t.Context(), path)
	require.NoError(t, err)
	require.NoError(t, l.SaveRelease(t.Context(), workflow.NewRelease("r1", "web", "prod", "img", "ana", t0)))
	require.NoError(t, l.Close())
	makeReadOnly(t, path, 0o400)

	_, err = OpenSQLite(t.Context(), path)
	requireNotWritable(t, err, path)
}
