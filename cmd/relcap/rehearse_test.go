package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/workflow"
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
