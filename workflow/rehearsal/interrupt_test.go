package rehearsal_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// controller is the fake application controller that a command stops and
// starts (rehearsal.interrupt): stopped, the application's status freezes
// and a refresh goes unanswered, as with argocd-application-controller
// scaled to zero.
type controller struct {
	workflowtest.TreeConvergence
	mu      sync.Mutex
	stopped bool
	ran     [][]string
}

func (c *controller) RunCommand(_ context.Context, argv []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ran = append(c.ran, argv)
	switch argv[len(argv)-1] {
	case "stop":
		c.stopped = true
	case "start":
		c.stopped = false
	}
	return nil
}

func (c *controller) isStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

func (c *controller) Watch(ctx context.Context, app appstate.AppRef, since string) (<-chan workflow.AppUpdate, error) {
	if c.isStopped() {
		ch := make(chan workflow.AppUpdate)
		go func() { <-ctx.Done(); close(ch) }()
		return ch, nil
	}
	return c.TreeConvergence.Watch(ctx, app, since)
}

func (c *controller) Refresh(context.Context, appstate.AppRef, time.Duration) error {
	if c.isStopped() {
		return fault.ErrNotReconciled
	}
	return nil
}

// twoReleases converges two builds in staging, so that a drill has a good
// build other than the baseline to roll out.
func twoReleases(t *testing.T, p process, w *workflowtest.World) (previous, base *workflow.Release) {
	t.Helper()
	previous = released(t, p, w, "staging")
	d, err := image.ParseDigest("sha256:" + strings.Repeat("cd", 32))
	require.NoError(t, err)
	w.Artifact.Digest = d
	w.Repos["registry.test/ci/web"][d] = true
	base = released(t, p, w, "staging")
	require.NotEqual(t, previous.Checkpoints.Digest, base.Checkpoints.Digest)
	return previous, base
}

// commandProcess is a process whose controller the configured commands
// stop and start.
func commandProcess(t *testing.T, w *workflowtest.World, l *workflowtest.Ledger) (process, *controller) {
	t.Helper()
	proj := testProject(0)
	proj.Environments[0].Rehearsal.InterruptStop = []string{"lab", "controller", "stop"}
	proj.Environments[0].Rehearsal.InterruptStart = []string{"lab", "controller", "start"}
	ctrl := &controller{TreeConvergence: workflowtest.TreeConvergence{Convergence: workflowtest.Convergence{W: w}}}
	clock := workflow.SystemClock{}
	j := workflowtest.NewJournal(clock, "alice")
	tf := workflowtest.Terraform{W: w}
	o := drillWatch
	o.StallAfter, o.RefreshWithin = 20*time.Millisecond, 5*time.Millisecond
	svc, err := workflow.NewService(workflow.Deps{
		Project: proj, Ledger: l, Journal: j, Clock: clock, Actor: "alice",
		Ownership: []workflow.OwnershipSource{workflowtest.Ownership{W: w}}, Planner: tf, Applier: tf,
		Registry: workflowtest.Registry{W: w}, EnvRepo: workflowtest.EnvRepo{W: w},
		Convergence: ctrl, ConvergeTimeout: 5 * time.Second, Wait: o,
	})
	require.NoError(t, err)
	return withDrills(t, svc, j, ctrl), ctrl
}

func TestCleanupOfAnInterruptedReconciliationStartsTheController(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	p, ctrl := commandProcess(t, w, l)
	_, base := twoReleases(t, p, w)
	l.AfterRehearsalSave = func(_ int, r *rehearsal.Rehearsal) error {
		if r.Phase == rehearsal.PhaseInjected {
			return errKilled // killed with the controller stopped mid-rollout
		}
		return nil
	}
	_, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillInterruptedReconc}, nil)
	require.ErrorIs(t, err, errKilled)
	require.True(t, ctrl.isStopped())
	l.AfterRehearsalSave = nil
	all, err := l.ListRehearsals(ctx, rehearsal.Filter{})
	require.NoError(t, err)
	require.Len(t, all, 1)
	rh, err := p.rh.Cleanup(ctx, all[0].ID, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StateAbandoned, rh.State)
	require.False(t, ctrl.isStopped(), "the controller runs again")
	runsBaseline(t, w, base)
}

func TestRehearseInterruptedReconciliationWithTheConfiguredCommands(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	p, ctrl := commandProcess(t, w, l)

	_, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillInterruptedReconc}, nil)
	require.ErrorIs(t, err, fault.ErrBlocked, "no converged release yet")
	released(t, p, w, "staging")
	_, err = p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillInterruptedReconc}, nil)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "release twice")

	previous, base := twoReleases(t, p, w)
	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillInterruptedReconc}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	require.Equal(t, appstate.VerdictReconcileStalled, rh.Detected)
	require.Contains(t, rh.ActualArtifact.Shown, "did not reconcile")
	require.Contains(t, rh.NextSafeAction.Value, "argocd-application-controller")
	require.Equal(t, [][]string{{"lab", "controller", "stop"}, {"lab", "controller", "start"}}, ctrl.ran)
	drill, err := l.LoadRelease(ctx, rh.DrillRelease)
	require.NoError(t, err)
	require.Equal(t, previous.Checkpoints.Digest, drill.Checkpoints.Digest, "the drill rolls out the good build before the baseline")
	require.True(t, drill.Checkpoints.Converged(), "once resumed, the interrupted rollout finished")
	runsBaseline(t, w, base)
}

// paused is the fake Argo CD whose deny windows (break-glass) hold
// automated sync: while one is active a landed change is not synced.
type paused struct {
	workflowtest.TreeConvergence
	*workflowtest.ArgoCD
}

func (p paused) Get(ctx context.Context, app appstate.AppRef) (appstate.AppState, error) {
	return p.TreeConvergence.Get(ctx, app)
}

func (p paused) Watch(ctx context.Context, app appstate.AppRef, since string) (<-chan workflow.AppUpdate, error) {
	ws, err := p.ListWindows(ctx, app)
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(ws, func(w workflow.SyncWindow) bool { return w.Active }) {
		ch := make(chan workflow.AppUpdate)
		go func() { <-ctx.Done(); close(ch) }()
		return ch, nil
	}
	return p.TreeConvergence.Watch(ctx, app, since)
}

func TestRehearseInterruptedReconciliationWithBreakGlass(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	argo := workflowtest.NewArgoCD(workflow.SystemClock{})
	conv := paused{TreeConvergence: workflowtest.TreeConvergence{Convergence: workflowtest.Convergence{W: w}}, ArgoCD: argo}
	p := drillProcess(t, testProject(0), w, l, conv)
	_, base := twoReleases(t, p, w)

	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillInterruptedReconc}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	require.Equal(t, appstate.VerdictReconcilePaused, rh.Expected)
	require.Equal(t, appstate.VerdictReconcilePaused, rh.Detected)
	require.Contains(t, rh.ActualArtifact.Shown, "reconciliation paused by break-glass window")
	require.Contains(t, rh.NextSafeAction.Value, "relcap breakglass end --env staging")
	require.Contains(t, argo.Calls(), "deny web-staging")
	require.Contains(t, argo.Calls(), "remove web-staging")
	require.Empty(t, argo.Windows(), "the pause is over")
	kinds := p.journal.Kinds()
	require.Contains(t, kinds, "breakglass.started")
	require.Contains(t, kinds, "breakglass.ended")
	runsBaseline(t, w, base)
}
