package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestThreeCaptainsOneSQLiteLedgerOneApplyAtATime: three relcap processes
// apply one release's plan at once on one SQLite ledger file. Exactly one
// applies (its Terraform apply takes a while); the other two are refused
// at once, exit 3, naming the holder (actor, pid, what, since), and apply
// nothing. The holder is killed with
// SIGKILL: its lock goes with it, and the next apply takes it. Before, an
// SQLite ledger took no operation lock: all three ran the release and the
// last one's save won.
func TestThreeCaptainsOneSQLiteLedgerOneApplyAtATime(t *testing.T) {
	t.Parallel()
	cfg, tfEnv, _ := tfRepo(t, 0, false)
	ledger := filepath.Join(t.TempDir(), "shared", "ledger.db")
	root, slow := filepath.Join(filepath.Dir(cfg), "infra/staging"), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.tf"), fmt.Appendf(nil, slowRoot, slow), 0o644))
	t.Cleanup(func() {
		// Let a provisioner still waiting end.
		_ = os.WriteFile(filepath.Join(slow, "go-on"), nil, 0o644)
	})
	alice := captain{actor: "alice", data: t.TempDir(), env: tfEnv, ledger: ledger}
	others := []captain{
		{actor: "bob", data: t.TempDir(), env: tfEnv, ledger: ledger},
		{actor: "carol", data: t.TempDir(), env: tfEnv, ledger: ledger},
	}

	plan, holder, exited := applyHeldAtTheProvisioner(t, alice, cfg, slow)

	// bob and carol at once.
	type outcome struct {
		code     int
		out, err string
	}
	results := make([]outcome, len(others))
	var wg sync.WaitGroup
	for i, c := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out, errOut := c.run(t, "-c", cfg, "apply", "--plan", plan.Fingerprint)
			results[i] = outcome{code, out, errOut}
		}()
	}
	wg.Wait()
	for i, r := range results {
		t.Logf("%s was refused:\n%s", others[i].actor, r.err)
		require.Equal(t, exitBlocked, r.code, r.out+r.err)
		require.Contains(t, r.err, "is held by alice (relcap pid "+strconv.Itoa(holder.Process.Pid)+" on ")
		require.Contains(t, r.err, "since "+time.Now().UTC().Format("2006-01-02T"))
		require.NotContains(t, r.out, "applied plan")
	}

	// alice's relcap dies without a word: the lock goes with it. Her
	// Terraform does not (it runs detached): bob's apply waits for it and
	// records its result, and the side effect happens once.
	require.NoError(t, holder.Process.Signal(syscall.SIGKILL))
	<-exited
	go func() {
		time.Sleep(2 * time.Second)
		_ = os.WriteFile(filepath.Join(slow, "go-on"), nil, 0o644)
	}()
	code, out, errOut := others[0].run(t, "-c", cfg, "apply", "--plan", plan.Fingerprint)
	t.Logf("bob after alice was killed (%d):\n%s%s", code, out, errOut)
	require.NotContains(t, out+errOut, "is held by alice", "the killed holder's lock went with it")
	require.Equal(t, 0, code, out+errOut)
	effects, err := os.ReadFile(filepath.Join(slow, "effects"))
	require.NoError(t, err)
	require.Equal(t, "once\n", string(effects), "the plan was applied once, by alice's Terraform")
}
