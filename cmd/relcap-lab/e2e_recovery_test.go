//go:build e2e

package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testSelfHeal: a manual kubectl change is put back by Argo CD's
// self-heal within seconds. relcap sees it in the application's record (a
// self-heal is a partial automated sync, kept out of history): one is an
// Info finding of the ownership check, three in a row a drift loop.
//
// It runs on prod, whose last sync is of main's tip: Argo CD counts
// self-heals of the revision it last synced, and staging's last sync is
// older than the prod pin on main (a staging self-heal would first be a
// full sync of the new tip).
func testSelfHeal(t *testing.T, l *e2eLab) {
	const env = "prod"
	rev := l.headRev(t)
	before, _, _ := l.live(t, env)
	for i := 1; i <= DriftLoopSelfHeals; i++ {
		manual := "registry.invalid/hotfix:manual-" + strconv.Itoa(i)
		l.kubectl(t, "set", "image", "deployment/"+AppName, AppName+"="+manual, "-n", Namespace(env))
		// Argo CD backs off between self-heals of one revision (2 s, 6 s,
		// 18 s by default).
		eventually(t, 90*time.Second, "argo cd reverting manual change "+manual, func() (bool, string) {
			image, ready, want := l.live(t, env)
			return image == before && ready == want, image
		})
		attempts, err := strconv.Atoi(l.kubectl(t, "get", "application", ArgoApp(env), "-n", ArgoNamespace, "-o", "jsonpath={.status.operationState.operation.sync.autoHealAttemptsCount}"))
		require.NoError(t, err)
		// Argo CD counts the self-heals of one revision in a row. 3.x may
		// count one more: a self-heal it starts right after a deploy from
		// a comparison older than its own apply, which changes nothing
		// (relcap discounts it only when it is the latest; README, Argo CD
		// versions).
		require.GreaterOrEqual(t, attempts, i, "argo cd counts the self-heals of one revision in a row")
		require.LessOrEqual(t, attempts, i+1, "at most one no-op self-heal after the deploy")

		code, out := l.relcapCode(t, "ownership", "check", "--env", env)
		require.Equal(t, 0, code, "self-heal is drift to see, not a blocker:\n%s", out)
		if i == 1 && attempts == 1 {
			require.Contains(t, out, "INFO ownership.self-healed argocd app "+ArgoApp(env))
			require.Contains(t, out, "self-heal put Git's state back over a live change 1 time(s) at revision "+rev[:12]+", the latest at ")
			require.Contains(t, out, "1 note(s)")
		}
		if i == 1 && attempts == 2 {
			require.Contains(t, out, "INFO ownership.self-healed argocd app "+ArgoApp(env))
			require.Contains(t, out, "2 time(s) at revision "+rev[:12], "the no-op before the real self-heal cannot be told apart")
		}
	}
	code, out := l.relcapCode(t, "ownership", "check", "--env", env)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "WARNING ownership.drift-loop argocd app "+ArgoApp(env))
	require.Regexp(t, `\b[34] automated syncs re-applied revision `+rev[:12], out, "three real self-heals, and at most one no-op of Argo CD 3.x")
	require.NotContains(t, out, "ownership.self-healed", "three in a row are a drift loop, said once")
	// relcap's own history: the check's session journal records the
	// finding, for the audit and the drift-age measure.
	var sessions []struct{ ID, Command string }
	require.NoError(t, json.Unmarshal([]byte(l.relcapOK(t, "--json", "journal", "list")), &sessions))
	last := sessions[len(sessions)-1]
	require.Equal(t, "ownership check", last.Command)
	journal := l.relcapOK(t, "journal", "show", last.ID)
	require.Contains(t, journal, "ownership.checked")
	require.Contains(t, journal, `"ownership.drift-loop":1`)
	l.relcapOK(t, "converge", "--env", env, "--revision", rev, "--timeout", "1m")
}

// DriftLoopSelfHeals is workflow.DriftLoopThreshold, the self-heals in a
// row that make a drift loop.
const DriftLoopSelfHeals = 3

// testFailedSync: a person commits a manifest the API server refuses (a
// containerPort out of range). Argo CD's sync fails and it retries for
// minutes; relcap converge names the failed sync at the first failure
// (exit 4, with the next safe action). relcap rollback restores the file
// as the last good release converged, ends the retries that would hold
// its revision back, and converges.
func testFailedSync(t *testing.T, l *e2eLab, repo func(string) string) {
	goodRelease, good := l.convergedRelease(t, "4.0.0")
	rev := l.editManifest(t, "staging", "expose web on 70000", func(d map[string]any) {
		c := d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["ports"] = []any{map[string]any{"containerPort": 70000}}
	})
	start := time.Now()
	code, out := l.relcapCode(t, "converge", "--env", "staging", "--revision", rev, "--timeout", "3m")
	took := time.Since(start)
	require.Equal(t, 4, code, "converge must report the failed sync:\n%s", out)
	t.Logf("failed sync named after %s", took.Round(time.Second))
	require.Less(t, took, time.Minute, "named at the first failed attempt, not after Argo CD's minutes of retries")
	require.Contains(t, out, "convergence.sync-failed")
	require.Contains(t, out, "but the API server rejects the manifests, so no retry can pass")
	require.Contains(t, out, "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000")
	require.Contains(t, out, "next: fix the manifests in the environment repo (a new commit), or roll back with relcap rollback")
	require.NotContains(t, out, "application controller sync timeout", "Argo CD's misleading retry wording is not repeated")
	// Cross-check: Argo CD is retrying that revision, and the API server
	// kept the old Deployment (the good digest, no port).
	op := l.kubectl(t, "get", "application", ArgoApp("staging"), "-n", ArgoNamespace, "-o", "jsonpath={.status.operationState.phase} {.status.operationState.retryCount} {.status.operationState.operation.sync.revision}")
	require.Regexp(t, `^Running [1-9] `+rev+`$`, op)
	image, ready, want := l.live(t, "staging")
	require.Equal(t, repo("staging")+"@"+good, image)
	require.Equal(t, want, ready)
	require.Empty(t, l.kubectl(t, "get", "deployment", AppName, "-n", Namespace("staging"), "-o", "jsonpath={.spec.template.spec.containers[0].ports}"))

	out = l.relcapOK(t, "--actor", "alice", "rollback", "--env", "staging", "--to", goodRelease, "--timeout", "2m")
	require.Contains(t, out, "ending Argo CD's retries of the failed sync of "+rev[:10])
	require.Contains(t, out, "back to release "+goodRelease)
	require.Contains(t, out, "converged in staging")
	require.NotContains(t, l.runGit(t, "show", "main:"+ManifestPath("staging")), "70000", "the rollback restored the manifest as the good release converged")
	require.Contains(t, l.runGit(t, "log", "-1", "--format=%B", "main"), "as release "+goodRelease+" converged with it")
	op = l.kubectl(t, "get", "application", ArgoApp("staging"), "-n", ArgoNamespace, "-o", "jsonpath={.status.operationState.phase} {.status.operationState.operation.sync.revision}")
	require.NotEqual(t, "Running "+rev, op, "no retry of the bad revision is left")
	require.Equal(t, "Synced "+l.headRev(t), l.kubectl(t, "get", "application", ArgoApp("staging"), "-n", ArgoNamespace, "-o", "jsonpath={.status.sync.status} {.status.sync.revision}"))
	image, ready, want = l.live(t, "staging")
	require.Equal(t, repo("staging")+"@"+good, image)
	require.Equal(t, want, ready)
}

// testInterruptedReconciliation: Argo CD's application controller is
// killed in the middle of a rollout (the new Pods take SlowStartDelay to
// become ready). What Argo CD reports freezes at Progressing; relcap
// converge asks for a refresh, gets no answer and names the stalled
// controller (exit 4, with the next safe action) instead of waiting out its
// timeout. Once the controller is restarted, converge picks the release up
// where Argo CD is, and rollback converges.
func testInterruptedReconciliation(t *testing.T, l *e2eLab, repo func(string) string) {
	goodRelease, good := l.convergedRelease(t, "5.0.0")
	slowRef, slow := l.armedBuild(t, "5.1.0", SlowStartAnnotation, "starts slowly")

	l.relcapOK(t, "--actor", "alice", "promote", "--env", "staging", "--image", slowRef)
	head := l.headRev(t)
	eventually(t, 60*time.Second, "argo cd syncing "+head[:10]+" and the rollout starting", func() (bool, string) {
		s := l.kubectl(t, "get", "application", ArgoApp("staging"), "-n", ArgoNamespace, "-o", "jsonpath={.status.sync.status} {.status.sync.revision} {.status.health.status}")
		return s == "Synced "+head+" Progressing", s
	})
	code, out := l.run(t, l.lab, "stop", "--dir", l.dir, "--grace", "0s", "argocd-application-controller")
	require.Equal(t, 0, code, out)
	eventually(t, 20*time.Second, "the rollout's new Pod, not ready yet", func() (bool, string) {
		pods := l.kubectl(t, "get", "pods", "-n", Namespace("staging"), "-o", `jsonpath={range .items[*]}{.spec.containers[0].image} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		// No Ready condition yet, or False; kubectl's output is trimmed, so the last line ends early.
		return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(repo("staging")+"@"+slow) + `( False| )?$`).MatchString(pods), pods
	})

	start := time.Now()
	code, out = l.relcapCode(t, "converge", "--env", "staging", "--timeout", "3m")
	took := time.Since(start)
	require.Equal(t, 4, code, "converge must report the stalled controller:\n%s", out)
	t.Logf("stalled controller named after %s", took.Round(time.Second))
	require.Less(t, took, 2*time.Minute, "named well before the timeout")
	require.Contains(t, out, "convergence.reconciliation-stalled")
	require.Contains(t, out, "Argo CD's application controller did not reconcile "+ArgoApp("staging")+" within 20s of a refresh request")
	require.Contains(t, out, "so its status is frozen at sync Synced at "+head[:12]+", health Progressing")
	require.Contains(t, out, "next: check argocd-application-controller")
	require.Contains(t, out, "relcap rollback")
	// Cross-check: the lab reports the controller gone, and the
	// Application was not reconciled since it stopped.
	code, status := l.run(t, l.lab, "status", "--dir", l.dir)
	require.NotEqual(t, 0, code)
	require.Contains(t, status, "argocd-application-controller")
	require.Contains(t, status, "not running")
	reconciled, err := time.Parse(time.RFC3339, l.kubectl(t, "get", "application", ArgoApp("staging"), "-n", ArgoNamespace, "-o", "jsonpath={.status.reconciledAt}"))
	require.NoError(t, err)
	require.Greater(t, time.Since(reconciled), 30*time.Second, "the application's status is frozen")

	code, out = l.run(t, l.lab, "start", "--dir", l.dir, "argocd-application-controller")
	require.Equal(t, 0, code, out)
	// The next safe action holds: with the controller back, converge
	// picks up where Argo CD is (the rollout went on in the cluster) ...
	out = l.relcapOK(t, "converge", "--env", "staging", "--timeout", "3m")
	require.Contains(t, out, "converged in staging")
	require.Contains(t, out, slow)
	// ... and a captain who does not trust the interrupted release rolls
	// back.
	out = l.relcapOK(t, "--actor", "alice", "rollback", "--env", "staging", "--to", goodRelease, "--timeout", "3m")
	require.Contains(t, out, "back to release "+goodRelease)
	require.Contains(t, out, "converged in staging")
	image, ready, want := l.live(t, "staging")
	require.Equal(t, repo("staging")+"@"+good, image, "the apiserver runs the rolled-back digest")
	require.Equal(t, want, ready)
	code, status = l.run(t, l.lab, "status", "--dir", l.dir)
	require.Equal(t, 0, code, "every component runs again:\n%s", status)
	require.True(t, strings.Contains(status, "argocd-application-controller"), status)
}
