package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestDatabasesAreSeparateAndEmpty: every test gets its own empty
// database on a real server it may create tables in.
func TestDatabasesAreSeparateAndEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := Database(t), Database(t)
	require.NotEqual(t, a, b)
	ca, err := pgx.Connect(ctx, a)
	require.NoError(t, err)
	defer ca.Close(ctx)
	cb, err := pgx.Connect(ctx, b)
	require.NoError(t, err)
	defer cb.Close(ctx)

	_, err = ca.Exec(ctx, "CREATE TABLE t (x int)")
	require.NoError(t, err)
	var n int
	require.NoError(t, cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n))
	require.Zero(t, n, "b does not see a's table")
	var version int
	require.NoError(t, ca.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version))
	require.GreaterOrEqual(t, version, 130000, "DROP DATABASE … WITH (FORCE) needs PostgreSQL 13")
}

// TestUnsearchableNamesTheDirectoryInTheWay: a cluster run as another user
// needs to enter every directory above its own; t.TempDir's are private.
func TestUnsearchableNamesTheDirectoryInTheWay(t *testing.T) {
	t.Parallel()
	// Not t.TempDir: its directories are all private.
	base, err := os.MkdirTemp("", "pgtest-unsearchable-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	private := filepath.Join(base, "private")
	require.NoError(t, os.Mkdir(private, 0o700))
	inside := filepath.Join(private, "inside")
	require.NoError(t, os.Mkdir(inside, 0o755))
	other := &syscall.Credential{Uid: uint32(os.Getuid()) + 4242, Gid: uint32(os.Getgid()) + 4242}
	require.Equal(t, private, unsearchable(inside, other))
	require.NoError(t, os.Chmod(private, 0o711))
	require.Empty(t, unsearchable(inside, other), "every user may enter it now: %s", unsearchable(inside, other))
}
