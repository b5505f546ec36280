package store

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/relcap/relcap/adapters/internal/flock"
	"github.com/relcap/relcap/workflow/oplock"
)

// An SQLite ledger's operation locks are flock(2) locks on files in a
// directory beside the ledger, <ledger>.locks/, one file per scope. Like
// PostgreSQL's advisory locks they belong to the holder's process: the
// kernel drops a flock when the last descriptor of its open file goes,
// which a process killed with SIGKILL does too. Every relcap that opens the
// same ledger file (the only way to share an SQLite ledger: one machine,
// or one network file system that honours flock) derives the same file
// name from the scope, so they exclude each other; two opens within one
// process exclude each other as well (a flock belongs to the open file
// description), as two connections' advisory locks do.
//
// The holder writes who it is (lockFileHolder) into the file it holds, so
// a refused process reads it and names the holder as PostgreSQL's refusal
// does. The file is never removed: removing a file another process is
// about to flock would let two processes lock two different files of one
// name. An empty file is a lock nobody holds, or one being written.

// locksDir is the directory of the operation lock files of the SQLite
// ledger at ledgerPath.
func locksDir(ledgerPath string) string { return ledgerPath + ".locks" }

// lockFileName is scope's lock file in dir: the same 64 bits of SHA-256
// as the PostgreSQL advisory key, in hex, so a scope's key (any text) never
// reaches the file system.
func lockFileName(dir string, scope oplock.Scope) string {
	var b [8]byte
	k := uint64(lockKey(scope))
	for i := range b {
		b[i] = byte(k >> (56 - 8*i))
	}
	return filepath.Join(dir, string(scope.Kind)+"-"+hex.EncodeToString(b[:])+".lock")
}

// lockFileHolder is what a lock file says about its holder.
type lockFileHolder struct {
	Kind  oplock.Kind `json:"kind"`
	Scope string      `json:"scope"`
	Actor string      `json:"actor"`
	What  string      `json:"what"`
	Since time.Time   `json:"since"`
	Host  string      `json:"host"`
	PID   int         `json:"pid"`
}

// tryLock: see TryLock.
func (sqliteDialect) tryLock(ctx context.Context, s *Ledger, scope oplock.Scope, h oplock.Holder) (func(), error) {
	dir := locksDir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("take %s: the ledger's lock directory %s: %w", scope, dir, err)
	}
	name := lockFileName(dir, scope)
	for attempt := 1; ; attempt++ {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("take %s: open lock file %s: %w", scope, name, err)
		}
		got, err := flock.TryLock(f)
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("take %s: lock %s: %w", scope, name, err)
		}
		if got {
			sc := s.secrets
			desc, err := json.Marshal(lockFileHolder{Kind: scope.Kind, Scope: sc.Scrub(scope.Key), Actor: sc.Scrub(h.Actor),
				What: sc.Scrub(h.What), Since: h.Since.UTC(), Host: sc.Scrub(h.Host), PID: h.PID})
			if err == nil {
				err = writeHolder(f, desc)
			}
			if err != nil {
				_ = f.Close() // closing releases the flock
				return nil, fmt.Errorf("take %s: write lock file %s: %w", scope, name, err)
			}
			var once sync.Once
			return func() {
				once.Do(func() {
					// Emptied before it is released, so nobody reads a
					// holder that has gone; closing releases it even if
					// the truncate fails.
					_ = f.Truncate(0)
					_ = flock.Unlock(f)
					_ = f.Close()
				})
			}, nil
		}
		holder, described := readLockFile(f)
		_ = f.Close()
		if !described && attempt < describeAttempts {
			// Taken a moment ago; its holder is writing who it is.
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("take %s: %w", scope, ctx.Err())
			case <-time.After(describePause):
			}
			continue
		}
		le := &oplock.LockedError{Scope: scope, Holder: holder, LockFile: name}
		if described {
			le.Age = time.Since(holder.Since)
		}
		return nil, le
	}
}

// writeHolder replaces f's content with desc, durably enough for another
// process to read it (no fsync: a lock file outlives no reboot's worth of
// meaning).
func writeHolder(f *os.File, desc []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(append(desc, '\n'), 0)
	return err
}

// readLockFile reads the holder a lock file names; described is false
// when it names none yet (empty, or half written).
func readLockFile(f *os.File) (oplock.Holder, bool) {
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil || len(b) == 0 {
		return oplock.Holder{}, false
	}
	var h lockFileHolder
	if err := json.Unmarshal(b, &h); err != nil || h.Actor == "" {
		return oplock.Holder{}, false
	}
	return oplock.Holder{Actor: h.Actor, What: h.What, Since: h.Since.UTC(), Host: h.Host, PID: h.PID}, true
}
