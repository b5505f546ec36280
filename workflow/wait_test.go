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
