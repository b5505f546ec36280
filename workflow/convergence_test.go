package workflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
)

func TestConvergedJudgesSyncHealthRevisionAndDigestSeparately(t *testing.T) {
	t.Parallel()
	d, err := image.ParseDigest("sha256:" + strings.Repeat("ab", 32))
	require.NoError(t, err)
	img := "registry.test/web@" + d.String()
	want := workflow.Want{Revision: "rev2", Digest: d}
	cases := []struct {
		name     string
		state    appstate.AppState
		verdict  appstate.VerdictKind
		terminal bool
	}{
		{"converged", appstate.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Healthy", Operation: "Succeeded", Images: []string{img}}, appstate.VerdictConverged, false},
		{"healthy at the wrong revision", appstate.AppState{SyncStatus: "Synced", SyncRevision: "rev1", Health: "Healthy", Images: []string{img}}, appstate.VerdictWrongRevision, false},
		{"out of sync", appstate.AppState{SyncStatus: "OutOfSync", SyncRevision: "rev1", Health: "Healthy"}, appstate.VerdictProgressing, false},
		{"applied, still progressing", appstate.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Progressing", Images: []string{img}}, appstate.VerdictAppliedUnhealthy, false},
		{"applied, degraded", appstate.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Degraded", Images: []string{img}}, appstate.VerdictAppliedUnhealthy, true},
		{"running another digest", appstate.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Healthy", Images: []string{"registry.test/web:latest"}}, appstate.VerdictWrongArtifact, false},
		{"sync failed", appstate.AppState{SyncStatus: "OutOfSync", Operation: "Failed", OperationMsg: "invalid manifest"}, appstate.VerdictSyncFailed, true},
		{"sync operation running", appstate.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Healthy", Operation: "Running", Images: []string{img}}, appstate.VerdictProgressing, false},
		{"sync failed, retried, manifest rejected by the API server", appstate.AppState{SyncStatus: "OutOfSync", SyncRevision: "rev2", Health: "Healthy", Operation: "Running", OperationRetries: 1, OperationRevision: "rev2",
			OperationMsg: `one or more objects failed to apply, reason: Deployment.apps "web" is invalid: spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000`}, appstate.VerdictSyncFailed, true},
		{"sync failed, retried, transient", appstate.AppState{SyncStatus: "OutOfSync", SyncRevision: "rev2", Health: "Healthy", Operation: "Running", OperationRetries: 2, OperationRevision: "rev2",
			OperationMsg: "one or more objects failed to apply, reason: the server could not find the requested resource"}, appstate.VerdictProgressing, false},
		{"retries of an older revision hold the wanted one back", appstate.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Healthy", Operation: "Running", OperationRetries: 3, OperationRevision: "rev1",
			OperationMsg: `Deployment.apps "web" is invalid`, Images: []string{img}}, appstate.VerdictProgressing, false},
	}
	for _, c := range cases {
		v := workflow.Converged(c.state, want)
		require.Equal(t, c.verdict, v.Kind, c.name)
		require.Equal(t, c.terminal, v.Terminal, c.name)
		if v.Terminal {
			require.NotEmpty(t, v.NextAction, c.name)
		}
	}
}

func TestCountApprovalsBindsToTheExactSubject(t *testing.T) {
	t.Parallel()
	approvals := []approval.Approval{
		{Kind: "plan", Subject: "fp-old", Approver: "carol"},
		{Kind: "plan", Subject: "fp-new", Approver: "alice"},
		{Kind: "plan", Subject: "fp-new", Approver: "bob"},
		{Kind: "plan", Subject: "fp-new", Approver: "bob"},
	}
	c := approval.Rule{Kind: approval.Plan, Required: 2, DistinctFromAuthor: true}.Count(approval.Target{Subject: "fp-new"}, "alice", approvals, nil)
	require.Len(t, c.Counted, 1, "only bob counts: alice is the author, carol approved another plan, bob counts once")
	require.Equal(t, 1, c.Missing())
	require.Contains(t, c.Ignored["carol"], "fp-old")

	c = approval.Rule{Kind: approval.Plan, Required: 2}.Count(approval.Target{Subject: "fp-new"}, "alice", approvals, nil)
	require.True(t, c.Satisfied())
}

func TestParseDigestRejectsTagsAndMalformedDigests(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "latest", "sha256:abc", "md5:" + strings.Repeat("a", 32), "sha256:" + strings.Repeat("A", 64)} {
		_, err := image.ParseDigest(bad)
		require.ErrorIs(t, err, fault.ErrUsage, bad)
	}
	d, err := image.ParseDigest("sha256:" + strings.Repeat("0f", 32))
	require.NoError(t, err)
	require.Equal(t, "0f0f0f0f0f0f", d.Short())
}

func TestResourceFailureNamesPodFailuresThatTheApplicationHides(t *testing.T) {
	t.Parallel()
	pull := []appstate.AppResource{{Kind: "Deployment", Namespace: "web", Name: "web", Health: "Progressing"},
		{Kind: "Pod", Namespace: "web", Name: "web-1", Health: "Progressing", Message: "Back-off pulling image \"r/web@sha256:…\""}}
	v, failed := workflow.ResourceFailure(pull, image.Digest{}, nil, time.Minute)
	require.True(t, failed)
	require.Equal(t, appstate.VerdictImagePullFailed, v.Kind)
	require.Contains(t, v.NextAction, "relcap rollback")

	starting := []appstate.AppResource{{Kind: "Pod", Namespace: "web", Name: "web-2", Health: "Progressing", Message: "Readiness probe failed: connection refused"}}
	_, failed = workflow.ResourceFailure(starting, image.Digest{}, func(appstate.AppResource) time.Duration { return 10 * time.Second }, time.Minute)
	require.False(t, failed, "a starting pod may fail a few probes")
	v, failed = workflow.ResourceFailure(starting, image.Digest{}, func(appstate.AppResource) time.Duration { return 2 * time.Minute }, time.Minute)
	require.True(t, failed)
	require.Equal(t, appstate.VerdictReadinessFailed, v.Kind)
	require.Equal(t, "Pod web/web-2 does not become ready (not ready for over 1m0s, argocd.readiness_grace): Readiness probe failed: connection refused", v.Reason,
		"the reason names the grace it was given and the setting that gives it")

	_, failed = workflow.ResourceFailure([]appstate.AppResource{{Kind: "Pod", Name: "ok", Health: "Healthy"}}, image.Digest{}, nil, time.Minute)
	require.False(t, failed)
}

// TestResourceFailureIsTheRolloutsOwnNotThePodItReplaces: a rollback (or a
// rehearsal's recovery) restores a good digest while the broken Pod of the
// bad one still backs off until the restored ReplicaSet is ready. That Pod
// is not the restored rollout's failure; a Pod of the promoted digest is.
func TestResourceFailureIsTheRolloutsOwnNotThePodItReplaces(t *testing.T) {
	t.Parallel()
	good, err := image.ParseDigest("sha256:" + strings.Repeat("9a", 32))
	require.NoError(t, err)
	bad, err := image.ParseDigest("sha256:" + strings.Repeat("82", 32))
	require.NoError(t, err)
	leaving := appstate.AppResource{Kind: "Pod", Namespace: "web", Name: "web-old", Health: "Progressing",
		Message: "Back-off pulling image \"r/web@" + bad.String() + "\"", Images: []string{"r/web@" + bad.String()}}
	starting := appstate.AppResource{Kind: "Pod", Namespace: "web", Name: "web-new", Health: "Progressing", Images: []string{"r/web@" + good.String()}}

	_, failed := workflow.ResourceFailure([]appstate.AppResource{leaving, starting}, good, nil, time.Minute)
	require.False(t, failed, "the bad digest's Pod is being replaced; the restored one is starting")

	v, failed := workflow.ResourceFailure([]appstate.AppResource{leaving, starting}, bad, nil, time.Minute)
	require.True(t, failed, "promoting the bad digest, its Pod's failure is the rollout's")
	require.Equal(t, appstate.VerdictImagePullFailed, v.Kind)

	unknown := leaving
	unknown.Images = nil
	_, failed = workflow.ResourceFailure([]appstate.AppResource{unknown}, good, nil, time.Minute)
	require.True(t, failed, "a Pod whose images are not reported is judged, never assumed to be old")

	stuck := appstate.AppResource{Kind: "Pod", Namespace: "web", Name: "web-old2", Health: "Degraded", Message: "Readiness probe failed", Images: []string{"r/web@" + bad.String()}}
	_, failed = workflow.ResourceFailure([]appstate.AppResource{stuck}, good, nil, time.Minute)
	require.False(t, failed, "an old Pod's readiness is not the restored rollout's either")
}

// TestConvergedIgnoresAFailedOperationOfAnotherRevision protects the fix of
// a bad commit: after it is reverted Argo CD may find the revert already in
// sync and start no operation, so the last operation is still the failed
// one of the bad commit. Found against real Argo CD in the lab.
func TestConvergedIgnoresAFailedOperationOfAnotherRevision(t *testing.T) {
	t.Parallel()
	d, err := image.ParseDigest("sha256:" + strings.Repeat("cd", 32))
	require.NoError(t, err)
	img := "registry.test/web@" + d.String()
	st := appstate.AppState{SyncStatus: "Synced", SyncRevision: "revert", Health: "Healthy", Images: []string{img},
		Operation: "Failed", OperationMsg: "spec.replicas: Invalid value: -1", OperationRevision: "bad"}
	require.Equal(t, appstate.VerdictConverged, workflow.Converged(st, workflow.Want{Revision: "revert", Digest: d}).Kind)
	v := workflow.Converged(st, workflow.Want{Revision: "bad", Digest: d})
	require.Equal(t, appstate.VerdictSyncFailed, v.Kind, "the bad commit's own failure still counts")
	require.True(t, v.Terminal)
}
