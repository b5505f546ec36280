package argocd_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
)

// These tests run the domain's convergence algorithm (workflow.WaitConverged)
// end to end: adapter → argo-cd apiclient → gRPC → simulator.

func TestWaitConvergedConvergesOnlyWhenRevisionHealthAndDigestMatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *argosim.AppConfig) { c.TimeToHealthy = time.Second })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	rev2 := e.repo.Pin(t, "v2")
	var seen []appstate.AppState
	st, v, err := workflow.WaitConverged(ctx, e.adapter, e.ref, workflow.Want{Revision: rev2, Digest: digest(t, "v2")}, func(s appstate.AppState) { seen = append(seen, s) })
	require.NoError(t, err)
	require.Equal(t, appstate.VerdictConverged, v.Kind, v.Reason)
	require.Equal(t, rev2, st.SyncRevision)
	require.Equal(t, []string{imageRef("v2")}, st.Images)
	for _, s := range seen[:len(seen)-1] {
		require.NotEqual(t, appstate.VerdictConverged, workflow.Converged(s, workflow.Want{Revision: rev2, Digest: digest(t, "v2")}).Kind,
			"converged at the first state that matches, not before: %v", summary(seen))
	}
	require.Greater(t, len(seen), 2, "the wait watched the rollout rather than polling once: %v", summary(seen))
}

func TestWaitConvergedDoesNotAcceptAHealthyAppAtTheWrongRevisionOrDigest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	getUntil(t, t.Context(), e, 2*time.Second, convergedAt(e.rev1, "v1"))

	for _, tc := range []struct {
		name string
		want workflow.Want
		kind appstate.VerdictKind
	}{
		{"a revision the app is not at", workflow.Want{Revision: strings.Repeat("ab", 20), Digest: digest(t, "v1")}, appstate.VerdictWrongRevision},
		{"a digest the app does not run", workflow.Want{Revision: e.rev1, Digest: digest(t, "v9")}, appstate.VerdictWrongArtifact},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 800*time.Millisecond)
		_, v, err := workflow.WaitConverged(ctx, e.adapter, e.ref, tc.want, nil)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, tc.name)
		require.Equal(t, tc.kind, v.Kind, tc.name)
		require.NotEmpty(t, v.NextAction, tc.name)
	}
}

// failDuringRollout starts WaitConverged for a new commit, injects a pod
// failure once the new revision is synced and still progressing, and
// returns the verdict and how long after the injection it came.
func failDuringRollout(t *testing.T, e *env, inject func(app string) error) (workflow.Verdict, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	rev2 := e.repo.Pin(t, "v2")
	type result struct {
		v   workflow.Verdict
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		_, v, err := workflow.WaitConverged(ctx, e.adapter, e.ref, workflow.Want{Revision: rev2, Digest: digest(t, "v2")}, nil)
		done <- result{v, err, time.Now()}
	}()
	getUntil(t, ctx, e, 3*time.Second, func(s appstate.AppState) bool {
		return s.SyncStatus == appstate.SyncSynced && s.SyncRevision == rev2 && s.Health == appstate.HealthProgressing
	})
	injected := time.Now()
	require.NoError(t, inject(e.ref.Name))
	r := <-done
	require.NoError(t, r.err)
	return r.v, r.at.Sub(injected)
}

func TestWaitConvergedDetectsImagePullFailureWithANextAction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *argosim.AppConfig) { c.TimeToHealthy = 30 * time.Second })
	v, after := failDuringRollout(t, e, e.sim.FailImagePull)
	t.Logf("image pull failure detected %s after it appeared", after)
	require.Less(t, after, 5*time.Second)
	require.Equal(t, appstate.VerdictImagePullFailed, v.Kind, "named from the application's health message")
	require.True(t, v.Terminal)
	require.Contains(t, v.Reason, "Back-off pulling image")
	require.NotEmpty(t, v.NextAction)
}

func TestWaitConvergedDetectsReadinessFailureWithANextAction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *argosim.AppConfig) {
		c.TimeToHealthy = 30 * time.Second
		c.ProgressDeadline = time.Second
	})
	v, after := failDuringRollout(t, e, e.sim.FailReadiness)
	t.Logf("readiness failure detected %s after it appeared (progress deadline 1s)", after)
	require.Less(t, after, 5*time.Second)
	require.Equal(t, appstate.VerdictReadinessFailed, v.Kind, "named from the application's health message")
	require.True(t, v.Terminal)
	require.Contains(t, v.Reason, "Readiness probe failed")
	require.NotEmpty(t, v.NextAction)
}

func TestWaitConvergedReportsAFailedSync(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	require.NoError(t, e.sim.FailSync(e.ref.Name, "admission webhook denied the request (simulated)"))
	rev2 := e.repo.Pin(t, "v2")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, v, err := workflow.WaitConverged(ctx, e.adapter, e.ref, workflow.Want{Revision: rev2, Digest: digest(t, "v2")}, nil)
	require.NoError(t, err)
	require.Equal(t, appstate.VerdictSyncFailed, v.Kind)
	require.True(t, v.Terminal)
	require.Contains(t, v.Reason, "admission webhook denied the request")
	require.NotEmpty(t, v.NextAction)
}

// TestWaitConvergedNamesAStoppedControllerAndRecoversWhenItIsBack: with
// the application controller stopped mid-rollout what Argo CD reports
// freezes; the watch asks for a refresh, gets no answer and names the
// stall instead of waiting out its timeout. Once the controller is back,
// a refresh is answered and the same release converges.
func TestWaitConvergedNamesAStoppedControllerAndRecoversWhenItIsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *argosim.AppConfig) { c.TimeToHealthy = 2 * time.Second })
	want := workflow.Want{Revision: e.repo.Pin(t, "v2"), Digest: digest(t, "v2")}
	getUntil(t, t.Context(), e, 5*time.Second, func(s appstate.AppState) bool {
		return s.SyncRevision == want.Revision && s.Health == appstate.HealthProgressing
	})
	e.sim.StopController()
	o := workflow.WaitOptions{TreeInterval: 100 * time.Millisecond, ReadinessGrace: time.Minute, StallAfter: 500 * time.Millisecond, RefreshWithin: 700 * time.Millisecond}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	st, v, err := workflow.Watch{Source: e.adapter, Options: o}.Wait(ctx, e.ref, want)
	require.NoError(t, err)
	require.Equal(t, appstate.VerdictReconcileStalled, v.Kind, v.Reason)
	require.True(t, v.Terminal)
	require.Less(t, time.Since(start), 5*time.Second, "named after StallAfter + RefreshWithin, not at the timeout")
	require.Equal(t, appstate.HealthProgressing, st.Health, "the frozen state is the one reported")
	require.Contains(t, v.Reason, "did not reconcile "+e.ref.Name+" within 700ms of a refresh request")
	require.Contains(t, v.Reason, "it last reconciled at ")
	require.Contains(t, v.NextAction, "argocd-application-controller")
	require.Contains(t, v.NextAction, "relcap rollback")

	e.sim.StartController()
	_, v, err = workflow.Watch{Source: e.adapter, Options: o}.Wait(ctx, e.ref, want)
	require.NoError(t, err)
	require.Equal(t, appstate.VerdictConverged, v.Kind, v.Reason)
}

// TestRefreshIsAnsweredWhileTheControllerRuns: a quiet application whose
// controller runs is not a stall.
func TestRefreshIsAnsweredWhileTheControllerRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	require.NoError(t, e.adapter.Refresh(t.Context(), e.ref, 2*time.Second))
	e.sim.StopController()
	err := e.adapter.Refresh(t.Context(), e.ref, 300*time.Millisecond)
	require.ErrorIs(t, err, fault.ErrNotReconciled)
	require.Contains(t, err.Error(), "no reconciliation within 300ms")
	e.sim.StartController()
	require.NoError(t, e.adapter.Refresh(t.Context(), e.ref, 2*time.Second))
}
