package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/workflowtest"
)

func TestApplyPlanNeedsApprovalsOfThatExactPlanAndAppliesOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	alice := newProcess(t, testProject(1), w, l, clock, "alice")
	bob := newProcess(t, testProject(1), w, l, clock, "bob")

	out, err := alice.svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)
	plan := out.Plan
	require.NotEmpty(t, plan.Fingerprint)

	_, _, err = alice.svc.ApplyPlan(ctx, plan.Fingerprint, nil)
	require.ErrorIs(t, err, fault.ErrApprovalRequired)
	require.Contains(t, err.Error(), "relcap approve --plan "+plan.Fingerprint)
	require.Equal(t, 0, w.Applies)

	_, _, err = alice.svc.ApprovePlan(ctx, plan.Fingerprint, "")
	require.ErrorIs(t, err, fault.ErrBlocked, "the author cannot approve in a distinct_from_author environment")
	_, _, err = bob.svc.ApprovePlan(ctx, plan.Fingerprint, "ok")
	require.NoError(t, err)

	res, _, err := alice.svc.ApplyPlan(ctx, plan.Fingerprint, nil)
	require.NoError(t, err)
	require.EqualValues(t, 2, res.StateSerial)
	require.Equal(t, 1, w.Applies)

	_, _, err = alice.svc.ApplyPlan(ctx, plan.Fingerprint, nil)
	require.ErrorIs(t, err, fault.ErrAlreadyApplied, "an applied plan is not applied again")
	require.NotErrorIs(t, err, fault.ErrStalePlan, "already applied is its own refusal, not a stale plan")
	require.Equal(t, 1, w.Applies)
	r, err := l.LoadRelease(ctx, out.Release.ID)
	require.NoError(t, err)
	require.Equal(t, workflow.Succeeded, r.Step(workflow.StepApply).Status, "the apply is the release's step")
	require.EqualValues(t, 2, r.Checkpoints.Applied.StateSerial)
}

func TestApplyPlanRefusesAStalePlanWithTheInstructionToPlanAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	alice := newProcess(t, testProject(0), w, l, clock, "alice")
	out, err := alice.svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)
	plan := out.Plan
	w.StateSerial++ // someone applied something else meanwhile
	_, _, err = alice.svc.ApplyPlan(ctx, plan.Fingerprint, nil)
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.Contains(t, err.Error(), "relcap plan --env staging again")
	require.Equal(t, 0, w.Applies)
}

func TestApprovingAnUnknownFingerprintIsAUsageError(t *testing.T) {
	t.Parallel()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	bob := newProcess(t, testProject(1), w, l, clock, "bob")
	_, _, err := bob.svc.ApprovePlan(t.Context(), "feedface", "")
	require.ErrorIs(t, err, fault.ErrUsage)
}
