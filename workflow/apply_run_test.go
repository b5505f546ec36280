package workflow_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// outcomeApplier is a fake Applier that checks the attempt it is asked
// to run is already in the ledger, then answers what it is told.
type outcomeApplier struct {
	t       *testing.T
	ledger  *workflowtest.Ledger
	release string
	answer  func(req workflow.ApplyRequest) (workflow.ApplyResult, error)
	asked   []workflow.ApplyRequest
}

func (a *outcomeApplier) Apply(ctx context.Context, req workflow.ApplyRequest) (workflow.ApplyResult, error) {
	r, err := a.ledger.LoadRelease(ctx, a.release)
	require.NoError(a.t, err)
	require.Contains(a.t, r.Checkpoints.ApplyRunsOf(req.Fingerprint), req.Run, "the attempt is saved in the ledger before Terraform may start")
	a.asked = append(a.asked, req)
	return a.answer(req)
}

// TestAnApplyWhoseOutcomeIsUnknownIsNeverAppliedAgain: the apply step
// records each attempt before asking the Applier, hands the earlier
// attempts of the plan to the next one, and when the Applier cannot
// establish an earlier attempt's outcome, blocks with that error (exit 3)
// and sends the release back to planning, never applying the plan.
func TestAnApplyWhoseOutcomeIsUnknownIsNeverAppliedAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	p := newProcess(t, testProject(0), w, l, clock, "alice")
	r, err := p.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)

	fake := &outcomeApplier{t: t, ledger: l, release: r.ID}
	svc, err := workflow.NewService(workflow.Deps{
		Project: testProject(0), Ledger: l, Journal: workflowtest.NewJournal(clock, "alice"), Clock: clock, Actor: "alice",
		Ownership: []workflow.OwnershipSource{workflowtest.Ownership{W: w}},
		Planner:   workflowtest.Terraform{W: w}, Applier: fake,
		Registry: workflowtest.Registry{W: w}, EnvRepo: workflowtest.EnvRepo{W: w},
		Convergence: workflowtest.Convergence{W: w}, ConvergeTimeout: time.Minute,
	})
	require.NoError(t, err)

	// First attempt: relcap "dies" while Terraform runs.
	cctx, cancel := context.WithCancel(ctx)
	fake.answer = func(workflow.ApplyRequest) (workflow.ApplyResult, error) {
		cancel()
		return workflow.ApplyResult{}, fmt.Errorf("terraform apply interrupted: %w", context.Canceled)
	}
	_, err = svc.Run(cctx, r.ID, nil)
	require.ErrorIs(t, err, context.Canceled)
	got, err := l.LoadRelease(ctx, r.ID)
	require.NoError(t, err)
	fp := got.Checkpoints.Fingerprint
	require.Len(t, got.Checkpoints.ApplyRunsOf(fp), 1)
	first := got.Checkpoints.ApplyRunsOf(fp)[0]

	// Resumed: the Applier is told of the first attempt and cannot say
	// what it did.
	fake.answer = func(req workflow.ApplyRequest) (workflow.ApplyResult, error) {
		require.Equal(t, []workflow.ApplyRun{first}, req.Earlier, "the earlier attempt is handed over")
		require.NotEqual(t, first.ID, req.Run.ID, "a new attempt has its own run")
		return workflow.ApplyResult{}, fmt.Errorf("%w: run gone without an exit status; inspect the state", fault.ErrApplyOutcomeUnknown)
	}
	got, err = svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrApplyOutcomeUnknown)
	require.ErrorIs(t, err, fault.ErrBlocked, "exit 3")
	require.Equal(t, workflow.Blocked, got.Step(workflow.StepApply).Status)
	require.Contains(t, got.Step(workflow.StepApply).Message, "inspect the state")
	require.True(t, got.Checkpoints.Applied.IsZero(), "never recorded applied")
	require.Equal(t, workflow.Pending, got.Step(workflow.StepPlanReview).Status, "the way on is a new plan")
	require.Empty(t, got.Checkpoints.Fingerprint)
	require.Len(t, fake.asked, 2)
	require.Equal(t, 0, w.Applies)
	plan, err := l.LoadPlan(ctx, fp)
	require.NoError(t, err)
	require.True(t, plan.AppliedAt.IsZero(), "the plan is not marked applied")
}
