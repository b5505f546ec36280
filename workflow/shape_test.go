package workflow_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// TestDecideShape: the shape follows what the release is given and what
// its plan contains, in one place.
func TestDecideShape(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		f    workflow.ShapeFacts
		want workflow.Shape
	}{
		{workflow.ShapeFacts{Image: false, PlanReviewed: true, PlanChanges: true}, workflow.ShapeInfrastructure},
		{workflow.ShapeFacts{Image: false}, workflow.ShapeInfrastructure},
		{workflow.ShapeFacts{Image: true, PlanReviewed: true, PlanChanges: true}, workflow.ShapeBoth},
		{workflow.ShapeFacts{Image: true, PlanReviewed: true}, workflow.ShapeImage},
		{workflow.ShapeFacts{Image: true, PlanSkipped: true}, workflow.ShapeImage},
		{workflow.ShapeFacts{Image: true}, workflow.ShapeUndecided},
	} {
		d := workflow.DecideShape(c.f)
		require.Equal(t, c.want, d.Shape, "%+v", c.f)
		require.NotEmpty(t, d.Why)
	}
}

// TestAnInfrastructureOnlyReleaseEndsSucceeded: plan, approve and apply
// without an image, then resume: the promotion is skipped, no application
// is affected by the applied terraform_data, and the release ends
// succeeded, journaled, so the next plan starts a new release.
func TestAnInfrastructureOnlyReleaseEndsSucceeded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := workflowtest.NewClock(t0)
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	cmd := func(actor string) process { return newProcess(t, testProject(1), w, l, clock, actor) }

	planned, err := cmd("alice").svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)
	id := planned.Release.ID
	_, _, err = cmd("bob").svc.ApprovePlan(ctx, planned.Plan.Fingerprint, "ok")
	require.NoError(t, err)
	_, _, err = cmd("alice").svc.ApplyPlan(ctx, planned.Plan.Fingerprint, nil)
	require.NoError(t, err)

	_, err = cmd("alice").svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.ErrorIs(t, err, fault.ErrUsage, "the applied release is still open")
	require.ErrorContains(t, err, "relcap resume "+id, "and the refusal says how to end it")
	require.ErrorContains(t, err, "relcap release abandon "+id)

	ender := cmd("alice")
	final, err := ender.svc.Run(ctx, id, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseSucceeded, final.Status)
	require.Equal(t, workflow.ShapeInfrastructure, final.Shape)
	require.False(t, final.EndedAt.IsZero())
	require.Equal(t, workflow.Succeeded, final.Step(workflow.StepOwnership).Status)
	require.Equal(t, workflow.Succeeded, final.Step(workflow.StepApply).Status)
	require.Equal(t, workflow.Skipped, final.Step(workflow.StepPromotion).Status)
	require.Equal(t, workflow.Skipped, final.Step(workflow.StepConvergence).Status)
	require.Contains(t, final.Step(workflow.StepConvergence).Message, "no applied resource affects an application")
	require.Zero(t, w.Copies, "nothing promoted")
	require.Zero(t, w.Commits)
	kinds := ender.journal.Kinds()
	require.Contains(t, kinds, string(workflow.KindReleaseShaped))
	require.Contains(t, kinds, string(workflow.KindReleaseSucceeded))
	require.NotContains(t, kinds, string(journal.KindReleaseDone), "succeeded, not converged on a digest")

	next, err := cmd("alice").svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)
	require.True(t, next.Started, "the next plan is a new release")
	require.NotEqual(t, id, next.Release.ID)
}

// TestAnInfrastructureOnlyReleaseWatchesTheApplicationItAffects: an
// applied Kubernetes object affects the environment's application, which
// must be synced and healthy before the release succeeds; relcap converge
// --env finds the release.
func TestAnInfrastructureOnlyReleaseWatchesTheApplicationItAffects(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := workflowtest.NewClock(t0)
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	w.Changes = []tfplan.ResourceChange{{Address: "kubernetes_config_map.web", Type: "kubernetes_config_map", Name: "web", Action: tfplan.ActionUpdate}}
	cmd := func(actor string) process { return newProcess(t, testProject(0), w, l, clock, actor) }

	planned, err := cmd("alice").svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)
	_, _, err = cmd("alice").svc.ApplyPlan(ctx, planned.Plan.Fingerprint, nil)
	require.NoError(t, err)

	p := cmd("alice")
	waiting, err := p.svc.Records().AwaitingConvergence(ctx, "staging")
	require.NoError(t, err)
	require.Equal(t, planned.Release.ID, waiting.ID, "relcap converge --env ends an applied infrastructure-only release")
	final, err := p.svc.Run(ctx, waiting.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseSucceeded, final.Status)
	conv := final.Step(workflow.StepConvergence)
	require.Equal(t, workflow.Succeeded, conv.Status)
	require.Contains(t, conv.Message, "kubernetes_config_map.web")
	require.NotEmpty(t, conv.Evidence)
}

// TestAnImageOnlyReleaseWithAnEmptyPlanSkipsApply: nothing to apply, an
// image given: apply is skipped, never asked of Terraform, and the release
// converges on the digest.
func TestAnImageOnlyReleaseWithAnEmptyPlanSkipsApply(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := workflowtest.NewClock(t0)
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	w.Changes = nil
	p := newProcess(t, testProject(1), w, l, clock, "alice")
	r, err := p.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	final, err := p.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
	require.Equal(t, workflow.ShapeImage, final.Shape)
	require.Equal(t, workflow.Skipped, final.Step(workflow.StepApply).Status)
	require.Contains(t, final.Step(workflow.StepApply).Message, "nothing to apply")
	require.Zero(t, w.Applies)
	require.Equal(t, workflow.Succeeded, final.Step(workflow.StepConvergence).Status)
	steps := workflow.PlanSteps(final, workflow.ShapeOf(final, nil))
	apply := steps[slices.IndexFunc(steps, func(s workflow.StepPlan) bool { return s.Step == workflow.StepApply })]
	require.False(t, apply.Runs, "the decision map shows apply skipped")
	require.NotEmpty(t, apply.Why)
}

// TestAbandonEndsAReleaseAndDeletesItsPlan: abandoned with a reason,
// journaled, its unapplied plan deleted and never applicable; an unknown
// release, a missing reason and a finished release are refused and
// record nothing.
func TestAbandonEndsAReleaseAndDeletesItsPlan(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := workflowtest.NewClock(t0)
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	cmd := func(actor string) process { return newProcess(t, testProject(1), w, l, clock, actor) }

	planned, err := cmd("alice").svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)
	id, fp := planned.Release.ID, planned.Plan.Fingerprint

	refused := cmd("alice")
	_, err = refused.svc.Abandon(ctx, "web-staging-nope", "gone")
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "no release web-staging-nope")
	_, err = refused.svc.Abandon(ctx, id, "  ")
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "--reason")
	require.Empty(t, refused.journal.Kinds(), "a refusal records nothing")

	p := cmd("carol")
	out, err := p.svc.Abandon(ctx, id, "superseded by the next change")
	require.NoError(t, err)
	require.Equal(t, fp, out.PlanDeleted)
	require.Equal(t, []string{fp}, w.Discarded, "the saved plan file is deleted")
	got, err := l.LoadRelease(ctx, id)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseAbandoned, got.Status)
	require.True(t, got.Status.Done())
	require.Equal(t, "carol", got.Abandonment.By)
	require.Equal(t, "superseded by the next change", got.Abandonment.Reason)
	require.Contains(t, p.journal.Kinds(), string(workflow.KindReleaseAbandoned))

	_, err = cmd("carol").svc.Abandon(ctx, id, "again")
	require.ErrorIs(t, err, fault.ErrUsage, "an ended release cannot be abandoned")
	require.ErrorContains(t, err, "abandoned already")

	_, _, err = cmd("bob").svc.ApprovePlan(ctx, fp, "late")
	require.NoError(t, err)
	_, _, err = cmd("alice").svc.ApplyPlan(ctx, fp, nil)
	require.ErrorIs(t, err, fault.ErrBlocked, "an abandoned release's plan is never applied")
	require.ErrorContains(t, err, "abandoned")
	require.Zero(t, w.Applies)

	next, err := cmd("alice").svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)
	require.True(t, next.Started, "an abandoned release is not joined")
}
