package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

func TestApplyRefusesChangedVarFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	vf := f.varFile("dev.tfvars", `rev = "1"`+"\n")
	s := f.plan()
	require.NoError(t, os.WriteFile(vf, []byte(`rev = "9"`+"\n"), 0o644))
	_, err := f.a.Apply(t.Context(), request(f.env, s))
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.ErrorContains(t, err, "var file changed: dev.tfvars")
	require.ErrorContains(t, err, "run relcap plan again")
	require.FileExists(t, s.PlanFile, "a refused plan is kept for the record until it expires")
	require.NoFileExists(t, filepath.Join(f.dir, "terraform.tfstate"), "nothing was applied")
}

// TestApplyRefusesMovedState: a plan made before another plan was applied is
// stale, by relcap's check and, if that were bypassed, by Terraform's own.
func TestApplyRefusesMovedState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	older := f.plan()
	// Another plan, applied in between. It must differ from older: two
	// identical plans share a fingerprint, and so a plan file.
	f.varFile("dev.tfvars", `rev = "2"`+"\n")
	newer := f.plan()
	require.NotEqual(t, older.Fingerprint, newer.Fingerprint)
	f.apply(newer)
	f.env.Terraform.VarFiles = nil

	_, err := f.a.Apply(t.Context(), request(f.env, older))
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.ErrorContains(t, err, "state lineage changed")

	// Make relcap's own check pass with the current inputs: Terraform still
	// refuses the saved plan, and that is reported as stale too.
	now, err := f.a.Inputs(t.Context(), f.env)
	require.NoError(t, err)
	req := request(f.env, older)
	req.Inputs = now
	_, err = f.a.Apply(t.Context(), req)
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.ErrorContains(t, err, "Terraform refused the saved plan")

	// Same lineage, later serial.
	third := f.plan()
	f.write("extra.tf", `resource "terraform_data" "extra" {}`+"\n")
	fourth := f.plan()
	f.apply(fourth)
	_, err = f.a.Apply(t.Context(), request(f.env, third))
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.ErrorContains(t, err, "state moved: serial")
}

func TestApplyRefusesChangedPlanFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	s := f.plan()
	f.varFile("dev.tfvars", `rev = "2"`+"\n")
	other := f.plan()
	require.NotEqual(t, s.PlanHash, other.PlanHash)
	f.env.Terraform.VarFiles = nil
	b, err := os.ReadFile(other.PlanFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.PlanFile, b, 0o600))
	_, err = f.a.Apply(t.Context(), request(f.env, s))
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.ErrorContains(t, err, "plan file changed")
}

// TestApplyResumesAfterCrash: a plan whose file is gone while the state has
// moved past it was applied by an earlier run; nothing is applied twice.
func TestApplyResumesAfterCrash(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	s := f.plan()
	res := f.apply(s)
	again, err := f.a.Apply(t.Context(), request(f.env, s))
	require.NoError(t, err)
	require.Equal(t, workflow.ApplyResult{AlreadyApplied: true, StateSerial: res.StateSerial}, again)

	// A vanished plan whose state has not moved is just stale.
	unapplied := f.plan()
	require.NoError(t, os.Remove(unapplied.PlanFile))
	_, err = f.a.Apply(t.Context(), request(f.env, unapplied))
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.ErrorContains(t, err, "is gone")
}

// TestApplyReportsHeldStateLock holds the state lock with a second Terraform
// process (terraform console keeps the lock while it reads stdin) and expects
// ErrLocked naming the holder.
func TestApplyReportsHeldStateLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	s := f.plan()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	console := exec.CommandContext(ctx, f.bin, "console", "-no-color")
	console.Dir = f.dir
	stdin, err := console.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, console.Start())
	defer func() {
		stdin.Close()
		_ = console.Wait()
	}()
	infoPath := filepath.Join(f.dir, ".terraform.tfstate.lock.info")
	require.Eventually(t, func() bool { _, err := os.Stat(infoPath); return err == nil }, 20*time.Second, 20*time.Millisecond, "terraform console never took the lock")
	var info struct{ ID, Who, Operation string }
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(infoPath)
		return err == nil && json.Unmarshal(b, &info) == nil && info.ID != ""
	}, 5*time.Second, 20*time.Millisecond)

	_, err = f.a.Apply(t.Context(), request(f.env, s))
	require.ErrorIs(t, err, fault.ErrLocked)
	var le *StateLockError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Equal(t, info.ID, le.ID)
	require.Equal(t, info.Who, le.Who)
	require.NotEmpty(t, le.Who)
	require.Equal(t, info.Operation, le.Operation)
	require.False(t, le.Created.IsZero())
	require.Equal(t, f.dir, le.Dir)
	require.Contains(t, err.Error(), "Error acquiring the state lock", "Terraform's message is kept")
	require.Contains(t, err.Error(), info.ID)

	_, err = f.a.Plan(t.Context(), f.env, "alice")
	require.ErrorIs(t, err, fault.ErrLocked, "planning takes the state lock too")

	// The local backend refuses a force-unlock from another process; the
	// error says so in Terraform's words.
	err = f.a.ForceUnlock(t.Context(), f.env, info.ID)
	require.Error(t, err)
	require.ErrorContains(t, err, "terraform force-unlock "+info.ID)

	stdin.Close()
	require.NoError(t, console.Wait())
	require.Eventually(t, func() bool { _, err := os.Stat(infoPath); return os.IsNotExist(err) }, 10*time.Second, 20*time.Millisecond)
	f.apply(s)
}

const slowRoot = `
variable "sleep" {
  type    = number
  default = 30
}

resource "terraform_data" "slow" {
  triggers_replace = var.sleep
  provisioner "local-exec" {
    command = "echo relcap-provisioner-started; sleep ${var.sleep}"
  }
}
`

// watchWriter closes seen the first time want is written.
type watchWriter struct {
	buf  *syncBuffer
	want string
	seen chan struct{}
}

func (w *watchWriter) Write(p []byte) (int, error) {
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		select {
		case <-w.seen:
		default:
			close(w.seen)
		}
	}
	return n, err
}

// TestApplyCancelStopsTerraformGracefully cancels an apply while a
// provisioner runs: Terraform gets SIGINT, stops, records its state and
// releases its lock; the error is context.Canceled; the root stays usable.
func TestApplyCancelStopsTerraformGracefully(t *testing.T) {
	t.Parallel()
	f := newFixture(t, slowRoot)
	w := &watchWriter{buf: f.out, want: "relcap-provisioner-started", seen: make(chan struct{})}
	var err error
	f.a, err = New(Options{Binary: f.bin, PlanDir: f.a.PlanDir(), Clock: &fixedClock{t: testNow}, Stdout: w, Stderr: f.out})
	require.NoError(t, err)
	s := f.plan()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		select {
		case <-w.seen:
			cancel()
		case <-ctx.Done():
		}
	}()
	start := time.Now()
	_, err = f.a.Apply(ctx, request(f.env, s))
	require.Error(t, err)
	require.ErrorIs(t, err, context.Canceled, "%v", err)
	require.Less(t, time.Since(start), 25*time.Second, "terraform stopped on SIGINT instead of finishing the 30 s provisioner")
	require.Contains(t, f.out.String(), "Interrupt received", "terraform was interrupted, not killed")

	require.NoFileExists(t, filepath.Join(f.dir, ".terraform.tfstate.lock.info"), "the state lock was released")
	list := f.terraform(t.Context(), "state", "list")
	require.Contains(t, list, "terraform_data.slow", "the interrupted resource was recorded (tainted)")
	require.FileExists(t, s.PlanFile, "the interrupted plan is kept; it is stale now")

	// The release can go on: a new plan replaces the tainted resource.
	f.varFile("fast.tfvars", "sleep = 0\n")
	next := f.plan()
	require.Equal(t, tfplan.ActionReplaceDeleteFirst, changeByAddress(t, next, "terraform_data.slow").Action)
	f.apply(next)
}

// TestWorkdirLockSerializes: a second relcap operation on the same root
// waits, says so, and gives up with the context.
func TestWorkdirLockSerializes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	tg, err := f.a.target(f.env)
	require.NoError(t, err)
	unlock, err := f.a.lockWorkdir(t.Context(), tg, "apply")
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = f.a.Inputs(ctx, f.env)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, f.out.String(), "waiting for another relcap apply on "+f.dir+" (default)")

	done := make(chan error, 1)
	go func() {
		_, err := f.a.Inputs(t.Context(), f.env)
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Inputs ran while the lock was held: %v", err)
	default:
	}
	unlock()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Inputs never got the lock")
	}
}

func TestPurgeExpired(t *testing.T) {
	t.Parallel()
	a, err := New(Options{Binary: terraformtest.Binary(t), PlanDir: t.TempDir()})
	require.NoError(t, err)
	old := testNow.Add(-48 * time.Hour)
	write := func(name string, mtime time.Time) string {
		p := filepath.Join(a.PlanDir(), name)
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
		return p
	}
	oldPlan := write("aaa.tfplan", old)
	oldTmp := write(".plan-123.tmp", old)
	fresh := write("bbb.tfplan", testNow.Add(-time.Hour))
	lock := write("workdir-0123.lock", old)
	removed, err := a.PurgeExpired(testNow, workflow.DefaultPlanExpiry)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{oldPlan, oldTmp}, removed)
	require.FileExists(t, fresh)
	require.FileExists(t, lock)
	require.NoFileExists(t, oldPlan)
}
