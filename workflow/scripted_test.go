package workflow_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// TestAScriptedReleaseLeavesTheSameRecordAsOneRun: plan, approve, apply,
// promote and converge as separate commands (each its own process) are
// one release with the same steps, statuses and evidence kinds as a
// release run in one go.
func TestAScriptedReleaseLeavesTheSameRecordAsOneRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := workflowtest.NewClock(t0)
	image := "registry.test/ci/web:1.2.3"

	// In one go, as the cockpit drives it.
	w1, l1 := workflowtest.NewWorld(), workflowtest.NewLedger()
	cap1 := newProcess(t, testProject(1), w1, l1, clock, "alice")
	r, err := cap1.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: image})
	require.NoError(t, err)
	_, err = cap1.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrApprovalRequired)
	bob1 := newProcess(t, testProject(1), w1, l1, clock, "bob")
	got, err := l1.LoadRelease(ctx, r.ID)
	require.NoError(t, err)
	_, _, err = bob1.svc.ApprovePlan(ctx, got.Checkpoints.Fingerprint, "ok")
	require.NoError(t, err)
	oneRun, err := newProcess(t, testProject(1), w1, l1, clock, "alice").svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)

	// On the command line, one process per command.
	w2, l2 := workflowtest.NewWorld(), workflowtest.NewLedger()
	cmd := func(actor string) process { return newProcess(t, testProject(1), w2, l2, clock, actor) }
	planned, err := cmd("alice").svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)
	require.True(t, planned.Started)
	require.Contains(t, planned.Describe(), "started release")
	require.Contains(t, planned.Waiting, "needs 1 more approval")
	id := planned.Release.ID

	again, err := cmd("alice").svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)
	require.False(t, again.Started, "the open release is joined")
	require.Equal(t, id, again.Release.ID)
	require.Equal(t, planned.Plan.Fingerprint, again.Plan.Fingerprint, "nothing moved: the same plan")

	_, _, err = cmd("bob").svc.ApprovePlan(ctx, planned.Plan.Fingerprint, "ok")
	require.NoError(t, err)
	_, _, err = cmd("alice").svc.ApplyPlan(ctx, planned.Plan.Fingerprint, nil)
	require.NoError(t, err)
	_, _, err = cmd("alice").svc.ApplyPlan(ctx, planned.Plan.Fingerprint, nil)
	require.ErrorIs(t, err, fault.ErrAlreadyApplied, "applied once, and a second apply does not promote")
	_, err = cmd("alice").svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.ErrorIs(t, err, fault.ErrUsage, "a release past apply has no plan to make")
	require.ErrorContains(t, err, "already applied plan "+workflow.ShortHash(planned.Plan.Fingerprint))
	mid, err := l2.LoadRelease(ctx, id)
	require.NoError(t, err)
	require.Equal(t, workflow.Pending, mid.Step(workflow.StepPromotion).Status)

	promoter := cmd("alice")
	opened, err := promoter.svc.OpenRelease(ctx, workflow.OpenRequest{Env: "staging", Image: image, PromoteOnly: true})
	require.NoError(t, err)
	require.False(t, opened.Started)
	require.Equal(t, id, opened.Release.ID, "promote joins the release plan started")
	_, err = promoter.svc.RunUntil(ctx, id, nil, workflow.StepPromotion)
	require.NoError(t, err)
	_, err = cmd("alice").svc.OpenRelease(ctx, workflow.OpenRequest{Env: "staging", Image: "registry.test/ci/web:9.9.9"})
	require.ErrorIs(t, err, fault.ErrUsage, "another image does not join the open release")
	// By the digest its tag resolved to, as relcap prints it, the release
	// is joined (a captain resuming a release waiting on a pull request).
	promoted, err := l2.LoadRelease(ctx, id)
	require.NoError(t, err)
	require.False(t, promoted.Checkpoints.Digest.IsZero())
	byDigest := "registry.test/ci/web@" + promoted.Checkpoints.Digest.String()
	joined, err := cmd("alice").svc.OpenRelease(ctx, workflow.OpenRequest{Env: "staging", ReleaseID: id, Image: byDigest, PromoteOnly: true})
	require.NoError(t, err)
	require.Equal(t, id, joined.Release.ID)
	_, err = cmd("alice").svc.OpenRelease(ctx, workflow.OpenRequest{Env: "staging", ReleaseID: id, Image: "registry.test/ci/web@sha256:" + strings.Repeat("0", 64)})
	require.ErrorIs(t, err, fault.ErrUsage, "another digest is another image")
	require.ErrorContains(t, err, "give --image "+image+" (or its digest, "+byDigest+")", "with --release given, the advice is the image, not --release")
	scripted, err := cmd("alice").svc.Run(ctx, id, nil)
	require.NoError(t, err)

	require.Equal(t, workflow.ReleaseConverged, scripted.Status)
	require.Equal(t, image, scripted.Image)
	require.Equal(t, oneRun.Kind, scripted.Kind)
	require.Equal(t, len(oneRun.Steps), len(scripted.Steps))
	for i := range oneRun.Steps {
		a, b := oneRun.Steps[i], scripted.Steps[i]
		require.Equal(t, a.Kind, b.Kind)
		require.Equal(t, a.Status, b.Status, a.Kind.String())
		require.Equal(t, evidenceKinds(a.Evidence), evidenceKinds(b.Evidence), "%s: the same kinds of evidence (attempts aside)", a.Kind)
	}
	require.Equal(t, 1, w2.Applies)
}

// evidenceKinds lists the kinds of evidence, each once, in order.
func evidenceKinds(es []evidence.Evidence) []evidence.Kind {
	var out []evidence.Kind
	for _, e := range es {
		if !slices.Contains(out, e.Kind) {
			out = append(out, e.Kind)
		}
	}
	return out
}
