package terraform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/relcap/relcap/adapters/internal/flock"
)

// lockPoll is how often a waiting operation retries the working-directory
// lock. flock(2) cannot be interrupted by a context, so waiting polls.
const lockPoll = 100 * time.Millisecond

// lockWorkdir serializes relcap operations on one Terraform working
// directory within this machine, across processes, with flock(2) on a file in
// the plan store. The key is the directory rather than directory+workspace
// because the selected workspace is itself per directory
// (.terraform/environment) and terraform apply of a saved plan uses the
// selected workspace's state: an apply in one workspace must not see another
// operation switch the workspace under it. The state boundary (dir,
// workspace) is therefore covered too; across machines Terraform's own state
// lock (or the PostgreSQL advisory lock of a team ledger) takes over.
//
// On contention it prints "waiting for another relcap <op> on <dir>
// (<workspace>)" to the adapter's stderr, naming the holder, and waits until
// the lock is free or ctx ends; the returned error then wraps ctx's error.
func (a *Adapter) lockWorkdir(ctx context.Context, t target, op string) (unlock func(), err error) {
	sum := sha256.Sum256([]byte(t.dir))
	path := filepath.Join(a.planDir, "workdir-"+hex.EncodeToString(sum[:8])+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening relcap lock for %s: %w", t.dir, err)
	}
	locked, err := flock.TryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("relcap lock for %s: %w", t.dir, err)
	}
	if !locked {
		holderOp, holderWs := "operation", t.workspace
		if b, err := os.ReadFile(path); err == nil {
			if fs := strings.Fields(string(b)); len(fs) >= 2 {
				holderOp, holderWs = fs[0], fs[1]
			}
		}
		a.notify(ctx, "waiting for another relcap %s on %s (%s)", holderOp, t.dir, holderWs)
		tick := time.NewTicker(lockPoll)
		defer tick.Stop()
		for !locked {
			select {
			case <-ctx.Done():
				f.Close()
				return nil, fmt.Errorf("waiting for another relcap %s on %s (%s): %w", holderOp, t.dir, holderWs, ctx.Err())
			case <-tick.C:
			}
			if locked, err = flock.TryLock(f); err != nil {
				f.Close()
				return nil, fmt.Errorf("relcap lock for %s: %w", t.dir, err)
			}
		}
	}
	// Say who holds it, for the notice of whoever waits next.
	_ = f.Truncate(0)
	_, _ = f.WriteAt(fmt.Appendf(nil, "%s %s pid=%d dir=%s\n", op, t.workspace, os.Getpid(), t.dir), 0)
	return func() {
		_ = flock.Unlock(f)
		_ = f.Close()
	}, nil
}
