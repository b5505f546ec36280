package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/oplock"
)

var (
	applyStaging = oplock.Scope{Kind: oplock.Apply, Key: "web:infra/staging@default"}
	since        = time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
)

// lockHelperEnv, set to a ledger's location (a PostgreSQL URL or an
// SQLite file), makes the test binary a helper
// process (see TestMain) that takes the apply lock of applyStaging as
// "child", says "locked" on stdout and holds it until it is killed.
const lockHelperEnv = "RELCAP_TEST_LOCK_HELPER"

func holdLockHelper(url string) int {
	ctx := context.Background()
	open := OpenSQLite
	if strings.HasPrefix(url, "postgres") {
		open = OpenPostgres
	}
	l, err := open(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := l.TryLock(ctx, applyStaging, oplock.Holder{Actor: "child", What: "apply plan c41dc41dc41d in staging", Since: since}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	select {} // until killed
}

func lockedError(t *testing.T, err error) *oplock.LockedError {
	t.Helper()
	require.ErrorIs(t, err, fault.ErrLocked)
	require.ErrorIs(t, err, fault.ErrBlocked)
	var le *oplock.LockedError
	require.True(t, errors.As(err, &le), "%v", err)
	return le
}

// lockRows counts operation_locks rows.
func lockRows(t *testing.T, l *Ledger) int {
	t.Helper()
	var n int
	require.NoError(t, l.db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM operation_locks`).Scan(&n))
	return n
}

// TestPostgresOperationLockRefusesASecondHolderNamingTheFirst: two
// processes' ledgers on one database; the second is refused at once,
// told who holds the lock, for what and since when; another scope is
// another lock; once the first unlocks, the second takes it.
func TestPostgresOperationLockRefusesASecondHolderNamingTheFirst(t *testing.T) {
	t.Parallel()
	loc := pgtest.Database(t)
	ana, bob := postgresBackend.openAt(t, loc), postgresBackend.openAt(t, loc)
	ctx := t.Context()

	unlock, err := ana.TryLock(ctx, applyStaging, oplock.Holder{Actor: "ana", What: "apply plan 1a2b3c4d5e6f in staging", Since: since})
	require.NoError(t, err)
	start := time.Now()
	_, err = bob.TryLock(ctx, applyStaging, oplock.Holder{Actor: "bob", What: "apply plan ffff in staging", Since: time.Now()})
	require.Less(t, time.Since(start), time.Second, "refused at once, not waited")
	le := lockedError(t, err)
	host, _ := os.Hostname()
	require.Equal(t, oplock.Holder{Actor: "ana", What: "apply plan 1a2b3c4d5e6f in staging", Since: since, Host: host, PID: os.Getpid()}, le.Holder)
	require.Equal(t, applyStaging, le.Scope)
	require.Greater(t, le.Age, time.Duration(0))
	msg := err.Error()
	for _, want := range []string{"the apply lock of Terraform state web:infra/staging@default is held by ana", "on " + host,
		"apply plan 1a2b3c4d5e6f in staging", "since 2026-12-01T13:00:00Z (", " ago)", "wait until it finishes", "ask ana"} {
		require.Contains(t, msg, want)
	}
	require.NotContains(t, msg, "force-unlock", "this lock has no force option")

	// Other scopes are other locks: the promotion of the same key, and
	// another state.
	for _, other := range []oplock.Scope{{Kind: oplock.Promote, Key: applyStaging.Key}, {Kind: oplock.Apply, Key: "web:infra/prod@default"}} {
		u, err := bob.TryLock(ctx, other, oplock.Holder{Actor: "bob", What: "other", Since: since})
		require.NoError(t, err, other)
		u()
	}

	unlock()
	unlock() // twice is harmless
	require.Equal(t, 0, lockRows(t, bob), "unlock removes the holder's row")
	unlockBob, err := bob.TryLock(ctx, applyStaging, oplock.Holder{Actor: "bob", What: "apply plan ffff in staging", Since: since})
	require.NoError(t, err, "the next one gets it")
	_, err = ana.TryLock(ctx, applyStaging, oplock.Holder{Actor: "ana", What: "again", Since: since})
	require.Equal(t, "bob", lockedError(t, err).Holder.Actor)
	unlockBob()

	_, err = ana.TryLock(ctx, oplock.Scope{Kind: oplock.Apply}, oplock.Holder{Actor: "ana"})
	require.ErrorIs(t, err, fault.ErrUsage)
}

// TestPostgresOperationLockGoesWithItsHoldersConnection: when the
// holder's connection drops (the server ends it, as when its machine
// goes), the lock is free for the next holder at once, and the dead
// holder's row, still there, is never shown: it is overwritten.
func TestPostgresOperationLockGoesWithItsHoldersConnection(t *testing.T) {
	t.Parallel()
	loc := pgtest.Database(t)
	ana, bob := postgresBackend.openAt(t, loc), postgresBackend.openAt(t, loc)
	ctx := t.Context()

	unlock, err := ana.TryLock(ctx, applyStaging, oplock.Holder{Actor: "ana", What: "apply", Since: since})
	require.NoError(t, err)
	defer unlock()
	var backend int
	require.NoError(t, bob.db.QueryRowContext(ctx, `SELECT backend_pid FROM operation_locks`).Scan(&backend))
	var ended bool
	require.NoError(t, bob.db.QueryRowContext(ctx, `SELECT pg_terminate_backend($1, 5000)`, backend).Scan(&ended))
	require.True(t, ended)
	require.Equal(t, 1, lockRows(t, bob), "the dead holder's row is left behind")

	unlockBob, err := bob.TryLock(ctx, applyStaging, oplock.Holder{Actor: "bob", What: "apply after ana", Since: since})
	require.NoError(t, err, "released with the connection")
	_, err = ana.TryLock(ctx, applyStaging, oplock.Holder{Actor: "ana", What: "again", Since: since})
	le := lockedError(t, err)
	require.Equal(t, "bob", le.Holder.Actor, "the live holder, not the stale row")
	require.Equal(t, "apply after ana", le.Holder.What)
	unlockBob()
}

// TestPostgresOperationLockOfAKilledProcessIsReleasedWithinASecond: a
// real child process (this test binary, re-executed) holds the lock and
// is killed with SIGKILL, so nothing of it runs to unlock: the next
// holder gets the lock within a second.
func TestPostgresOperationLockOfAKilledProcessIsReleasedWithinASecond(t *testing.T) {
	t.Parallel()
	loc := pgtest.Database(t)
	l := postgresBackend.openAt(t, loc)
	ctx := t.Context()

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), lockHelperEnv+"="+loc)
	var stderr strings.Builder
	child.Stderr = &stderr
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "child: %s", stderr.String())
	require.Equal(t, "locked\n", line)

	_, err = l.TryLock(ctx, applyStaging, oplock.Holder{Actor: "parent", What: "apply", Since: since})
	le := lockedError(t, err)
	require.Equal(t, "child", le.Holder.Actor)
	require.Equal(t, child.Process.Pid, le.Holder.PID, "names the holding process")

	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	var unlock func()
	for unlock == nil {
		u, err := l.TryLock(ctx, applyStaging, oplock.Holder{Actor: "parent", What: "apply", Since: since})
		if err == nil {
			unlock = u
			break
		}
		require.Equal(t, "child", lockedError(t, err).Holder.Actor)
		require.Less(t, time.Since(killed), time.Second, "still held a second after the holder was killed")
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("released %s after SIGKILL", time.Since(killed).Round(time.Millisecond))
	unlock()
}

// TestOperationLockRefusesASecondHolderOnEveryBackend: two ledgers
// opened on one location (two processes' view of it) exclude each other
// on both backends: the second is refused at once naming the first (who,
// where, for what, since when); another scope is another lock; once the
// first unlocks, the second takes it.
func TestOperationLockRefusesASecondHolderOnEveryBackend(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		loc := b.newLocation(t)
		ana, bob := b.openAt(t, loc), b.openAt(t, loc)
		ctx := t.Context()
		unlock, err := ana.TryLock(ctx, applyStaging, oplock.Holder{Actor: "ana", What: "apply plan 1a2b3c4d5e6f in staging", Since: since})
		require.NoError(t, err)
		start := time.Now()
		_, err = bob.TryLock(ctx, applyStaging, oplock.Holder{Actor: "bob", What: "apply plan ffff in staging", Since: time.Now()})
		require.Less(t, time.Since(start), time.Second, "refused at once, not waited")
		le := lockedError(t, err)
		host, _ := os.Hostname()
		require.Equal(t, oplock.Holder{Actor: "ana", What: "apply plan 1a2b3c4d5e6f in staging", Since: since, Host: host, PID: os.Getpid()}, le.Holder)
		require.Contains(t, err.Error(), "the apply lock of Terraform state web:infra/staging@default is held by ana")

		for _, other := range []oplock.Scope{{Kind: oplock.Promote, Key: applyStaging.Key}, {Kind: oplock.Run, Key: "web-staging-20261201-a1b2c3"}} {
			u, err := bob.TryLock(ctx, other, oplock.Holder{Actor: "bob", What: "other", Since: since})
			require.NoError(t, err, other)
			u()
		}
		unlock()
		unlock() // twice is harmless
		unlockBob, err := bob.TryLock(ctx, applyStaging, oplock.Holder{Actor: "bob", What: "apply plan ffff in staging", Since: since})
		require.NoError(t, err, "the next one gets it")
		_, err = ana.TryLock(ctx, applyStaging, oplock.Holder{Actor: "ana", What: "again", Since: since})
		require.Equal(t, "bob", lockedError(t, err).Holder.Actor)
		unlockBob()
	})
}

// TestSQLiteOperationLockOfAKilledProcessIsReleased: a real child process
// (this test binary, re-executed) holds the apply lock of an SQLite
// ledger; a second is refused naming the child's pid; the child is killed
// with SIGKILL, so nothing of it runs to unlock, and the lock is free at
// once (the kernel drops a dead process's flocks). Before, an SQLite
// ledger took no lock at all and both held it.
func TestSQLiteOperationLockOfAKilledProcessIsReleased(t *testing.T) {
	t.Parallel()
	loc := sqliteBackend.newLocation(t)
	l := sqliteBackend.openAt(t, loc)
	ctx := t.Context()

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), lockHelperEnv+"="+loc)
	var stderr strings.Builder
	child.Stderr = &stderr
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "child: %s", stderr.String())
	require.Equal(t, "locked\n", line)

	_, err = l.TryLock(ctx, applyStaging, oplock.Holder{Actor: "parent", What: "apply", Since: since})
	le := lockedError(t, err)
	require.Equal(t, "child", le.Holder.Actor)
	require.Equal(t, "apply plan c41dc41dc41d in staging", le.Holder.What)
	require.Equal(t, child.Process.Pid, le.Holder.PID, "names the holding process")
	require.Contains(t, err.Error(), fmt.Sprintf("(relcap pid %d on ", child.Process.Pid))

	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	unlock, err := l.TryLock(ctx, applyStaging, oplock.Holder{Actor: "parent", What: "apply", Since: since})
	require.NoError(t, err, "the killed holder's lock is gone with it")
	unlock()
	files, err := os.ReadDir(loc + ".locks")
	require.NoError(t, err)
	require.Len(t, files, 1, "one lock file per scope, beside the ledger")
	b, err := os.ReadFile(filepath.Join(loc+".locks", files[0].Name()))
	require.NoError(t, err)
	require.Empty(t, b, "unlock empties the holder's description")
}
