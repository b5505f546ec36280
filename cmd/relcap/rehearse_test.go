package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/rehearsal"
)

// kubeletPulls makes the simulator's pods pull from the real registry on
// loopback: a digest it does not hold fails to pull, as on a cluster.
func kubeletPulls(unready string) func(*argosim.AppConfig) {
	return func(c *argosim.AppConfig) {
		c.TimeToHealthy = 300 * time.Millisecond
		c.ProgressDeadline = time.Second
		c.Pull = func(image string) error {
			ref, err := name.ParseReference(image, name.Insecure)
			if err != nil {
				return err
			}
			_, err = remote.Head(ref)
			return err
		}
		c.NeverReady = func(image string) bool { return unready != "" && strings.HasSuffix(image, "@"+unready) }
	}
}

func TestRehearseDrillsOnTheCommandLine(t *testing.T) {
	t.Parallel()
	cfg, host, envRepo := promoteRepo(t)
	pushImage(t, host+"/ci/web:1.4.2")
	unready := pushImage(t, host+"/ci/web:2.0.0-broken")
	_, env := simulated(t, cfg, envRepo, kubeletPulls(unready))
	data := t.TempDir()

	// No baseline yet: refused, converge first.
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "rehearse", "--env", "staging", "--drill", "unavailable-image")
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, errOut, "no converged release")

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:1.4.2")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "converge", "--env", "staging", "--timeout", "30s")
	require.Equal(t, 0, code, out+errOut)

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "rehearse", "--env", "staging", "--drill", "unavailable-image", "--timeout", "30s")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "unavailable-image in staging: PASSED")
	require.Contains(t, out, "image-pull-failed after")
	for _, line := range []string{"intended revision: ", "actual artifact: ", "controller status: convergence.image-pull-failed", "next safe action: "} {
		require.Contains(t, out, line)
	}

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "rehearse", "--env", "staging", "--drill", "failed-readiness")
	require.Equal(t, exitUsage, code, out+errOut)
	require.Contains(t, errOut, "rehearsal.unready_image")

	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	withUnready := strings.Replace(string(b), "    approvals: {plan: 1, promotion: 0, distinct_from_author: false}\n",
		"    approvals: {plan: 1, promotion: 0, distinct_from_author: false}\n    rehearsal: {unready_image: "+host+"/ci/web@"+unready+", timeout: 90s}\n", 1)
	require.NotEqual(t, string(b), withUnready)
	require.NoError(t, os.WriteFile(cfg, []byte(withUnready), 0o644))

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--json", "rehearse", "--env", "staging", "--drill", "failed-readiness")
	require.Equal(t, 0, code, out+errOut)
	var recs []rehearsal.Rehearsal
	require.NoError(t, json.Unmarshal([]byte(out), &recs), out)
	require.Len(t, recs, 1)
	require.Equal(t, rehearsal.StatePassed, recs[0].State, recs[0].Failure)
	require.Equal(t, appstate.VerdictReadinessFailed, recs[0].Detected)
	require.Contains(t, recs[0].ActualArtifact.Value, unready)

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "rehearse", "--env", "prod", "--drill", "unavailable-image")
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, errOut, "production environment")
	require.Contains(t, errOut, "--i-know")

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "rehearse", "--env", "staging", "--drill", "chaos")
	require.Equal(t, exitUsage, code, out+errOut)
	require.Contains(t, errOut, "failed-apply, state-restore, unavailable-image, failed-readiness, interrupted-reconciliation")

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "rehearse", "list", "--env", "staging")
	require.Equal(t, 0, code, out+errOut)
	require.Equal(t, 2, strings.Count(out, " passed "), out)

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "rehearse", "--resume", "rh-none")
	require.Equal(t, exitUsage, code, out+errOut)

	today := time.Now().Format("2006-01-02") // the report's days are local
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "report", "measures", "--from", today, "--to", today)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "Recovery rehearsals")
	require.Regexp(t, `staging\s+2\s+2\s+0\s+0\s+\d+s\s+\d+s`, out)
	require.Regexp(t, `staging\s+failed-apply\s+never\s+never`, out)
	require.Regexp(t, `staging\s+unavailable-image\s+\S+ \S+\s+0`, out)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "report", "measures", "--from", today, "--to", today, "--format", "csv")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "rehearsals,staging,passed,2,count")

	code, _, errOut = invokeEnv(t, data, env, "journal", "verify")
	require.Equal(t, 0, code, errOut)
}

// TestRehearseAllOnTheSimulator runs --all where two builds converged in
// staging and an unready build is configured: failed-apply on a scratch
// copy of staging's (empty) Terraform root with real Terraform,
// interrupted-reconciliation pausing with break-glass (no
// rehearsal.interrupt); all four pass, and nothing is left behind.
func TestRehearseAllOnTheSimulator(t *testing.T) {
	t.Parallel()
	terraformtest.Binary(t)
	cfg, host, envRepo := promoteRepo(t)
	pushImage(t, host+"/ci/web:1.4.2")
	pushImage(t, host+"/ci/web:1.4.3")
	unready := pushImage(t, host+"/ci/web:2.0.0-broken")
	sim, env := simulated(t, cfg, envRepo, kubeletPulls(unready))
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	withUnready := strings.Replace(string(b), "    approvals: {plan: 1, promotion: 0, distinct_from_author: false}\n",
		"    approvals: {plan: 0, promotion: 0, distinct_from_author: false}\n    rehearsal: {unready_image: "+host+"/ci/web@"+unready+"}\n", 1)
	require.NotEqual(t, string(b), withUnready)
	require.NoError(t, os.WriteFile(cfg, []byte(withUnready), 0o644))
	data := t.TempDir()
	for _, tag := range []string{"1.4.2", "1.4.3"} {
		code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:"+tag)
		require.Equal(t, 0, code, out+errOut)
		code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "converge", "--env", "staging", "--timeout", "30s")
		require.Equal(t, 0, code, out+errOut)
	}

	// A phase's timeout with headroom: on a loaded machine the simulator's
	// Pod can take longer than 60 s to turn Degraded (failed-readiness was
	// named "progressing" once, in make test); each drill still ends as
	// soon as its failure is named.
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "--json", "rehearse", "--env", "staging", "--all", "--timeout", "120s")
	// staging's root was never applied: it has no state to back up, so
	// state-restore is refused (and the run says so), the others pass.
	require.Equal(t, exitBlocked, code, out+errOut)
	require.NotContains(t, errOut, "not run")
	require.Contains(t, errOut, "state-restore in staging: refused")
	var recs []rehearsal.Rehearsal
	require.NoError(t, json.Unmarshal([]byte(out), &recs), out)
	require.Len(t, recs, 5)
	require.Equal(t, rehearsal.DrillFailedApply, recs[0].Drill, "failed-apply runs first")
	byDrill := map[rehearsal.Drill]rehearsal.Rehearsal{}
	for _, r := range recs {
		byDrill[r.Drill] = r
		if r.Drill == rehearsal.DrillStateRestore {
			require.Equal(t, rehearsal.StateAbandoned, r.State)
			require.Contains(t, r.Failure, "no Terraform state yet")
			continue
		}
		require.Equal(t, rehearsal.StatePassed, r.State, "%s: %s", r.Drill, r.Failure)
	}
	ir := byDrill[rehearsal.DrillInterruptedReconc]
	require.Equal(t, appstate.VerdictReconcilePaused, ir.Detected)
	require.Contains(t, ir.ActualArtifact.Shown, "reconciliation paused by break-glass window")
	windows, err := sim.SyncWindows("default")
	require.NoError(t, err)
	require.Empty(t, windows, "the break-glass window is gone")
	require.Equal(t, rehearsal.VerdictApplyFailed, byDrill[rehearsal.DrillFailedApply].Detected)
	requireNoScratch(t, data)
}

// applyStaging plans staging's Terraform root and applies the plan (the
// repository asks no approval of it).
func applyStaging(t *testing.T, data string, env []string, cfg string) {
	t.Helper()
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, out+errOut)
	var plan struct{ Fingerprint string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "apply", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, out+errOut)
}

// requireNoScratch checks every rehearsal's scratch copy is gone.
func requireNoScratch(t *testing.T, data string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(data, "state", "relcap", "rehearsals"))
	if err != nil {
		require.ErrorIs(t, err, os.ErrNotExist)
	}
	require.Empty(t, entries, "no scratch copy left behind")
}

// TestRehearseFailedApplyWithRealTerraform drills staging's real
// Terraform root, applied first: the apply fails in the scratch copy, the
// four answers say so, recovery destroys the tainted resource, and the
// real root's state is byte for byte what it was.
func TestRehearseFailedApplyWithRealTerraform(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 0, false)
	data := t.TempDir()
	root := filepath.Join(filepath.Dir(cfg), "infra", "staging")
	tf := terraformtest.Binary(t)
	pull := func() string {
		t.Helper()
		cmd := exec.Command(tf, "state", "pull")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
		b, err := cmd.Output()
		require.NoError(t, err)
		return string(b)
	}

	// Not applied yet: the drill's plan would create the root's resources
	// too, so it is refused before anything is applied; under --all the
	// next drill still runs (and is refused for its own reason here).
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "rehearse", "--env", "staging", "--all")
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Regexp(t, `failed-apply in staging: refused: .*the environment has drift or pending changes: \d+ other change\(s\)`, errOut)
	require.Contains(t, errOut, "converge first")
	require.Contains(t, errOut, "no converged release", "unavailable-image ran after the refusal")
	require.NotContains(t, errOut, "failing on purpose")
	requireNoScratch(t, data)

	applyStaging(t, data, env, cfg)
	before, beforeFile := pull(), readFile(t, filepath.Join(root, "terraform.tfstate"))
	require.Contains(t, before, "terraform_data")

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--json", "rehearse", "--env", "staging", "--drill", "failed-apply")
	require.Equal(t, 0, code, out+errOut)
	var recs []rehearsal.Rehearsal
	require.NoError(t, json.Unmarshal([]byte(out), &recs), out)
	require.Len(t, recs, 1)
	rh := recs[0]
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	require.Equal(t, rehearsal.VerdictApplyFailed, rh.Detected)
	require.Len(t, rh.Baseline.Resources, 2, "terraform_data.app and .cache, from the real state")
	require.Equal(t, rh.DrillPlan, rh.IntendedRevision.Value)
	require.Equal(t, "terraform_data.relcap_rehearsal tainted", rh.ActualArtifact.Value)
	require.Equal(t, "state lock released", rh.ControllerStatus.Value)
	require.Contains(t, rh.NextSafeAction.Value, "terraform_data.relcap_rehearsal is tainted; re-plan from the reviewed root")
	require.Contains(t, errOut, "relcap rehearsal: failing on purpose", "Terraform's own failure, as the captain saw it")
	require.NotContains(t, out+errOut, "hunter2-very-secret")

	require.Equal(t, before, pull(), "the real state is unchanged")
	require.Equal(t, beforeFile, readFile(t, filepath.Join(root, "terraform.tfstate")))
	requireNoScratch(t, data)

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "rehearse", "list", "--env", "staging")
	require.Equal(t, 0, code, out+errOut)
	require.Regexp(t, `staging\s+failed-apply\s+passed`, out)
	today := time.Now().Format("2006-01-02")
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "report", "measures", "--from", today, "--to", today)
	require.Equal(t, 0, code, out+errOut)
	require.Regexp(t, `staging\s+3\s+1\s+0\s+2\s+\d+s\s+\d+s`, out, "the refused drills (failed-apply, state-restore: nothing applied yet) are kept, abandoned")
	require.Regexp(t, `staging\s+failed-apply\s+\S+ \S+\s+0`, out)
	code, _, errOut = invokeEnv(t, data, env, "journal", "verify")
	require.Equal(t, 0, code, errOut)
}

// TestRehearseStateRestoreWithRealTerraform backs up staging's real state,
// restores it into a scratch copy and proves it with a plan: refused
// before anything was applied (no state) and while the root has a pending
// change (the plan would prove nothing), passed once converged, with its
// three times kept and reported, and the real state untouched.
func TestRehearseStateRestoreWithRealTerraform(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 0, false)
	data := t.TempDir()
	root := filepath.Join(filepath.Dir(cfg), "infra", "staging")

	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "rehearse", "--env", "staging", "--drill", "state-restore")
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, errOut, "staging has no Terraform state yet (nothing applied), so there is no backup to restore")
	requireNoScratch(t, data)

	applyStaging(t, data, env, cfg)
	before := readFile(t, filepath.Join(root, "terraform.tfstate"))

	// A change not applied yet: the restored copy's plan shows it, which
	// proves nothing about the backup.
	mainTF := filepath.Join(root, "main.tf")
	orig := readFile(t, mainTF)
	require.NoError(t, os.WriteFile(mainTF, []byte(orig+"\nresource \"terraform_data\" \"pending\" {}\n"), 0o644))
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "rehearse", "--env", "staging", "--drill", "state-restore")
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Regexp(t, `shows 1 change\(s\) and 0 drifted resource\(s\) over the real state's own resources, so staging has drift or pending changes`, errOut)
	requireNoScratch(t, data)
	require.NoError(t, os.WriteFile(mainTF, []byte(orig), 0o644))

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--json", "rehearse", "--env", "staging", "--drill", "state-restore")
	require.Equal(t, 0, code, out+errOut)
	var recs []rehearsal.Rehearsal
	require.NoError(t, json.Unmarshal([]byte(out), &recs), out)
	require.Len(t, recs, 1)
	rh := recs[0]
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	require.Equal(t, rehearsal.VerdictStateRestored, rh.Detected)
	require.NotNil(t, rh.Restore)
	require.Equal(t, 2, rh.Restore.Resources, "terraform_data.app and .cache")
	require.NotEmpty(t, rh.Restore.Lineage)
	require.Positive(t, rh.Restore.BackupTook)
	require.Positive(t, rh.Restore.RestoreTook)
	require.Positive(t, rh.Restore.ProveTook)
	require.Len(t, rh.Restore.Plan, 64)
	require.Contains(t, rh.ControllerStatus.Shown, "against the real resources found nothing to change")
	require.NotContains(t, out+errOut, "hunter2-very-secret", "the state's sensitive values never printed")
	require.Equal(t, before, readFile(t, filepath.Join(root, "terraform.tfstate")), "the real state is byte for byte what it was")
	requireNoScratch(t, data)

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "rehearse", "list", "--env", "staging")
	require.Equal(t, 0, code, out+errOut)
	require.Regexp(t, `staging\s+state-restore\s+passed\s+backup \S+ restore \S+ prove \S+`, out)
	today := time.Now().Format("2006-01-02")
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--json", "report", "measures", "--from", today, "--to", today)
	require.Equal(t, 0, code, out+errOut)
	var measures struct {
		Rehearsals []struct {
			Env           string
			TimeToRestore struct{ Count int } `json:"time_to_restore"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &measures), out)
	require.Len(t, measures.Rehearsals, 1)
	require.Equal(t, 1, measures.Rehearsals[0].TimeToRestore.Count, "one proven restore; the refused ones are not timed")
	code, _, errOut = invokeEnv(t, data, env, "journal", "verify")
	require.Equal(t, 0, code, errOut)
}

// TestRehearseFailedApplyWaitsForPlanApprovalsOnTheCommandLine drills a
// staging that asks one approval of every plan, by someone other than its
// author: both of the drill's plans stop it (exit 3) naming the command,
// and --resume continues once approved.
func TestRehearseFailedApplyWaitsForPlanApprovalsOnTheCommandLine(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 1, true)
	data := t.TempDir()
	as := func(actor string, args ...string) (int, string, string) {
		return invokeEnv(t, data, env, append([]string{"-c", cfg, "--actor", actor}, args...)...)
	}
	code, out, errOut := as("alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, out+errOut)
	var plan struct{ Fingerprint string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	code, out, errOut = as("bob", "approve", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = as("alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, out+errOut)

	approval := regexp.MustCompile(`(?m)relcap approve --plan ([0-9a-f]{64})$`)
	code, out, errOut = as("alice", "rehearse", "--env", "staging", "--drill", "failed-apply")
	require.Equal(t, exitBlocked, code, out+errOut)
	id := regexp.MustCompile(`relcap rehearse --resume (rh-\S+),`).FindStringSubmatch(errOut)
	require.NotNil(t, id, errOut)
	m := approval.FindStringSubmatch(strings.TrimSpace(errOut))
	require.NotNil(t, m, errOut)
	require.NotContains(t, errOut, "failing on purpose", "nothing applied before the approval")
	code, out, errOut = as("bob", "approve", "--plan", m[1])
	require.Equal(t, 0, code, out+errOut)

	code, out, errOut = as("alice", "rehearse", "--resume", id[1])
	require.Equal(t, exitBlocked, code, "the recovery plan waits for its approval: "+out+errOut)
	require.Contains(t, out, "detected ")
	require.Contains(t, errOut, "relcap rehearsal: failing on purpose")
	m = approval.FindStringSubmatch(strings.TrimSpace(errOut))
	require.NotNil(t, m, errOut)
	code, out, errOut = as("bob", "approve", "--plan", m[1])
	require.Equal(t, 0, code, out+errOut)

	code, out, errOut = as("alice", "rehearse", "--resume", id[1])
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "failed-apply in staging: PASSED")
	for _, line := range []string{"intended revision: plan ", "actual artifact: the scratch state holds terraform_data.relcap_rehearsal tainted",
		"controller status: Terraform's state lock is released", "next safe action: the apply failed part-way"} {
		require.Contains(t, out, line)
	}
	requireNoScratch(t, data)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// TestTmuxRehearsalScreen runs relcap rehearse at a real terminal (tmux,
// the real binary) on the simulator: the rehearsal screen shows the drill
// and its baseline, enter injects it, the screen reaches passed, q closes
// it, and the exit code is the headless one, 0.
func TestTmuxRehearsalScreen(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("tmux")
	require.NoError(t, err, "tmux is needed: make test installs it (apt-get install tmux)")
	cfg, host, envRepo := promoteRepo(t)
	pushImage(t, host+"/ci/web:1.4.2")
	_, env := simulated(t, cfg, envRepo, kubeletPulls(""))
	data := t.TempDir()
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:1.4.2")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "converge", "--env", "staging", "--timeout", "30s")
	require.Equal(t, 0, code, out+errOut)

	term := relcapAtTerminal(t, data, env, 120, 40, "-c "+cfg+" --actor alice rehearse --env staging --drill unavailable-image --timeout 30s")
	s := term.waitFor("Press enter to inject", 2*time.Minute)
	for _, want := range []string{"recovery rehearsal", "Drill 1/1: unavailable-image in staging", "Must return to", "image-pull-failed", "enter start the drill"} {
		require.Contains(t, s, want)
	}
	term.press("Enter")
	s = term.waitFor("✓ PASSED", 2*time.Minute)
	for _, want := range []string{"✓ detected", "(as expected)", "✓ recovered", "Intended revision", "Actual artifact", "Controller status", "Next safe action"} {
		require.Contains(t, s, want)
	}
	term.press("q")
	s = term.waitFor("EXIT=", 2*time.Minute)
	require.Contains(t, s, "EXIT=0", s)
	require.Contains(t, s, "unavailable-image in staging: PASSED", "the record stays on the terminal")

	l, err := store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	defer l.Close()
	rs, err := l.ListRehearsals(t.Context(), rehearsal.Filter{})
	require.NoError(t, err)
	require.Len(t, rs, 1)
	require.Equal(t, rehearsal.StatePassed, rs[0].State, rs[0].Failure)
	entries, err := l.Effort(t.Context(), rs[0].RecoveryRelease)
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(entries, func(e effort.Entry) bool { return e.Person == "alice" && e.Role == effort.RoleCaptain }),
		"the captain's time on the screen is booked to the drill's release: %+v", entries)

	code, _, errOut = invokeEnv(t, data, env, "journal", "verify")
	require.Equal(t, 0, code, errOut)
}
