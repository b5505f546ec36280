package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/adapters/argocd/argosim/argosimtest"
)

// simulated points the release repository's Argo CD at the simulator,
// which follows the bare environment repository.
func simulated(t *testing.T, cfg, envRepo string, tweak func(*argosim.AppConfig)) (*argosim.Server, []string) {
	t.Helper()
	var apps []argosim.AppConfig
	for _, env := range []string{"staging", "prod"} {
		c := argosim.AppConfig{Name: "web-" + env, RepoPath: envRepo, Branch: "main", Path: "apps/web/" + env + "/kustomization.yaml",
			Namespace: "web", Workload: "web", Automated: true, SelfHeal: true, InitiallySynced: true, TimeToHealthy: 300 * time.Millisecond}
		if tweak != nil {
			tweak(&c)
		}
		apps = append(apps, c)
	}
	sim, addr := argosimtest.Start(t, apps...)
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	s := strings.ReplaceAll(string(b), "argocd.example.com:443", addr)
	s = strings.ReplaceAll(s, "app: web-staging}", "app: web-staging, plaintext: true}")
	s = strings.ReplaceAll(s, "app: web-prod}", "app: web-prod, plaintext: true}")
	require.NoError(t, os.WriteFile(cfg, []byte(s), 0o644))
	return sim, []string{"ARGOCD_AUTH_TOKEN=" + sim.Token()}
}

// invokeEnv is invoke with extra environment variables.
func invokeEnv(t *testing.T, dataHome string, env []string, args ...string) (int, string, string) {
	t.Helper()
	io, out, errb := testIO(append([]string{"XDG_DATA_HOME=" + dataHome, "XDG_STATE_HOME=" + filepath.Join(dataHome, "state"), "XDG_CACHE_HOME=" + filepath.Join(dataHome, "cache"), "USER=captain"}, env...)...)
	code := run(t.Context(), io, args)
	return code, out.String(), errb.String()
}

func TestPromoteConvergeThenProdThroughTheCommandLine(t *testing.T) {
	t.Parallel()
	cfg, host, envRepo := promoteRepo(t)
	_, env := simulated(t, cfg, envRepo, nil)
	data := t.TempDir()
	digest := pushImage(t, host+"/ci/web:1.4.2")

	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:1.4.2")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "converge", "--env", "staging", "--timeout", "30s")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "converged in staging")
	require.Contains(t, out, digest)

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--actor", "alice", "promote", "--env", "prod", "--image", host+"/ci/web:1.4.2")
	require.Equal(t, exitBlocked, code, "prod needs a promotion approval: "+out+errOut)
	require.Contains(t, errOut, "relcap approve --release")
	id := releaseIDFrom(t, errOut+out)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--actor", "bob", "approve", "--release", id)
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "resume", id, "--timeout", "30s")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "converged in prod")

	code, _, errOut = invokeEnv(t, data, env, "journal", "verify")
	require.Equal(t, 0, code, errOut)
}

func TestConvergeNamesAnImagePullFailureAndExits4(t *testing.T) {
	t.Parallel()
	cfg, host, envRepo := promoteRepo(t)
	sim, env := simulated(t, cfg, envRepo, func(c *argosim.AppConfig) { c.TimeToHealthy = 30 * time.Second }) // the failure lands mid-rollout even on a busy machine
	data := t.TempDir()
	pushImage(t, host+"/ci/web:2.0.0")
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:2.0.0")
	require.Equal(t, 0, code, out+errOut)
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = sim.FailImagePull("web-staging")
	}()
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "converge", "--env", "staging", "--timeout", "30s")
	require.Equal(t, exitNotConverged, code, out+errOut)
	require.Contains(t, out+errOut, "pull")
	require.Contains(t, out+errOut, "relcap rollback")
}

func TestConvergeWithABadTokenFailsClearly(t *testing.T) {
	t.Parallel()
	cfg, _, envRepo := promoteRepo(t)
	simulated(t, cfg, envRepo, nil)
	code, out, errOut := invokeEnv(t, t.TempDir(), []string{"ARGOCD_AUTH_TOKEN=wrong"}, "-c", cfg, "converge", "--env", "staging", "--revision", "0123456789abcdef0123456789abcdef01234567", "--timeout", "10s")
	require.Equal(t, exitError, code, out+errOut)
	require.Contains(t, errOut, "ARGOCD_AUTH_TOKEN")
}

func releaseIDFrom(t *testing.T, s string) string {
	t.Helper()
	i := strings.Index(s, "relcap approve --release ")
	require.GreaterOrEqual(t, i, 0, s)
	rest := s[i+len("relcap approve --release "):]
	return strings.Fields(rest)[0]
}

func TestRollbackPinsThePreviousDigestAsANewChangeAndConverges(t *testing.T) {
	t.Parallel()
	cfg, host, envRepo := promoteRepo(t)
	_, env := simulated(t, cfg, envRepo, nil)
	data := t.TempDir()
	d1 := pushImage(t, host+"/ci/web:1.0.0")
	d2 := pushImage(t, host+"/ci/web:2.0.0")
	var first string
	for _, tag := range []string{"1.0.0", "2.0.0"} {
		code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:"+tag)
		require.Equal(t, 0, code, out+errOut)
		if first == "" {
			first = strings.Fields(out[strings.LastIndex(out, "release ")+len("release "):])[0]
			first = strings.TrimSuffix(first, ":")
		}
		code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "converge", "--env", "staging", "--timeout", "30s")
		require.Equal(t, 0, code, out+errOut)
	}
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "rollback", "--env", "staging", "--to", first, "--timeout", "30s")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "converged in staging")
	require.Contains(t, out, d1)

	show, err := exec.Command("git", "-C", envRepo, "show", "main:apps/web/staging/kustomization.yaml").Output()
	require.NoError(t, err)
	require.Contains(t, string(show), d1)
	require.NotContains(t, string(show), d2)
	log, err := exec.Command("git", "-C", envRepo, "log", "-1", "--format=%s", "main").Output()
	require.NoError(t, err)
	require.Contains(t, string(log), "roll back staging to release "+first)
}

// TestAFailedSyncIsNamedAtOnceAndRollbackEndsItsRetries: a release lands
// on top of a bad manifest change; Argo CD's sync fails and it retries
// (minutes apart here, as its default back-off grows); converge names the
// rejected manifest at the first failure instead of waiting the retries
// out; rollback restores the environment file as the earlier release
// converged (the bad change gone), ends the retries that would hold its
// revision back, and converges.
func TestAFailedSyncIsNamedAtOnceAndRollbackEndsItsRetries(t *testing.T) {
	t.Parallel()
	cfg, host, envRepo := promoteRepo(t)
	sim, env := simulated(t, cfg, envRepo, func(c *argosim.AppConfig) { c.SyncRetries, c.RetryBackoff = 5, time.Minute })
	data := t.TempDir()
	d1 := pushImage(t, host+"/ci/web:1.0.0")
	pushImage(t, host+"/ci/web:2.0.0")
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:1.0.0")
	require.Equal(t, 0, code, out+errOut)
	first := releaseIDOf(t, out)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "converge", "--env", "staging", "--timeout", "30s")
	require.Equal(t, 0, code, out+errOut)
	good := gitOut(t, envRepo, "show", "main:apps/web/staging/kustomization.yaml")

	// Someone commits a manifest the API server will refuse.
	const bad = "replicas:\n  - name: web\n    count: -1\n"
	commitFile(t, envRepo, "apps/web/staging/kustomization.yaml", good+bad, "scale web")
	require.NoError(t, sim.FailSyncOf("web-staging", "count: -1", `Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`))

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:2.0.0")
	require.Equal(t, 0, code, out+errOut)
	start := time.Now()
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "converge", "--env", "staging", "--timeout", "30s")
	require.Equal(t, exitNotConverged, code, out+errOut)
	require.Less(t, time.Since(start), 20*time.Second, "named at the first failed attempt, not after the retries")
	require.Contains(t, out+errOut, "convergence.sync-failed")
	require.Contains(t, out+errOut, "Argo CD is retrying (attempt #1), but the API server rejects the manifests, so no retry can pass")
	require.Contains(t, out+errOut, "spec.replicas: Invalid value: -1")
	require.NotContains(t, out+errOut, "application controller sync timeout", "Argo CD's misleading retry wording is not repeated")
	require.Contains(t, out+errOut, "relcap rollback")

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "rollback", "--env", "staging", "--to", first, "--timeout", "30s")
	require.Equal(t, 0, code, "the rollback must not wait for the minute-long retries of the bad revision: "+out+errOut)
	require.Contains(t, out, "converged in staging")
	require.Contains(t, out, d1)
	require.Equal(t, good, gitOut(t, envRepo, "show", "main:apps/web/staging/kustomization.yaml"), "the file is as the first release converged: digest and manifests")
	body := gitOut(t, envRepo, "log", "-1", "--format=%B", "main")
	require.Contains(t, body, "roll back staging to release "+first)
	require.Contains(t, body, "Restore apps/web/staging/kustomization.yaml as release "+first+" converged with it")

	code, out, errOut = invokeEnv(t, data, env, "--json", "journal", "list")
	require.Equal(t, 0, code, out+errOut)
	var sessions []struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(out), &sessions))
	require.NotEmpty(t, sessions)
	code, out, errOut = invokeEnv(t, data, env, "journal", "show", sessions[len(sessions)-1].ID)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "convergence.operation-terminated", "ending Argo CD's operation is journaled")
}

// releaseIDOf reads the release ID promote prints.
func releaseIDOf(t *testing.T, out string) string {
	t.Helper()
	id := strings.Fields(out[strings.LastIndex(out, "release ")+len("release "):])[0]
	return strings.TrimSuffix(id, ":")
}

func gitOut(t *testing.T, repo string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).Output()
	require.NoError(t, err)
	return string(out)
}

// commitFile commits content to file on main of a bare repository, as a
// person pushing a change would.
func commitFile(t *testing.T, bare, file, content, message string) {
	t.Helper()
	work := t.TempDir()
	git := func(args ...string) {
		out, err := exec.Command("git", append([]string{"-C", work, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	git("clone", "-q", bare, ".")
	require.NoError(t, os.WriteFile(filepath.Join(work, filepath.FromSlash(file)), []byte(content), 0o644))
	git("commit", "-qam", message)
	git("push", "-q", "origin", "main")
}
