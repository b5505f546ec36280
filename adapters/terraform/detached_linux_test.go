package terraform

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

// applyChildEnv names a JSON file (applyChildJob) that makes this test
// binary a relcap process applying one plan (see TestMain): a real
// process a test kills with SIGKILL mid-apply.
const applyChildEnv = "RELCAP_TF_TEST_APPLY_CHILD"

type applyChildJob struct {
	Binary  string
	PlanDir string
	Request workflow.ApplyRequest
}

func applyChild(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var job applyChildJob
	if err := json.Unmarshal(b, &job); err != nil {
		return err
	}
	a, err := New(Options{Binary: job.Binary, PlanDir: job.PlanDir, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		return err
	}
	_, err = a.Apply(context.Background(), job.Request)
	return err
}

// sideEffectRoot's first resource has a side effect outside Terraform's
// state (a line appended to %[1]s/effects), then waits until the file
// %[1]s/go-on exists; a second resource follows it. Killed between the
// two, a Terraform has done the side effect and not yet written the
// state that records it.
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

// killedMidApply plans the side-effect root, applies it in a child
// relcap process and kills that process with SIGKILL once the side effect
// happened and Terraform waits in the provisioner. It returns the plan,
// the directory with the effects and the run's directory.
func killedMidApply(t *testing.T) (*fixture, tfplan.Summary, string, string) {
	t.Helper()
	side := t.TempDir()
	f := newFixture(t, fmt.Sprintf(sideEffectRoot, side))
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(side, "go-on"), nil, 0o644) })
	s := f.plan()
	job, err := json.Marshal(applyChildJob{Binary: f.bin, PlanDir: f.a.PlanDir(), Request: request(f.env, s)})
	require.NoError(t, err)
	jobFile := filepath.Join(t.TempDir(), "job.json")
	require.NoError(t, os.WriteFile(jobFile, job, 0o600))

	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), applyChildEnv+"="+jobFile)
	// relcap's output goes to a pipe that dies with it, as a terminal's
	// or the cockpit's would.
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	child.Stderr = child.Stdout
	require.NoError(t, child.Start())
	go func() { _, _ = io.Copy(io.Discard, out) }()
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(side, "provisioner.pid"))
		return err == nil
	}, 90*time.Second, 20*time.Millisecond, "the apply never reached its side effect")
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait() // killed
	runs, err := filepath.Glob(filepath.Join(f.a.PlanDir(), "runs", s.Fingerprint, "*"))
	require.NoError(t, err)
	require.Len(t, runs, 1, "the apply's run is kept under the plan store")
	return f, s, side, runs[0]
}

func effectLines(t *testing.T, side string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(side, "effects"))
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

// TestApplyOutlivesAKilledRelcap: relcap killed with SIGKILL after the
// apply's side effect and before Terraform wrote the state does not take
// Terraform with it; Terraform finishes, and the next Apply of the plan
// waits for it (following its output), takes its result from the run's
// exit status and output, and applies nothing again: one side effect.
func TestApplyOutlivesAKilledRelcap(t *testing.T) {
	t.Parallel()
	f, s, side, run := killedMidApply(t)
	time.Sleep(500 * time.Millisecond) // SIGPIPE or Pdeathsig would have ended it by now
	st, err := inspectRun(run)
	require.NoError(t, err)
	require.Equal(t, runAlive, st.State, "terraform outlived its relcap")
	var pids runPids
	b, err := os.ReadFile(filepath.Join(run, runPidFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &pids))
	require.NoError(t, syscall.Kill(pids.Terraform, 0), "terraform's process is alive")
	require.True(t, terraformAlive(run))
	fi, err := os.Stat(filepath.Join(run, runStdoutFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the run's output is private")

	// The resumed apply waits for the running Terraform.
	go func() {
		time.Sleep(time.Second)
		_ = os.WriteFile(filepath.Join(side, "go-on"), nil, 0o644)
	}()
	res, err := f.a.Apply(t.Context(), request(f.env, s))
	require.NoError(t, err, "terraform output:\n%s", f.out.String())
	require.True(t, res.AlreadyApplied, "taken from the earlier run, not applied again")
	require.Contains(t, f.out.String(), "still running", "it said it waits for the earlier run")
	require.Contains(t, f.out.String(), "Apply complete!", "and showed that run's output")
	require.Equal(t, 1, effectLines(t, side), "the side effect happened once")
	list := f.terraform(t.Context(), "state", "list")
	require.Contains(t, list, "terraform_data.first")
	require.Contains(t, list, "terraform_data.second")
	require.NoFileExists(t, s.PlanFile, "an applied plan's file is deleted")
	st, err = inspectRun(run)
	require.NoError(t, err)
	require.Equal(t, runExited, st.State)
	require.Equal(t, 0, st.Exit.Code)

	// And again, once finished: still applied, still once.
	res, err = f.a.Apply(t.Context(), request(f.env, s))
	require.NoError(t, err)
	require.True(t, res.AlreadyApplied)
	require.Equal(t, 1, effectLines(t, side))
}

// TestApplyWithAnUnknownOutcomeIsNeverRepeated: relcap and Terraform
// (its whole process group) killed mid-apply leave a run with no exit
// status: the next Apply refuses with ErrApplyOutcomeUnknown and the
// next safe action, and runs nothing.
func TestApplyWithAnUnknownOutcomeIsNeverRepeated(t *testing.T) {
	t.Parallel()
	f, s, side, run := killedMidApply(t)
	group := runGroup(run)
	require.Positive(t, group)
	require.NoError(t, syscall.Kill(-group, syscall.SIGKILL))
	require.Eventually(t, func() bool {
		held, err := runHeld(run)
		return err == nil && !held && !terraformAlive(run)
	}, 10*time.Second, 20*time.Millisecond)

	_, err := f.a.Apply(t.Context(), request(f.env, s))
	require.ErrorIs(t, err, fault.ErrApplyOutcomeUnknown)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.NotErrorIs(t, err, fault.ErrStalePlan)
	for _, want := range []string{"no exit status recorded", "will not apply it again", "inspect the state", "terraform plan", "plan again in this release"} {
		require.ErrorContains(t, err, want)
	}
	require.Equal(t, 1, effectLines(t, side), "nothing ran again")
	runs, err := filepath.Glob(filepath.Join(f.a.PlanDir(), "runs", s.Fingerprint, "*"))
	require.NoError(t, err)
	require.Len(t, runs, 1, "no new run was started")
	require.FileExists(t, s.PlanFile, "the plan file is kept")
}

// TestAGonePlanFileIsNeverTakenAsApplied (issue 26, attack 6): a plan
// whose file is gone, while the state moved for another reason (another
// plan applied), is refused as stale, never reported applied.
func TestAGonePlanFileIsNeverTakenAsApplied(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	never := f.plan()
	f.varFile("dev.tfvars", `rev = "2"`+"\n")
	other := f.plan()
	require.NotEqual(t, never.Fingerprint, other.Fingerprint)
	f.apply(other)
	f.env.Terraform.VarFiles = nil
	require.NoError(t, os.Remove(never.PlanFile))

	res, err := f.a.Apply(t.Context(), request(f.env, never))
	require.ErrorIs(t, err, fault.ErrStalePlan, "%+v", res)
	require.False(t, res.AlreadyApplied, "a moved state is no evidence that this plan ran")
	require.ErrorContains(t, err, "is gone")
	require.ErrorContains(t, err, "run relcap plan again")
}

// TestPurgeKeepsRunsWhoseOutcomeIsUnknown: expired runs whose outcome is
// settled go with the expired plans; an apply run whose outcome is
// unknown stays, since it is what keeps its plan from running again.
func TestPurgeKeepsRunsWhoseOutcomeIsUnknown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	old := testNow.Add(-48 * time.Hour)
	run := func(name string, exited bool) string {
		dir := filepath.Join(f.a.PlanDir(), "runs", strings.Repeat("ab", 32), name)
		require.NoError(t, os.MkdirAll(dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, runLockFile), nil, 0o600))
		if exited {
			require.NoError(t, writeJSONFile(filepath.Join(dir, runExitFile), runExit{Code: 0}))
		}
		require.NoError(t, os.Chtimes(dir, old, old))
		return dir
	}
	finished, unknown := run("finished", true), run("unknown", false)
	removed, err := f.a.PurgeExpired(testNow, workflow.DefaultPlanExpiry)
	require.NoError(t, err)
	require.Equal(t, []string{finished}, removed)
	require.NoDirExists(t, finished)
	require.DirExists(t, unknown)
}
