package workflow_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// waitResult is what Watch.Wait returned.
type waitResult struct {
	st  appstate.AppState
	v   workflow.Verdict
	err error
}

// waitDriven runs w.Wait in the background and moves the fake clock on by
// step whenever the watch waits on it, until the watch returns or stop
// (asked each time the watch waits) says to stop, which cancels it. No
// test waits on the wall clock: time passes only when the watch waits.
func waitDriven(t *testing.T, clock *workflowtest.Clock, w workflow.Watch, want workflow.Want, step time.Duration, stop func() bool) waitResult {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	waiting, returned := context.WithCancel(ctx)
	done := make(chan waitResult, 1)
	go func() {
		st, v, err := w.Wait(ctx, appstate.AppRef{Name: "web"}, want)
		done <- waitResult{st, v, err}
		returned()
	}()
	for range 10_000 {
		if !clock.WaitForTimers(waiting, 1) {
			return <-done
		}
		if stop != nil && stop() {
			cancel()
			return <-done
		}
		clock.Advance(step)
	}
	t.Fatal("the watch did not return after 10,000 steps of the clock")
	return waitResult{}
}

// rollingBack is a Convergence whose application still runs the failing
// previous revision (its Pod cannot pull its image) while the watch reads
// the resource tree a few times, then Argo CD syncs the wanted revision
// and turns healthy.
type rollingBack struct {
	want       workflow.Want
	failReads  int           // tree reads that still show the failing Pod
	syncedNow  chan struct{} // closed when the wanted revision is synced
	mu         sync.Mutex
	reads      int
	closedOnce sync.Once
}

func (c *rollingBack) synced() bool {
	select {
	case <-c.syncedNow:
		return true
	default:
		return false
	}
}

func (c *rollingBack) state() appstate.AppState {
	img := "registry.test/web@" + c.want.Digest.String()
	if !c.synced() {
		return appstate.AppState{SyncStatus: appstate.SyncOutOfSync, SyncRevision: "bad-rev", Health: appstate.HealthProgressing, Version: "1"}
	}
	return appstate.AppState{SyncStatus: appstate.SyncSynced, SyncRevision: c.want.Revision, Health: appstate.HealthHealthy, Operation: appstate.OperationSucceeded, Images: []string{img}, Version: "2"}
}

func (c *rollingBack) Get(context.Context, appstate.AppRef) (appstate.AppState, error) {
	return c.state(), nil
}

func (c *rollingBack) Watch(ctx context.Context, _ appstate.AppRef, _ string) (<-chan workflow.AppUpdate, error) {
	ch := make(chan workflow.AppUpdate)
	go func() {
		defer close(ch)
		select {
		case <-c.syncedNow:
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

func (c *rollingBack) ResourceTree(context.Context, appstate.AppRef) ([]appstate.AppResource, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reads < c.failReads {
		c.reads++
		return []appstate.AppResource{{Kind: "Pod", Namespace: "web", Name: "web-bad", Health: appstate.HealthDegraded, Message: `Back-off pulling image "registry.test/web@sha256:bad"`}}, nil
	}
	c.closedOnce.Do(func() { close(c.syncedNow) })
	return []appstate.AppResource{{Kind: "Pod", Namespace: "web", Name: "web-good", Health: appstate.HealthHealthy}}, nil
}

// TestWaitConvergedIgnoresThePreviousRevisionsFailingPods protects
// rollbacks: before Argo CD syncs the wanted revision, the tree still shows
// the Pods of the release being replaced, whose pull failure is the reason
// for the rollback, not its result. Found against real Argo CD in the lab.
func TestWaitConvergedIgnoresThePreviousRevisionsFailingPods(t *testing.T) {
	t.Parallel()
	d, err := image.ParseDigest("sha256:" + strings.Repeat("ab", 32))
	require.NoError(t, err)
	clock := workflowtest.NewClock(t0)
	c := &rollingBack{want: workflow.Want{Revision: "good-rev", Digest: d}, failReads: 3, syncedNow: make(chan struct{})}
	r := waitDriven(t, clock, workflow.Watch{Source: c, Clock: clock}, c.want, workflow.DefaultWaitOptions.TreeInterval, nil)
	require.NoError(t, r.err)
	require.Equal(t, appstate.VerdictConverged, r.v.Kind, "%+v", r.v)
	require.Equal(t, "good-rev", r.st.SyncRevision)
	require.Equal(t, 3, c.reads, "the watch read the failing tree three times and went on waiting")
}

// quiet is a Convergence whose application never changes (a frozen
// status) and whose controller answers refresh requests or not.
type quiet struct {
	clock    *workflowtest.Clock
	answers  bool
	refreshs int
}

func (q *quiet) Get(context.Context, appstate.AppRef) (appstate.AppState, error) {
	return appstate.AppState{Name: "web", SyncStatus: appstate.SyncSynced, SyncRevision: "rev2", Health: appstate.HealthProgressing, Version: "7",
		ReconciledAt: q.clock.Now().Add(-time.Minute)}, nil
}

func (q *quiet) Watch(ctx context.Context, _ appstate.AppRef, _ string) (<-chan workflow.AppUpdate, error) {
	ch := make(chan workflow.AppUpdate)
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}

func (q *quiet) Refresh(ctx context.Context, _ appstate.AppRef, within time.Duration) error {
	q.refreshs++
	if q.answers {
		return nil
	}
	select {
	case <-q.clock.After(within):
		return fault.ErrNotReconciled
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestWaitConvergedTellsAQuietRolloutFromAStoppedController: a status that
// does not change is asked about; a controller that answers keeps the
// watch waiting (and asked again later), one that does not is named.
func TestWaitConvergedTellsAQuietRolloutFromAStoppedController(t *testing.T) {
	t.Parallel()
	o := workflow.WaitOptions{TreeInterval: 2 * time.Second, ReadinessGrace: time.Minute, StallAfter: 30 * time.Second, RefreshWithin: 20 * time.Second}
	want := workflow.Want{Revision: "rev2"}

	clock := workflowtest.NewClock(t0)
	alive := &quiet{clock: clock, answers: true}
	r := waitDriven(t, clock, workflow.Watch{Source: alive, Clock: clock, Options: o}, want, o.TreeInterval,
		func() bool { return clock.Now().Sub(t0) >= 3*time.Minute })
	require.ErrorIs(t, r.err, context.Canceled, "a controller that answers is not a stall: the watch waits on")
	require.Equal(t, appstate.VerdictAppliedUnhealthy, r.v.Kind)
	require.Equal(t, 6, alive.refreshs, "asked once per 30 s of quiet in 3 minutes")

	clock = workflowtest.NewClock(t0)
	stopped := &quiet{clock: clock}
	r = waitDriven(t, clock, workflow.Watch{Source: stopped, Clock: clock, Options: o}, want, o.TreeInterval, nil)
	require.NoError(t, r.err)
	require.Equal(t, appstate.VerdictReconcileStalled, r.v.Kind)
	require.True(t, r.v.Terminal)
	require.Equal(t, 1, stopped.refreshs)
	require.Equal(t, appstate.HealthProgressing, r.st.Health)
	require.Equal(t, t0.Add(50*time.Second), clock.Now(), "named 30 s of quiet plus the 20 s the controller had to answer")
	require.Contains(t, r.v.Reason, "did not reconcile web within 20s of a refresh request; it last reconciled at 08:59:00 UTC (1m50s ago)")
	require.Contains(t, r.v.Reason, "frozen at sync Synced at rev2, health Progressing")
}

// TestWatchTimesOutOnItsClock: the convergence timeout is measured on the
// Service's clock, like every other wait of the watch.
func TestWatchTimesOutOnItsClock(t *testing.T) {
	t.Parallel()
	clock := workflowtest.NewClock(t0)
	alive := &quiet{clock: clock, answers: true}
	o := workflow.DefaultWaitOptions
	o.Timeout = 10 * time.Minute
	r := waitDriven(t, clock, workflow.Watch{Source: alive, Clock: clock, Options: o}, workflow.Want{Revision: "rev2"}, o.TreeInterval, nil)
	require.ErrorIs(t, r.err, workflow.ErrWatchTimedOut)
	require.ErrorIs(t, r.err, fault.ErrNotConverged)
	require.WithinRange(t, clock.Now(), t0.Add(10*time.Minute), t0.Add(10*time.Minute+2*o.TreeInterval), "timed out when its clock said so")
}

// scripted is a Convergence (a fake, no Argo CD) whose Get answers
// states[0] and whose Watch then sends the rest, in order.
type scripted struct{ states []appstate.AppState }

func (s scripted) Get(context.Context, appstate.AppRef) (appstate.AppState, error) {
	return s.states[0], nil
}

func (s scripted) Watch(ctx context.Context, _ appstate.AppRef, _ string) (<-chan workflow.AppUpdate, error) {
	ch := make(chan workflow.AppUpdate)
	go func() {
		defer close(ch)
		for _, st := range s.states[1:] {
			select {
			case ch <- workflow.AppUpdate{State: st}:
			case <-ctx.Done():
				return
			}
		}
		<-ctx.Done()
	}()
	return ch, nil
}

// TestHealthyToDegradedFailsFastOnlyAtTheIntendedRevision: argo-cd's app
// wait fails when a Healthy application turns Degraded. Before the intended
// revision is synced, that health is the previous revision's (a rehearsal's
// drill, the bad release a rollback replaces): the watch waits for the
// intended one instead of failing the recovery (found in make test, the
// interrupted-reconciliation drill's recovery). At the intended revision it
// still fails at once.
func TestHealthyToDegradedFailsFastOnlyAtTheIntendedRevision(t *testing.T) {
	t.Parallel()
	d, err := image.ParseDigest("sha256:" + strings.Repeat("cd", 32))
	require.NoError(t, err)
	want := workflow.Want{Revision: "good-rev", Digest: d}
	img := []string{"registry.test/web@" + d.String()}
	healthyOld := appstate.AppState{SyncStatus: appstate.SyncSynced, SyncRevision: "drill-rev", Health: appstate.HealthHealthy, Operation: appstate.OperationSucceeded, Version: "1"}
	degradedBefore := appstate.AppState{SyncStatus: appstate.SyncOutOfSync, SyncRevision: "good-rev", Health: appstate.HealthDegraded, Operation: appstate.OperationSucceeded, Version: "2"}
	converged := appstate.AppState{SyncStatus: appstate.SyncSynced, SyncRevision: "good-rev", Health: appstate.HealthHealthy, Operation: appstate.OperationSucceeded, Images: img, Version: "3"}

	st, v, err := workflow.Watch{Source: scripted{[]appstate.AppState{healthyOld, degradedBefore, converged}}}.Wait(t.Context(), appstate.AppRef{Name: "web"}, want)
	require.NoError(t, err)
	require.Equal(t, appstate.VerdictConverged, v.Kind, "%+v %+v", v, st)

	degradedAt := appstate.AppState{SyncStatus: appstate.SyncSynced, SyncRevision: "good-rev", Health: appstate.HealthDegraded, Operation: appstate.OperationRunning, Images: img, Version: "2"}
	_, v, err = workflow.Watch{Source: scripted{[]appstate.AppState{healthyOld, degradedAt, converged}}}.Wait(t.Context(), appstate.AppRef{Name: "web"}, want)
	require.NoError(t, err)
	require.True(t, v.Terminal, "Healthy → Degraded at the intended revision fails at once: %+v", v)
	require.NotEqual(t, appstate.VerdictConverged, v.Kind)
}
