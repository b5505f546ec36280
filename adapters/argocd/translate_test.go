package argocd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
)

func TestOperationFollowsAppWaitsInProgressRule(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	finished := metav1.NewTime(t0)
	before, after := metav1.NewTime(t0.Add(-time.Second)), metav1.NewTime(t0.Add(time.Second))
	succeeded := func(reconciled *metav1.Time) v1alpha1.Application {
		return v1alpha1.Application{Status: v1alpha1.ApplicationStatus{
			ReconciledAt:   reconciled,
			OperationState: &v1alpha1.OperationState{Phase: "Succeeded", Message: "ok", FinishedAt: &finished},
		}}
	}
	cases := []struct {
		name      string
		app       v1alpha1.Application
		wantPhase appstate.OperationPhase
	}{
		{"no operation ever", v1alpha1.Application{}, ""},
		{"requested, not yet picked up", v1alpha1.Application{Operation: &v1alpha1.Operation{Sync: &v1alpha1.SyncOperation{}},
			Status: v1alpha1.ApplicationStatus{OperationState: &v1alpha1.OperationState{Phase: "Failed"}}}, appstate.OperationRunning},
		{"succeeded but not reconciled since", succeeded(&before), appstate.OperationRunning},
		{"succeeded, never reconciled", succeeded(nil), appstate.OperationRunning},
		{"succeeded and reconciled", succeeded(&after), appstate.OperationSucceeded},
		{"succeeded and reconciled the same instant", succeeded(&finished), appstate.OperationSucceeded},
		{"terminating", v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: &v1alpha1.OperationState{Phase: "Terminating"}}}, appstate.OperationRunning},
		{"failed stays failed", v1alpha1.Application{Status: v1alpha1.ApplicationStatus{ReconciledAt: &before,
			OperationState: &v1alpha1.OperationState{Phase: "Failed", Message: "boom", FinishedAt: &finished}}}, appstate.OperationFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			phase, _ := operation(&tc.app)
			require.Equal(t, tc.wantPhase, phase)
		})
	}
}

func TestToStateFillsGapsArgoCDLeaves(t *testing.T) {
	t.Parallel()
	app := &v1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "web", ResourceVersion: "42"},
		Status: v1alpha1.ApplicationStatus{
			Sync:   v1alpha1.SyncStatus{Revisions: []string{"abc", "def"}},
			Health: v1alpha1.HealthStatus{Status: "Degraded"},
			Resources: []v1alpha1.ResourceStatus{
				{Group: "", Kind: "Service", Name: "web", Status: "Synced", Health: &v1alpha1.HealthStatus{Status: "Healthy"}},
				{Group: "apps", Kind: "Deployment", Name: "web", Status: "Synced", Health: &v1alpha1.HealthStatus{Status: "Degraded", Message: "exceeded its progress deadline"}},
			},
		},
	}
	st := toState(app, time.Time{})
	require.Equal(t, appstate.SyncUnknown, st.SyncStatus)
	require.Equal(t, "abc", st.SyncRevision, "a multi-source app reports its first source's revision")
	require.Equal(t, "Deployment web: exceeded its progress deadline", st.HealthMessage)
	require.False(t, st.AutoSync)

	require.Equal(t, appstate.HealthUnknown, toState(&v1alpha1.Application{}, time.Time{}).Health)
}

func TestNewerComparesResourceVersionsAsArgoCDDoes(t *testing.T) {
	t.Parallel()
	require.True(t, newer("10", ""))
	require.True(t, newer("10", "9"), "numerically, not as strings")
	require.False(t, newer("9", "10"))
	require.False(t, newer("10", "10"))
	require.True(t, newer("b", "a"))
	require.False(t, newer("a", "a"))
}

// TestARetriedSyncIsTranslatedWithItsFailure: Argo CD keeps
// app.operation set while a failed automated sync waits to be retried,
// with the phase Running and a message blaming a "sync timeout" whatever
// failed. The state carries the real failure and the attempt count
// (found on the lab with an invalid containerPort).
func TestARetriedSyncIsTranslatedWithItsFailure(t *testing.T) {
	t.Parallel()
	finished := metav1.NewTime(time.Date(2026, 11, 30, 16, 59, 0, 0, time.UTC))
	rev := "d07523a20fcd0d07da59849ab6a589fc2f8db916"
	sync := &v1alpha1.SyncOperation{Revision: rev}
	app := &v1alpha1.Application{
		Operation: &v1alpha1.Operation{Sync: sync, InitiatedBy: v1alpha1.OperationInitiator{Automated: true}},
		Status: v1alpha1.ApplicationStatus{
			Sync: v1alpha1.SyncStatus{Status: "OutOfSync", Revision: rev},
			OperationState: &v1alpha1.OperationState{Operation: v1alpha1.Operation{Sync: sync}, Phase: "Running", RetryCount: 2, FinishedAt: &finished,
				Message: `one or more objects failed to apply, reason: error when patching "/dev/shm/3098592292": Deployment.apps "web" is invalid: spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive due to application controller sync timeout. Retrying attempt #2 at 5:00PM.`},
		},
	}
	st := toState(app, time.Time{})
	require.Equal(t, appstate.OperationRunning, st.Operation)
	require.Equal(t, 2, st.OperationRetries)
	require.Equal(t, rev, st.OperationRevision)
	require.Equal(t, `one or more objects failed to apply, reason: error when patching "/dev/shm/3098592292": Deployment.apps "web" is invalid: spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`, st.OperationMsg)
	v := workflow.Converged(st, workflow.Want{Revision: rev})
	require.Equal(t, appstate.VerdictSyncFailed, v.Kind, v.Reason)
	require.True(t, v.Terminal)
}
