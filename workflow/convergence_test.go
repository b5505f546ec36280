package workflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
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
		state    workflow.AppState
		verdict  workflow.VerdictKind
		terminal bool
	}{
		{"converged", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Healthy", Operation: "Succeeded", Images: []string{img}}, workflow.VerdictConverged, false},
		{"healthy at the wrong revision", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev1", Health: "Healthy", Images: []string{img}}, workflow.VerdictWrongRevision, false},
		{"out of sync", workflow.AppState{SyncStatus: "OutOfSync", SyncRevision: "rev1", Health: "Healthy"}, workflow.VerdictProgressing, false},
		{"applied, still progressing", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Progressing", Images: []string{img}}, workflow.VerdictAppliedUnhealthy, false},
		{"applied, degraded", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Degraded", Images: []string{img}}, workflow.VerdictAppliedUnhealthy, true},
		{"running another digest", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Healthy", Images: []string{"registry.test/web:latest"}}, workflow.VerdictWrongArtifact, false},
		{"sync failed", workflow.AppState{SyncStatus: "OutOfSync", Operation: "Failed", OperationMsg: "invalid manifest"}, workflow.VerdictSyncFailed, true},
		{"sync operation running", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Healthy", Operation: "Running", Images: []string{img}}, workflow.VerdictProgressing, false},
		{"sync failed, retried, manifest rejected by the API server", workflow.AppState{SyncStatus: "OutOfSync", SyncRevision: "rev2", Health: "Healthy", Operation: "Running", OperationRetries: 1, OperationRevision: "rev2",
			OperationMsg: `one or more objects failed to apply, reason: Deployment.apps "web" is invalid: spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000`}, workflow.VerdictSyncFailed, true},
		{"sync failed, retried, transient", workflow.AppState{SyncStatus: "OutOfSync", SyncRevision: "rev2", Health: "Healthy", Operation: "Running", OperationRetries: 2, OperationRevision: "rev2",
			OperationMsg: "one or more objects failed to apply, reason: the server could not find the requested resource"}, workflow.VerdictProgressing, false},
		{"retries of an older revision hold the wanted one back", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Healthy", Operation: "Running", OperationRetries: 3, OperationRevision: "rev1",
			OperationMsg: `Deployment.apps "web" is invalid`, Images: []string{img}}, workflow.VerdictProgressing, false},
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
	pull := []workflow.AppResource{{Kind: "Deployment", Namespace: "web", Name: "web", Health: "Progressing"},
		{Kind: "Pod", Namespace: "web", Name: "web-1", Health: "Progressing", Message: "Back-off pulling image \"r/web@sha256:…\""}}
	v, failed := workflow.ResourceFailure(pull, nil, time.Minute)
	require.True(t, failed)
	require.Equal(t, workflow.VerdictImagePullFailed, v.Kind)
	require.Contains(t, v.NextAction, "relcap rollback")

	starting := []workflow.AppResource{{Kind: "Pod", Namespace: "web", Name: "web-2", Health: "Progressing", Message: "Readiness probe failed: connection refused"}}
	_, failed = workflow.ResourceFailure(starting, func(workflow.AppResource) time.Duration { return 10 * time.Second }, time.Minute)
	require.False(t, failed, "a starting pod may fail a few probes")
	v, failed = workflow.ResourceFailure(starting, func(workflow.AppResource) time.Duration { return 2 * time.Minute }, time.Minute)
	require.True(t, failed)
	require.Equal(t, workflow.VerdictReadinessFailed, v.Kind)
	require.Equal(t, "Pod web/web-2 does not become ready (not ready for over 1m0s, argocd.readiness_grace): Readiness probe failed: connection refused", v.Reason,
		"the reason names the grace it was given and the setting that gives it")

	_, failed = workflow.ResourceFailure([]workflow.AppResource{{Kind: "Pod", Name: "ok", Health: "Healthy"}}, nil, time.Minute)
	require.False(t, failed)
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
	st := workflow.AppState{SyncStatus: "Synced", SyncRevision: "revert", Health: "Healthy", Images: []string{img},
		Operation: "Failed", OperationMsg: "spec.replicas: Invalid value: -1", OperationRevision: "bad"}
	require.Equal(t, workflow.VerdictConverged, workflow.Converged(st, workflow.Want{Revision: "revert", Digest: d}).Kind)
	v := workflow.Converged(st, workflow.Want{Revision: "bad", Digest: d})
	require.Equal(t, workflow.VerdictSyncFailed, v.Kind, "the bad commit's own failure still counts")
	require.True(t, v.Terminal)
}
