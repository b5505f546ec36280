package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
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
		"    approvals: {plan: 1, promotion: 0, distinct_from_author: false}\n    rehearsal: {unready_image: "+host+"/ci/web@"+unready+", timeout: 30s}\n", 1)
	require.NotEqual(t, string(b), withUnready)
	require.NoError(t, os.WriteFile(cfg, []byte(withUnready), 0o644))

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--json", "rehearse", "--env", "staging", "--drill", "failed-readiness")
	require.Equal(t, 0, code, out+errOut)
	var recs []workflow.Rehearsal
	require.NoError(t, json.Unmarshal([]byte(out), &recs), out)
	require.Len(t, recs, 1)
	require.Equal(t, workflow.RehearsalStatePassed, recs[0].State, recs[0].Failure)
	require.Equal(t, workflow.VerdictReadinessFailed, recs[0].Detected)
	require.Contains(t, recs[0].ActualArtifact.Value, unready)

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "rehearse", "--env", "prod", "--drill", "unavailable-image")
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, errOut, "production environment")
	require.Contains(t, errOut, "--i-know")

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "rehearse", "--env", "staging", "--drill", "chaos")
	require.Equal(t, exitUsage, code, out+errOut)
	require.Contains(t, errOut, "failed-apply, unavailable-image, failed-readiness, interrupted-reconciliation")

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
// staging: interrupted-reconciliation pauses with break-glass (no
// rehearsal.interrupt), the drills not configured or not built are said
// and make the exit code 2, and every drill that ran passed.
func TestRehearseAllOnTheSimulator(t *testing.T) {
	t.Parallel()
	cfg, host, envRepo := promoteRepo(t)
	pushImage(t, host+"/ci/web:1.4.2")
	pushImage(t, host+"/ci/web:1.4.3")
	sim, env := simulated(t, cfg, envRepo, kubeletPulls(""))
	data := t.TempDir()
	for _, tag := range []string{"1.4.2", "1.4.3"} {
		code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:"+tag)
		require.Equal(t, 0, code, out+errOut)
		code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "converge", "--env", "staging", "--timeout", "30s")
		require.Equal(t, 0, code, out+errOut)
	}

	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "--json", "rehearse", "--env", "staging", "--all", "--timeout", "60s")
	require.Equal(t, exitUsage, code, out+errOut)
	require.Contains(t, errOut, "failed-apply in staging: not run")
	require.Contains(t, errOut, "failed-readiness in staging: not run")
	var recs []workflow.Rehearsal
	require.NoError(t, json.Unmarshal([]byte(out), &recs), out)
	require.Len(t, recs, 2)
	byDrill := map[workflow.Drill]workflow.Rehearsal{}
	for _, r := range recs {
		byDrill[r.Drill] = r
		require.Equal(t, workflow.RehearsalStatePassed, r.State, "%s: %s", r.Drill, r.Failure)
	}
	ir := byDrill[workflow.DrillInterruptedReconc]
	require.Equal(t, workflow.VerdictReconcilePaused, ir.Detected)
	require.Contains(t, ir.ActualArtifact.Shown, "reconciliation paused by break-glass window")
	windows, err := sim.SyncWindows("default")
	require.NoError(t, err)
	require.Empty(t, windows, "the break-glass window is gone")
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

	bin := filepath.Join(t.TempDir(), "relcap")
	b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(b))
	socket := "relcap-rehearse-" + strconv.Itoa(os.Getpid())
	script := bin + " -c " + cfg + " --actor alice rehearse --env staging --drill unavailable-image --timeout 30s; echo EXIT=$?; sleep 60"
	cmd := exec.Command("tmux", "-L", socket, "new-session", "-d", "-s", "rh", "-x", "120", "-y", "40", script)
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+data, "XDG_STATE_HOME="+filepath.Join(data, "state"),
		"XDG_CACHE_HOME="+filepath.Join(data, "cache"), "TERM=xterm-256color"), env...)
	b, err = cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	capture := func() string {
		b, _ := exec.Command("tmux", "-L", socket, "capture-pane", "-p", "-t", "rh").Output()
		return string(b)
	}
	waitFor := func(what string) string {
		t.Helper()
		var s string
		require.Eventually(t, func() bool { s = capture(); return strings.Contains(s, what) }, 2*time.Minute, 200*time.Millisecond, "waiting for %q; screen:\n%s", what, s)
		return s
	}
	s := waitFor("Press enter to inject")
	for _, want := range []string{"recovery rehearsal", "Drill 1/1: unavailable-image in staging", "Must return to", "image-pull-failed", "enter start the drill"} {
		require.Contains(t, s, want)
	}
	_ = exec.Command("tmux", "-L", socket, "send-keys", "-t", "rh", "Enter").Run()
	s = waitFor("✓ PASSED")
	for _, want := range []string{"✓ detected", "(as expected)", "✓ recovered", "Intended revision", "Actual artifact", "Controller status", "Next safe action"} {
		require.Contains(t, s, want)
	}
	_ = exec.Command("tmux", "-L", socket, "send-keys", "-t", "rh", "q").Run()
	s = waitFor("EXIT=")
	require.Contains(t, s, "EXIT=0", s)
	require.Contains(t, s, "unavailable-image in staging: PASSED", "the record stays on the terminal")

	l, err := store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	defer l.Close()
	rs, err := l.ListRehearsals(t.Context(), workflow.RehearsalFilter{})
	require.NoError(t, err)
	require.Len(t, rs, 1)
	require.Equal(t, workflow.RehearsalStatePassed, rs[0].State, rs[0].Failure)
	entries, err := l.Effort(t.Context(), rs[0].RecoveryRelease)
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(entries, func(e effort.Entry) bool { return e.Person == "alice" && e.Role == effort.RoleCaptain }),
		"the captain's time on the screen is booked to the drill's release: %+v", entries)

	code, _, errOut = invokeEnv(t, data, env, "journal", "verify")
	require.Equal(t, 0, code, errOut)
}
