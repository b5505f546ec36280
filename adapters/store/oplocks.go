package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/oplock"
)

var _ workflow.OperationLocks = (*Ledger)(nil)

// TryLock takes the operation lock of scope for holder (one apply per
// Terraform state, one promotion per environment, across every relcap
// sharing the ledger), or refuses at once with a *oplock.LockedError
// naming the live holder. The ledger fills in holder.Host and holder.PID
// (this machine, this process) when they are empty.
//
// On PostgreSQL the lock is a session advisory lock held on a connection
// of its own for as long as the operation runs: PostgreSQL releases it
// when unlock closes that connection, and just as well when the holder's
// process dies (killed with SIGKILL, its machine gone) and the server sees
// the connection drop. Who holds it is kept in operation_locks, written by
// the holder on that same connection; a refused process reads the row
// joined with pg_locks, so a row whose backend no longer holds the lock
// (its holder died) is never shown, and the next holder overwrites it.
// Should that connection drop while the operation still runs (the network
// to the database lost), the lock is gone without the operation knowing;
// Terraform's own state lock, which relcap never bypasses, still guards
// the state then.
//
// On SQLite the lock is a flock(2) on a file in <ledger>.locks/ (see
// oplocks_sqlite.go), held by the process as PostgreSQL's is by its
// connection and gone with it, killed or not; the holder is written in
// the file.
func (s *Ledger) TryLock(ctx context.Context, scope oplock.Scope, holder oplock.Holder) (func(), error) {
	if scope.Kind == "" || scope.Key == "" {
		return nil, fmt.Errorf("%w: an operation lock needs a kind and a key (got %q, %q)", fault.ErrUsage, scope.Kind, scope.Key)
	}
	if holder.Host == "" {
		holder.Host, _ = os.Hostname()
	}
	if holder.PID == 0 {
		holder.PID = os.Getpid()
	}
	if holder.Since.IsZero() {
		holder.Since = time.Now()
	}
	return s.d.tryLock(ctx, s, scope, holder)
}

// lockKey is the advisory lock key of scope: the first 64 bits of a
// SHA-256 of its kind and key, so every process derives the same key and
// two scopes collide with a chance of one in 2^64. PostgreSQL keeps
// one-bigint advisory keys (objsubid 1) apart from the two-int4 keys of
// dialect.serialize (objsubid 2), so they never meet either.
func lockKey(scope oplock.Scope) int64 {
	sum := sha256.Sum256([]byte("relcap operation lock\x00" + string(scope.Kind) + "\x00" + scope.Key))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// describeAttempts bounds how often a refused process looks for the
// holder's description before saying it has none: a holder writes it
// right after it takes the lock, so it is only ever briefly missing.
const (
	describeAttempts = 20
	describePause    = 25 * time.Millisecond
)

// tryLock takes the advisory lock on a connection opened for it alone (not
// one of the pool's: a pooled connection would outlive the operation and
// keep the lock), writes the holder's row on it, and returns the unlock
// that deletes the row and closes the connection.
func (p *postgresDialect) tryLock(ctx context.Context, s *Ledger, scope oplock.Scope, h oplock.Holder) (func(), error) {
	op := fmt.Sprintf("take %s", scope)
	cfg := p.cfg.Copy()
	// Shown in pg_stat_activity: what this connection is for.
	cfg.RuntimeParams["application_name"] = "relcap " + string(scope.Kind) + " lock"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, p.openError(s.loc, err)
	}
	fail := func(err error) error {
		_ = conn.Close(context.WithoutCancel(ctx))
		return s.fail(op, err)
	}
	key := lockKey(scope)
	for attempt := 1; ; attempt++ {
		var got bool
		var backend int32
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1), pg_backend_pid()`, key).Scan(&got, &backend); err != nil {
			return nil, fail(err)
		}
		if got {
			since, err := timeValue(h.Since)
			if err != nil {
				return nil, fail(err)
			}
			sc := s.secrets
			_, err = conn.Exec(ctx, `INSERT INTO operation_locks (lock_key, kind, scope, actor, what, since, host, client_pid, backend_pid)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (lock_key) DO UPDATE SET kind = excluded.kind, scope = excluded.scope, actor = excluded.actor, what = excluded.what,
	since = excluded.since, host = excluded.host, client_pid = excluded.client_pid, backend_pid = excluded.backend_pid`,
				key, string(scope.Kind), sc.Scrub(scope.Key), sc.Scrub(h.Actor), sc.Scrub(h.What), since, sc.Scrub(h.Host), h.PID, backend)
			if err != nil {
				return nil, fail(err)
			}
			var once sync.Once
			return func() {
				once.Do(func() {
					// Closing the connection releases the lock even if the
					// delete fails; a row left behind is stale, and ignored.
					uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
					defer cancel()
					_, _ = conn.Exec(uctx, `DELETE FROM operation_locks WHERE lock_key = $1 AND backend_pid = pg_backend_pid()`, key)
					_ = conn.Close(uctx)
				})
			}, nil
		}
		le, held, err := readHolder(ctx, conn, key, scope)
		switch {
		case err != nil:
			return nil, fail(err)
		case !held:
			// Released between the try and the look: try again.
			continue
		case le.Holder.Actor == "" && attempt < describeAttempts:
			// Taken a moment ago; its holder is writing who it is.
			select {
			case <-ctx.Done():
				return nil, fail(ctx.Err())
			case <-time.After(describePause):
			}
			continue
		}
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, le
	}
}

// readHolder reads who holds the advisory lock key: held is false when
// nobody does any more. A row of operation_locks counts only when its
// backend is the one pg_locks shows holding the lock in this database;
// with no such row the LockedError names the backend alone.
func readHolder(ctx context.Context, conn *pgx.Conn, key int64, scope oplock.Scope) (*oplock.LockedError, bool, error) {
	u := uint64(key)
	var backend int32
	var actor, what, host *string
	var since *int64
	var pid *int32
	err := conn.QueryRow(ctx, `SELECT l.pid, o.actor, o.what, o.since, o.host, o.client_pid
FROM pg_locks l
LEFT JOIN operation_locks o ON o.lock_key = $1 AND o.backend_pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
	AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND l.classid = $2::bigint::oid AND l.objid = $3::bigint::oid
LIMIT 1`, key, int64(u>>32), int64(u&0xffffffff)).Scan(&backend, &actor, &what, &since, &host, &pid)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	le := &oplock.LockedError{Scope: scope, Backend: int(backend)}
	if actor != nil {
		le.Holder = oplock.Holder{Actor: *actor, What: *what, Since: time.Unix(0, *since).UTC(), Host: *host, PID: int(*pid)}
		// By this machine's clock: the two machines' clocks may differ a
		// little, which the message's "since" shows as it was written.
		le.Age = time.Since(le.Holder.Since)
	}
	return le, true, nil
}
