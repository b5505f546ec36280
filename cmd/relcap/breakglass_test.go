package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/argosim"
)

// TestBreakGlassKeepsAHotfixThenCapturesItAndRemovesItsWindow runs with
// prune on, as real applications often have it: pausing once sent "prune
// without automated", which Argo CD refuses, and left a phantom
// break-glass behind (found by the lab's end-to-end suite). The pause is
// now a deny window on the project; the sync policy is never touched.
func TestBreakGlassKeepsAHotfixThenCapturesItAndRemovesItsWindow(t *testing.T) {
	t.Parallel()
	cfg, host, envRepo := promoteRepo(t)
	sim, env := simulated(t, cfg, envRepo, func(c *argosim.AppConfig) { c.Prune = true })
	data := t.TempDir()
	pushImage(t, host+"/ci/web:1.0.0")
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:1.0.0")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "converge", "--env", "staging", "--timeout", "30s")
	require.Equal(t, 0, code, out+errOut)

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--actor", "alice", "breakglass", "start", "--env", "staging", "--reason", "OOM: raise memory by hand", "--ttl", "30m")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "reconciliation of web-staging paused until")
	require.Contains(t, out, "argo cd resumes automated sync and self-heal by itself then")
	windows, err := sim.SyncWindows("default")
	require.NoError(t, err)
	require.Len(t, windows, 1, "one deny window on the application's project")
	w := windows[0]
	require.Equal(t, "deny", w.Kind)
	require.Equal(t, []string{"web-staging"}, w.Applications, "for that one application")
	require.True(t, w.ManualSync)
	require.Equal(t, "UTC", w.TimeZone)
	require.Contains(t, []string{"30m", "31m"}, w.Duration, "the time box, to the whole minute after it")
	require.Regexp(t, `^\d+ \d+ \d+ \d+ \*$`, w.Schedule, "a cron of the start minute")

	require.NoError(t, sim.Drift("web-staging", "spec.replicas"))
	time.Sleep(1500 * time.Millisecond) // longer than the simulator's self-heal delay
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "breakglass", "status", "--env", "staging")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "drifted: apps/Deployment web/web", "the hotfix survives while the window is active")
	require.Contains(t, out, "paused by the deny window")
	require.Contains(t, out, ", active")

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "breakglass", "end", "--env", "staging")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "its sync window is removed and argo cd reconciles web-staging again")
	windows, err = sim.SyncWindows("default")
	require.NoError(t, err)
	require.Empty(t, windows)
	branch := strings.Fields(out[strings.Index(out, "on branch ")+len("on branch "):])[0]
	show, err := exec.Command("git", "-C", envRepo, "show", "--name-only", branch).CombinedOutput()
	require.NoError(t, err, string(show))
	require.Contains(t, string(show), "breakglass/staging/")
	require.Contains(t, string(show), "OOM: raise memory by hand")
	fsck, err := exec.Command("git", "-C", envRepo, "fsck", "--strict").CombinedOutput()
	require.NoError(t, err, string(fsck))

	// Self-heal, never switched off, puts Git's state back at once.
	rev := strings.TrimSpace(gitOut(t, envRepo, "rev-parse", "main"))
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "converge", "--env", "staging", "--revision", rev, "--timeout", "30s")
	require.Equal(t, 0, code, out+errOut)

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "breakglass", "status", "--env", "staging")
	require.Equal(t, exitUsage, code, "ended: "+out+errOut)
	code, _, errOut = invokeEnv(t, data, env, "journal", "verify")
	require.Equal(t, 0, code, errOut)
}

// TestBreakGlassInProductionNeedsASecondPersonsSignedApproval: with real
// SSH keys and a people file, alice breaks the glass in prod only with
// carol's signed approval of prod's application for a long enough time
// box; no approval, her own, one by a key the people file does not know,
// and one for too short a time box are each refused (exit 3) with why.
func TestBreakGlassInProductionNeedsASecondPersonsSignedApproval(t *testing.T) {
	t.Parallel()
	cfg, _, envRepo := promoteRepo(t)
	sim, env := simulated(t, cfg, envRepo, nil)
	// dave has a key, but the people file does not name it.
	keys, allowed, _ := withPeople(t, cfg, []string{"alice", "carol"}, "dave")

	data := t.TempDir()
	as := func(who string, args ...string) (int, string, string) {
		return invokeEnv(t, data, append(env, signingEnv+"="+filepath.Join(keys, who), "SSH_AUTH_SOCK="), append([]string{"-c", cfg, "--actor", who}, args...)...)
	}
	start := func(approver, ttl string) (int, string, string) {
		args := []string{"breakglass", "start", "--env", "prod", "--reason", "checkout is down", "--ttl", ttl}
		if approver != "" {
			args = append(args, "--approver", approver)
		}
		return as("alice", args...)
	}
	refused := func(why string, code int, out, errOut string) {
		t.Helper()
		require.Equal(t, exitBlocked, code, out+errOut)
		require.Contains(t, errOut, why)
		require.Contains(t, errOut, "relcap approve --breakglass --env prod --ttl 30m", "the refusal says what to ask for")
		windows, err := sim.SyncWindows("default")
		require.NoError(t, err)
		require.Empty(t, windows, "nothing is paused")
	}

	code, out, errOut := start("", "30m")
	refused("then pass --approver NAME", code, out, errOut)
	code, out, errOut = start("carol", "30m")
	refused("carol has not approved break-glass of prod/web-prod", code, out, errOut)

	code, _, errOut = as("dave", "approve", "--breakglass", "--env", "prod", "--ttl", "30m", "--reason", "ok")
	require.Equal(t, exitBlocked, code, "a key the people file does not know cannot approve")
	require.Contains(t, errOut, "cannot sign as dave")
	code, out, errOut = start("dave", "30m")
	refused("dave has not approved", code, out, errOut)

	code, out, errOut = as("alice", "approve", "--breakglass", "--env", "prod", "--ttl", "30m", "--reason", "my own")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = start("alice", "30m")
	refused("alice breaks the glass", code, out, errOut)

	code, out, errOut = as("carol", "approve", "--breakglass", "--env", "prod", "--ttl", "10m", "--reason", "checkout is down")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = start("carol", "30m")
	refused("for a time box of 10m, shorter than --ttl 30m", code, out, errOut)

	code, _, errOut = as("carol", "approve", "--breakglass", "--env", "staging", "--ttl", "30m", "--reason", "x")
	require.Equal(t, exitUsage, code, "staging needs no break-glass approval")
	require.Contains(t, errOut, "staging is not a production environment")

	code, out, errOut = as("carol", "--json", "approve", "--breakglass", "--env", "prod", "--ttl", "30m", "--reason", "checkout is down")
	require.Equal(t, 0, code, out+errOut)
	var approved struct {
		Approval struct {
			Subject   string
			TimeBox   time.Duration `json:"time_box"`
			Signature struct{ Armored string }
		}
		Statement string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &approved))
	require.Equal(t, "prod/web-prod", approved.Approval.Subject, "the subject is the environment's application")
	require.Equal(t, 30*time.Minute, approved.Approval.TimeBox)
	require.Contains(t, approved.Statement, "kind: breakglass\nenv: prod\nsubject: prod/web-prod\ntime-box: 30m0s\napprover: carol\n")
	sig := filepath.Join(t.TempDir(), "approval.sig")
	require.NoError(t, os.WriteFile(sig, []byte(approved.Approval.Signature.Armored), 0o600))
	verify := exec.Command("ssh-keygen", "-Y", "verify", "-f", allowed, "-I", "carol", "-n", "relcap-approval", "-s", sig)
	verify.Stdin = bytes.NewReader([]byte(approved.Statement))
	got, err := verify.CombinedOutput()
	require.NoError(t, err, "ssh-keygen -Y verify: %s", got)
	require.Contains(t, string(got), `Good "relcap-approval" signature for carol`)

	code, out, errOut = start("carol", "30m")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "reconciliation of web-prod paused until")
	require.Contains(t, out, "approved by carol")
	windows, err := sim.SyncWindows("default")
	require.NoError(t, err)
	require.Len(t, windows, 1)
	require.Equal(t, []string{"web-prod"}, windows[0].Applications)

	journals, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*", "journal.jsonl"))
	require.NoError(t, err)
	var all strings.Builder
	for _, j := range journals {
		b, err := os.ReadFile(j)
		require.NoError(t, err)
		all.Write(b)
	}
	require.Contains(t, all.String(), `"kind":"breakglass.refused"`, "refusals are journaled")
	var used bool
	for line := range strings.SplitSeq(all.String(), "\n") {
		if strings.Contains(line, `"kind":"breakglass.started"`) {
			used = true
			require.Contains(t, line, `"approval":{"kind":"breakglass","subject":"prod/web-prod","env":"prod","approver":"carol"`, "the journal names the approval used")
			require.Contains(t, line, `"time_box":1800000000000`)
			require.Contains(t, line, "BEGIN SSH SIGNATURE")
		}
	}
	require.True(t, used)

	code, out, errOut = as("alice", "breakglass", "end", "--env", "prod")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = start("carol", "30m")
	refused("already used that approval", code, out, errOut)
	code, _, errOut = invokeEnv(t, data, env, "journal", "verify")
	require.Equal(t, 0, code, errOut)
}
