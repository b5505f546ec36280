package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow"
)

// sideEffectRoot's first resource has a side effect outside Terraform's
// state (a line appended to %[1]s/effects), then waits until the file
// %[1]s/go-on exists; a second resource follows it. The directory is
// outside the root, whose files the plan's fingerprint covers.
const sideEffectRoot = `
resource "terraform_data" "first" {
  provisioner "local-exec" {
    working_dir = %[1]q
    command     = "echo once >> effects; echo $$ > provisioner.pid; while [ ! -e go-on ]; do sleep 0.1; done"
  }
}

resource "terraform_data" "second" {
  input      = "after"
  depends_on = [terraform_data.first]
}
`

// applyKill is a staging root with a side effect, planned and approved,
// on alice's machine (the embedded ledger in data).
type applyKill struct {
	cfg, root, side, data string
	env                   []string
	fp, release           string
}

func newApplyKill(t *testing.T) *applyKill {
	t.Helper()
	cfg, tfEnv, _ := tfRepo(t, 1, true)
	k := &applyKill{cfg: cfg, root: filepath.Join(filepath.Dir(cfg), "infra/staging"), side: t.TempDir(), data: t.TempDir(), env: tfEnv}
	require.NoError(t, os.WriteFile(filepath.Join(k.root, "main.tf"), fmt.Appendf(nil, sideEffectRoot, k.side), 0o644))
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(k.side, "go-on"), nil, 0o644) })
	code, out, errOut := k.run(t, "--actor", "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan struct{ Fingerprint, Release string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	k.fp, k.release = plan.Fingerprint, plan.Release
	code, _, errOut = k.run(t, "--actor", "bob", "approve", "--plan", k.fp, "--comment", "ok")
	require.Equal(t, 0, code, errOut)
	return k
}

func (k *applyKill) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return invokeEnv(t, k.data, k.env, append([]string{"-c", k.cfg}, args...)...)
}

// killApply starts relcap apply in a process of its own and kills it with
// SIGKILL once the side effect happened, while Terraform waits in the
// provisioner; it returns the apply's run directory.
func (k *applyKill) killApply(t *testing.T) string {
	t.Helper()
	cmd, output := k.start(t, "--actor", "alice", "apply", "--plan", k.fp)
	if !assertEventually(func() bool { _, err := os.Stat(filepath.Join(k.side, "provisioner.pid")); return err == nil }, 120*time.Second) {
		_ = cmd.Process.Kill()
		t.Fatalf("the apply never reached its side effect:\n%s", output())
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait() // killed
	runs, err := filepath.Glob(filepath.Join(k.data, "state", "relcap", "plans", "runs", k.fp, "*"))
	require.NoError(t, err)
	require.Len(t, runs, 1, "the apply's run is kept beside the plans: %s", output())
	return runs[0]
}

// start starts relcap in a process of its own, its output going to a
// pipe that dies with it, as a terminal's would; output reads what it
// printed so far.
func (k *applyKill) start(t *testing.T, args ...string) (*exec.Cmd, func() string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-c", k.cfg}, args...)...)
	cmd.Env = append(append(os.Environ(), relcapProcessEnv+"=1", "XDG_DATA_HOME="+k.data, "XDG_STATE_HOME="+filepath.Join(k.data, "state"),
		"XDG_CACHE_HOME="+filepath.Join(k.data, "cache"), "USER=captain"), k.env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var mu sync.Mutex
	var seen strings.Builder
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := out.Read(buf)
			mu.Lock()
			seen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return cmd, func() string {
		mu.Lock()
		defer mu.Unlock()
		return seen.String()
	}
}

func assertEventually(cond func() bool, within time.Duration) bool {
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func (k *applyKill) effects(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(k.side, "effects"))
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

func runPidsOf(t *testing.T, run string) (supervisor, terraform int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "pid.json"))
	require.NoError(t, err)
	var p struct{ Supervisor, Terraform int }
	require.NoError(t, json.Unmarshal(b, &p))
	require.Positive(t, p.Supervisor)
	require.Positive(t, p.Terraform)
	return p.Supervisor, p.Terraform
}

// TestKilledRelcapMidApplyIsNotAppliedTwice (issue 26, attack 5): relcap
// killed with SIGKILL during apply, after a side effect and before
// Terraform wrote the state, does not take Terraform with it: Terraform
// finishes on its own, holding its state lock meanwhile. relcap apply
// again waits for it and records the apply from Terraform's own result,
// without running Terraform again: the side effect happened once.
func TestKilledRelcapMidApplyIsNotAppliedTwice(t *testing.T) {
	t.Parallel()
	k := newApplyKill(t)
	run := k.killApply(t)
	time.Sleep(500 * time.Millisecond) // SIGPIPE or a parent-death signal would have ended it by now
	_, tf := runPidsOf(t, run)
	require.NoError(t, syscall.Kill(tf, 0), "terraform outlived its relcap")
	require.FileExists(t, filepath.Join(k.root, ".terraform.tfstate.lock.info"), "and holds its state lock")

	go func() {
		time.Sleep(2 * time.Second)
		_ = os.WriteFile(filepath.Join(k.side, "go-on"), nil, 0o644)
	}()
	code, out, errOut := k.run(t, "--actor", "alice", "apply", "--plan", k.fp)
	require.Equal(t, 0, code, out+errOut)
	t.Logf("relcap apply after the kill:\n%s%s", out, errOut)
	require.Contains(t, out+errOut, "still running", "it waited for the running Terraform")
	require.Contains(t, out, "applied plan")
	require.Contains(t, out+errOut, "completed by an earlier, interrupted run")
	require.Equal(t, 1, k.effects(t), "the side effect happened once")
	list := terraformIn(t, k.root, "state", "list")
	require.Contains(t, list, "terraform_data.second", "the apply finished")

	code, _, errOut = k.run(t, "--actor", "alice", "apply", "--plan", k.fp)
	require.Equal(t, exitBlocked, code, errOut)
	require.Contains(t, errOut, "already applied")
	require.Equal(t, 1, k.effects(t))
}

// TestKilledRelcapAndTerraformStopWithTheNextSafeAction: relcap and its
// Terraform both killed mid-apply leave no exit status: relcap apply and
// relcap resume refuse to guess (exit 3), say what to inspect, and never
// apply the plan again.
func TestKilledRelcapAndTerraformStopWithTheNextSafeAction(t *testing.T) {
	t.Parallel()
	k := newApplyKill(t)
	run := k.killApply(t)
	group, _ := runPidsOf(t, run)
	require.NoError(t, syscall.Kill(-group, syscall.SIGKILL))
	require.True(t, assertEventually(func() bool { return syscall.Kill(-group, 0) != nil }, 10*time.Second), "the run's processes are gone")

	code, out, errOut := k.run(t, "--actor", "alice", "apply", "--plan", k.fp)
	t.Logf("relcap apply after the kill:\n%s%s", out, errOut)
	require.Equal(t, exitBlocked, code, out+errOut)
	for _, want := range []string{"may have been applied already", "will not apply it again", "inspect the state", "terraform plan", "plan again in this release"} {
		require.Contains(t, errOut, want)
	}
	require.NotContains(t, out, "applied plan")
	require.Equal(t, 1, k.effects(t), "nothing applied again")

	// Resumed, the release plans again (the old plan is not applied) and
	// waits for the new plan's approval.
	code, out, errOut = k.run(t, "--actor", "alice", "resume", k.release, "--timeout", "30s")
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Equal(t, 1, k.effects(t), "nothing applied again")
	runs, err := filepath.Glob(filepath.Join(k.data, "state", "relcap", "plans", "runs", k.fp, "*"))
	require.NoError(t, err)
	require.Len(t, runs, 1, "Terraform was never started again for the plan")
}

// TestAnApprovedPlanWhoseFileIsGoneIsNeverRecordedApplied (issue 26,
// attack 6): an approved plan's apply is interrupted before Terraform
// starts (relcap killed in the apply step); then
// the state moves by another apply and the saved plan file goes (expired,
// purged). Resumed, the apply refuses the plan as stale (exit 3) and
// records nothing applied: a moved state is no evidence that it ran.
func TestAnApprovedPlanWhoseFileIsGoneIsNeverRecordedApplied(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 1, true)
	k := &applyKill{cfg: cfg, root: filepath.Join(filepath.Dir(cfg), "infra/staging"), data: t.TempDir(), env: env}
	code, out, errOut := k.run(t, "--actor", "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan struct{ Fingerprint, Release string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	code, _, errOut = k.run(t, "--actor", "bob", "approve", "--plan", plan.Fingerprint, "--comment", "ok")
	require.Equal(t, 0, code, errOut)
	plans := filepath.Join(k.data, "state", "relcap", "plans")

	// alice's relcap was killed in the apply step before Terraform
	// started (waiting for the working directory, say): the plan reviewed
	// and approved, the apply step running. Written as that relcap left
	// it, with the real store.
	l, err := store.OpenSQLite(t.Context(), filepath.Join(k.data, "relcap", "ledger.db"))
	require.NoError(t, err)
	r, err := l.LoadRelease(t.Context(), plan.Release)
	require.NoError(t, err)
	require.Equal(t, plan.Fingerprint, r.Checkpoints.Fingerprint)
	r.Status = workflow.ReleaseInProgress
	r.Step(workflow.StepPlanReview).Status = workflow.Succeeded
	r.Step(workflow.StepApply).Status = workflow.Running
	require.NoError(t, l.SaveRelease(t.Context(), r))
	require.NoError(t, l.Close())

	// Someone applies something else in the root; the plan file goes.
	terraformIn(t, k.root, "apply", "-auto-approve", "-input=false", "-no-color", "-var", "replicas=7", "-target=terraform_data.cache")
	files, err := filepath.Glob(filepath.Join(plans, plan.Fingerprint+"*"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		require.NoError(t, os.Remove(f))
	}

	code, out, errOut = k.run(t, "--actor", "alice", "apply", "--plan", plan.Fingerprint)
	t.Logf("relcap apply of the gone plan:\n%s%s", out, errOut)
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, errOut, "stale")
	require.Contains(t, errOut, "is gone")
	require.NotContains(t, out+errOut, "applied plan")
	require.NotContains(t, out+errOut, "completed by an earlier")
	l, err = store.OpenSQLite(t.Context(), filepath.Join(k.data, "relcap", "ledger.db"))
	require.NoError(t, err)
	defer l.Close()
	r, err = l.LoadRelease(t.Context(), plan.Release)
	require.NoError(t, err)
	require.True(t, r.Checkpoints.Applied.IsZero(), "the release records no apply")
	require.NotEqual(t, workflow.Succeeded, r.Step(workflow.StepApply).Status)
	p, err := l.LoadPlan(t.Context(), plan.Fingerprint)
	require.NoError(t, err)
	require.True(t, p.AppliedAt.IsZero(), "the plan is not marked applied")
}

// terraformIn runs the real terraform in dir, as a person would.
func terraformIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(terraformtest.Binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "terraform %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// TestCtrlCDuringApplyInterruptsTerraformGracefully: SIGINT to relcap
// (Ctrl-C) mid-apply still interrupts its detached Terraform gracefully:
// Terraform says it received the interrupt, stops, records its exit and
// releases its state lock; relcap exits with the interruption, and the
// release stays resumable (the interrupted plan is stale, so it plans
// again) without the side effect happening again.
func TestCtrlCDuringApplyInterruptsTerraformGracefully(t *testing.T) {
	t.Parallel()
	k := newApplyKill(t)
	cmd, output := k.start(t, "--actor", "alice", "apply", "--plan", k.fp)
	require.True(t, assertEventually(func() bool { _, err := os.Stat(filepath.Join(k.side, "provisioner.pid")); return err == nil }, 120*time.Second), output())
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	require.Error(t, err, "an interrupted apply is not a success: %s", output())
	require.Less(t, time.Since(start), 30*time.Second, "relcap waited for Terraform to stop, not for the provisioner to end")
	t.Logf("relcap after Ctrl-C:\n%s", output())
	require.Contains(t, output(), "Interrupt received", "terraform was interrupted, not killed")
	require.Contains(t, output(), "interrupted")
	runs, err := filepath.Glob(filepath.Join(k.data, "state", "relcap", "plans", "runs", k.fp, "*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	b, err := os.ReadFile(filepath.Join(runs[0], "exit.json"))
	require.NoError(t, err, "the supervisor recorded Terraform's exit")
	var exit struct {
		Code   int
		Signal string
	}
	require.NoError(t, json.Unmarshal(b, &exit))
	require.NotZero(t, exit.Code, "terraform stopped with an error")
	require.Empty(t, exit.Signal, "terraform exited, it was not killed")
	require.NoFileExists(t, filepath.Join(k.root, ".terraform.tfstate.lock.info"), "the state lock was released")

	code, out, errOut := k.run(t, "--actor", "alice", "resume", k.release, "--timeout", "30s")
	t.Logf("relcap resume after Ctrl-C:\n%s%s", out, errOut)
	require.Equal(t, exitBlocked, code, "the interrupted plan is stale: "+out+errOut)
	require.Contains(t, errOut, "is stale")
	require.Contains(t, errOut, "relcap resume "+k.release, "resuming again plans again")
	require.Equal(t, 1, k.effects(t), "the interrupted plan was not applied again")
}
