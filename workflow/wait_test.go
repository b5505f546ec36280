package workflow_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

// rollingBack is a Convergence whose application still runs the failing
// previous revision (its Pod cannot pull its image) until, after a while,
// Argo CD syncs the wanted revision and turns healthy.
type rollingBack struct {
	want  workflow.Want
	after time.Duration
	start time.Time
}

func (c *rollingBack) state() workflow.AppState {
	img := "registry.test/web@" + c.want.Digest.String()
	if time.Since(c.start) < c.after {
		return workflow.AppState{SyncStatus: workflow.SyncOutOfSync, SyncRevision: "bad-rev", Health: workflow.HealthProgressing, Version: "1"}
	}
	return workflow.AppState{SyncStatus: workflow.SyncSynced, SyncRevision: c.want.Revision, Health: workflow.HealthHealthy, Operation: workflow.OperationSucceeded, Images: []string{img}, Version: "2"}
}

func (c *rollingBack) Get(context.Context, workflow.AppRef) (workflow.AppState, error) {
	return c.state(), nil
}

func (c *rollingBack) Watch(ctx context.Context, _ workflow.AppRef, _ string) (<-chan workflow.AppUpdate, error) {
	ch := make(chan workflow.AppUpdate)
	go func() {
		defer close(ch)
		select {
		case <-time.After(time.Until(c.start.Add(c.after))):
		case <-ctx.Done():
			return
		}
		select {
		case ch <- workflow.AppUpdate{State: c.state()}:
		case <-ctx.Done():
		}
		<-ctx.Done()
	}()
	return ch, nil
}

func (c *rollingBack) ResourceTree(context.Context, workflow.AppRef) ([]workflow.AppResource, error) {
	if time.Since(c.start) < c.after {
		return []workflow.AppResource{{Kind: "Pod", Namespace: "web", Name: "web-bad", Health: workflow.HealthDegraded, Message: `Back-off pulling image "registry.test/web@sha256:bad"`}}, nil
	}
	return []workflow.AppResource{{Kind: "Pod", Namespace: "web", Name: "web-good", Health: workflow.HealthHealthy}}, nil
}

// TestWaitConvergedIgnoresThePreviousRevisionsFailingPods protects
// rollbacks: before Argo CD syncs the wanted revision, the tree still shows
// the Pods of the release being replaced, whose pull failure is the reason
// for the rollback, not its result. Found against real Argo CD in the lab.
func TestWaitConvergedIgnoresThePreviousRevisionsFailingPods(t *testing.T) {
	t.Parallel()
	d, err := workflow.ParseDigest("sha256:" + strings.Repeat("ab", 32))
	require.NoError(t, err)
	c := &rollingBack{want: workflow.Want{Revision: "good-rev", Digest: d}, after: 2500 * time.Millisecond, start: time.Now()}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	st, v, err := workflow.WaitConverged(ctx, c, workflow.AppRef{Name: "web"}, c.want, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.VerdictConverged, v.Kind, "%+v", v)
	require.Equal(t, "good-rev", st.SyncRevision)
}

// quiet is a Convergence whose application never changes (a frozen
// status) and whose controller answers refresh requests or not.
type quiet struct {
	answers  bool
	refreshs int
}

func (q *quiet) Get(context.Context, workflow.AppRef) (workflow.AppState, error) {
	return workflow.AppState{Name: "web", SyncStatus: workflow.SyncSynced, SyncRevision: "rev2", Health: workflow.HealthProgressing, Version: "7",
		ReconciledAt: time.Now().Add(-time.Minute)}, nil
}

func (q *quiet) Watch(ctx context.Context, _ workflow.AppRef, _ string) (<-chan workflow.AppUpdate, error) {
	ch := make(chan workflow.AppUpdate)
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}

func (q *quiet) Refresh(ctx context.Context, _ workflow.AppRef, within time.Duration) error {
	q.refreshs++
	if q.answers {
		return nil
	}
	select {
	case <-time.After(within):
		return workflow.ErrNotReconciled
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestWaitConvergedTellsAQuietRolloutFromAStoppedController: a status that
// does not change is asked about; a controller that answers keeps the
// watch waiting (and asked again later), one that does not is named.
func TestWaitConvergedTellsAQuietRolloutFromAStoppedController(t *testing.T) {
	t.Parallel()
	o := workflow.WaitOptions{TreeInterval: 20 * time.Millisecond, ReadinessGrace: time.Minute, StallAfter: 100 * time.Millisecond, RefreshWithin: 100 * time.Millisecond}
	want := workflow.Want{Revision: "rev2"}

	alive := &quiet{answers: true}
	ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
	defer cancel()
	_, v, err := workflow.WaitConvergedWith(ctx, alive, workflow.AppRef{Name: "web"}, want, nil, o)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a controller that answers is not a stall: the watch waits on")
	require.Equal(t, workflow.VerdictAppliedUnhealthy, v.Kind)
	require.GreaterOrEqual(t, alive.refreshs, 2, "asked again after each quiet period")

	stopped := &quiet{}
	st, v, err := workflow.WaitConvergedWith(t.Context(), stopped, workflow.AppRef{Name: "web"}, want, nil, o)
	require.NoError(t, err)
	require.Equal(t, workflow.VerdictReconcileStalled, v.Kind)
	require.True(t, v.Terminal)
	require.Equal(t, 1, stopped.refreshs)
	require.Equal(t, workflow.HealthProgressing, st.Health)
	require.Contains(t, v.Reason, "did not reconcile web within 100ms of a refresh request; it last reconciled at ")
	require.Regexp(t, `\(1m\ds ago\)`, v.Reason)
	require.Contains(t, v.Reason, "frozen at sync Synced at rev2, health Progressing")
}
