package terraform

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/tfplan"
)

const failingDrill = `resource "terraform_data" "relcap_rehearsal" {
  provisioner "local-exec" {
    command = "echo 'relcap rehearsal: failing on purpose' >&2; exit 1"
  }
}
`

// TestScratchRootFailsItsApplyAndLeavesTheRealStateAlone runs the
// failed-apply drill's Terraform side against real Terraform: the pull,
// the scratch copy, the failing apply, the tainted resource read back, the
// lock check, the recovery and the removal, with the real root's state
// byte for byte what it was.
func TestScratchRootFailsItsApplyAndLeavesTheRealStateAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, `resource "terraform_data" "app" { input = "v1" }`+"\n")
	f.apply(f.plan())
	f.a.rehearsalDir = filepath.Join(t.TempDir(), "rehearsals")
	ctx := t.Context()
	before := f.terraform(ctx, "state", "pull")

	pulled, err := f.a.PullState(ctx, f.env)
	require.NoError(t, err)
	require.JSONEq(t, before, string(pulled))

	tt, err := f.a.CreateScratch(ctx, "rh-1", f.env, []rehearsal.ScratchFile{{Name: "relcap_rehearsal_failed_apply.tf", Content: []byte(failingDrill)}}, pulled)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(f.a.rehearsalDir, "rh-1", "root"), tt.Dir)
	require.NoFileExists(t, filepath.Join(tt.Dir, "terraform.tfstate"), "the real root's local state is not copied")
	scratch := workflow.Environment{Name: f.env.Name, Terraform: tt}

	base, err := f.a.StateResources(ctx, scratch)
	require.NoError(t, err)
	require.Equal(t, []workflow.StateResource{{Address: "terraform_data.app"}}, base, "seeded with the real state")

	p, err := reviewed(f.a.Plan(ctx, scratch, "alice"))
	require.NoError(t, err, f.out.String())
	require.Len(t, p.Changes, 1, "only the drill's resource: %+v", p.Changes)
	require.Equal(t, "terraform_data.relcap_rehearsal", p.Changes[0].Address)
	require.Equal(t, tfplan.ActionCreate, p.Changes[0].Action)

	_, err = f.a.Apply(ctx, request(scratch, p))
	require.Error(t, err)
	require.Contains(t, err.Error(), "local-exec")
	require.Contains(t, err.Error(), "relcap rehearsal: failing on purpose")

	after, err := f.a.StateResources(ctx, scratch)
	require.NoError(t, err)
	require.Equal(t, []workflow.StateResource{{Address: "terraform_data.app"}, {Address: "terraform_data.relcap_rehearsal", Tainted: true}}, after)
	require.NoError(t, f.a.CheckStateLock(ctx, scratch), "Terraform released the lock after the failed apply")

	require.NoError(t, f.a.RemoveScratchFile(ctx, "rh-1", "relcap_rehearsal_failed_apply.tf"))
	require.NoError(t, f.a.RemoveScratchFile(ctx, "rh-1", "relcap_rehearsal_failed_apply.tf"), "twice is harmless")
	require.Error(t, f.a.RemoveScratchFile(ctx, "rh-1", "relcap_rehearsal_override.tf"), "the backend override stays")
	rp, err := reviewed(f.a.Plan(ctx, scratch, "alice"))
	require.NoError(t, err, f.out.String())
	require.Len(t, rp.Changes, 1)
	require.Equal(t, tfplan.ActionDelete, rp.Changes[0].Action)
	_, err = f.a.Apply(ctx, request(scratch, rp))
	require.NoError(t, err, f.out.String())
	recovered, err := f.a.StateResources(ctx, scratch)
	require.NoError(t, err)
	require.Equal(t, base, recovered)

	require.Equal(t, before, f.terraform(ctx, "state", "pull"), "the real state is untouched")
	require.NoError(t, f.a.DeleteScratch(ctx, "rh-1"))
	require.NoDirExists(t, filepath.Join(f.a.rehearsalDir, "rh-1"))
	require.NoError(t, f.a.DeleteScratch(ctx, "rh-1"), "twice is harmless")

	for _, bad := range []string{"", "..", "../x", "a/b"} {
		require.ErrorIs(t, f.a.DeleteScratch(ctx, bad), fault.ErrUsage, bad)
	}
	noDir, err := New(Options{Binary: f.bin, PlanDir: filepath.Join(t.TempDir(), "plans")})
	require.NoError(t, err)
	_, err = noDir.CreateScratch(ctx, "rh-2", f.env, nil, pulled)
	require.ErrorIs(t, err, fault.ErrUsage)
}

func TestCreateScratchRefusesARootWithLocalModulesOutsideIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, `module "m" { source = "../mod" }`+"\n")
	mod := filepath.Join(filepath.Dir(f.dir), "mod")
	require.NoError(t, os.MkdirAll(mod, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(mod) })
	require.NoError(t, os.WriteFile(filepath.Join(mod, "main.tf"), []byte(`resource "terraform_data" "x" {}`+"\n"), 0o644))
	f.a.rehearsalDir = filepath.Join(t.TempDir(), "rehearsals")
	state, err := f.a.PullState(t.Context(), f.env)
	require.NoError(t, err)
	_, err = f.a.CreateScratch(t.Context(), "rh-mod", f.env, nil, state)
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "local modules outside itself")
	require.NoDirExists(t, filepath.Join(f.a.rehearsalDir, "rh-mod"))
}

// TestCheckStateLockNamesAHeldLock holds the scratch state's lock with a
// terraform apply run by hand (a provisioner that sleeps) and checks that
// the lock check fails at once, naming the lock, rather than waiting.
func TestCheckStateLockNamesAHeldLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, `resource "terraform_data" "app" { input = "v1" }`+"\n")
	f.a.rehearsalDir = filepath.Join(t.TempDir(), "rehearsals")
	ctx := t.Context()
	slow := `resource "terraform_data" "slow" {
  provisioner "local-exec" {
    command = "sleep 30"
  }
}
`
	tt, err := f.a.CreateScratch(ctx, "rh-lock", f.env, []rehearsal.ScratchFile{{Name: "slow.tf", Content: []byte(slow)}}, nil)
	require.NoError(t, err)
	scratch := workflow.Environment{Name: f.env.Name, Terraform: tt}
	require.NoError(t, f.a.CheckStateLock(ctx, scratch), "initialises the copy; nobody holds the lock")

	hctx, stop := context.WithCancel(ctx)
	defer stop()
	holder := exec.CommandContext(hctx, f.bin, "apply", "-auto-approve", "-input=false", "-no-color")
	holder.Dir = tt.Dir
	holder.Env = append(os.Environ(), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
	require.NoError(t, holder.Start())
	defer func() { _ = holder.Wait() }()
	lockInfo := filepath.Join(filepath.Dir(tt.Dir), ".terraform.tfstate.lock.info")
	require.Eventually(t, func() bool { _, err := os.Stat(lockInfo); return err == nil }, 30*time.Second, 50*time.Millisecond, "the hand-run apply holds the lock")

	start := time.Now()
	err = f.a.CheckStateLock(ctx, scratch)
	require.Error(t, err)
	require.True(t, errors.Is(err, fault.ErrLocked), "%v", err)
	require.Less(t, time.Since(start), 20*time.Second, "did not wait for the lock")
	stop()
}
