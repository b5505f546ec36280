package rehearsal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// cleanTerraform is a world whose Terraform root has nothing pending: the
// failed-apply drill's plan creates its resource and nothing else.
func cleanTerraform() *workflowtest.World {
	w := workflowtest.NewWorld()
	w.Changes = nil
	return w
}

// requireRealStateUntouched checks the drill only read the real root.
func requireRealStateUntouched(t *testing.T, w *workflowtest.World, serial int64) {
	t.Helper()
	require.Equal(t, serial, w.StateSerial, "the real state was never written")
	require.Zero(t, w.Applies, "nothing was applied to the real root")
	require.Empty(t, w.ScratchDirs(), "the scratch copy is gone")
}

func TestRehearseFailedApplyIsDetectedOnAScratchCopyAndRecovered(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := cleanTerraform(), workflowtest.NewLedger()
	p := drillProcess(t, testProject(0), w, l, nil)
	serial := w.StateSerial

	// No converged release is needed: the drill never reaches Argo CD.
	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillFailedApply}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	require.Equal(t, rehearsal.PhaseRecovered, rh.Phase)
	require.Equal(t, rehearsal.VerdictApplyFailed, rh.Expected)
	require.Equal(t, rehearsal.VerdictApplyFailed, rh.Detected)
	require.Equal(t, "/rehearsals/"+rh.ID+"/root", rh.ScratchDir)
	require.Equal(t, "abc123", rh.Baseline.Revision, "the real root's revision")
	require.Equal(t, []workflow.StateResource{{Address: "aws_s3_bucket.assets"}}, rh.Baseline.Resources)
	require.Equal(t, 1, w.StatePulls)

	drill, err := l.LoadPlan(ctx, rh.DrillPlan)
	require.NoError(t, err)
	require.Equal(t, "staging", drill.Env)
	require.Len(t, drill.Changes, 1)
	require.Equal(t, tfplan.ActionCreate, drill.Changes[0].Action)
	require.True(t, drill.AppliedAt.IsZero(), "the drill's apply failed")
	recovery, err := l.LoadPlan(ctx, rh.RecoveryPlan)
	require.NoError(t, err)
	require.Equal(t, tfplan.ActionDelete, recovery.Changes[0].Action, "recovery destroys the tainted resource")
	require.False(t, recovery.AppliedAt.IsZero())

	require.Equal(t, rh.DrillPlan, rh.IntendedRevision.Value)
	require.Contains(t, rh.IntendedRevision.Shown, "abc123")
	require.Equal(t, "terraform_data.relcap_rehearsal tainted", rh.ActualArtifact.Value)
	require.Equal(t, "state lock released", rh.ControllerStatus.Value)
	require.Contains(t, rh.ControllerStatus.Shown, "-lock-timeout=0s")
	require.Equal(t, "the apply failed part-way: terraform_data.relcap_rehearsal is tainted; re-plan from the reviewed root (relcap plan --env staging), review what the plan destroys or replaces, then apply",
		rh.NextSafeAction.Value)
	_, ok := rh.TimeToDetect()
	require.True(t, ok)
	_, ok = rh.TimeToRecover()
	require.True(t, ok)
	requireRealStateUntouched(t, w, serial)

	kinds := p.journal.Kinds()
	for _, k := range []string{"rehearsal.started", "plan.reviewed", "rehearsal.injected", "apply.started", "apply.failed", "rehearsal.detected", "apply.done", "rehearsal.recovered", "rehearsal.passed"} {
		require.Contains(t, kinds, k)
	}
}

func TestRehearseFailedApplyIsRefusedWithOtherChanges(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger() // terraform_data.web pending
	p := drillProcess(t, testProject(0), w, l, nil)
	serial := w.StateSerial

	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillFailedApply}, nil)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "the environment has drift or pending changes: 1 other change(s)")
	require.Contains(t, err.Error(), "converge first")
	require.Equal(t, rehearsal.StateAbandoned, rh.State)
	require.Equal(t, rehearsal.PhaseBaseline, rh.Phase, "nothing was applied")
	requireRealStateUntouched(t, w, serial)
	require.Contains(t, p.journal.Kinds(), "rehearsal.abandoned")
	require.NotContains(t, p.journal.Kinds(), "apply.started")
}

func TestRehearseFailedApplyWaitsForPlanApprovalsAndResumes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := cleanTerraform(), workflowtest.NewLedger()
	proj := testProject(1)
	p := drillProcess(t, proj, w, l, nil)
	bob := newProcess(t, proj, w, l, workflow.SystemClock{}, "bob")

	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillFailedApply}, nil)
	require.ErrorIs(t, err, fault.ErrApprovalRequired)
	require.Contains(t, err.Error(), "relcap approve --plan "+rh.DrillPlan)
	require.Contains(t, err.Error(), "relcap rehearse --resume "+rh.ID)
	require.Equal(t, rehearsal.PhaseBaseline, rh.Phase)
	require.NotContains(t, p.journal.Kinds(), "apply.started", "nothing applied without the approval")

	_, _, err = p.svc.ApprovePlan(ctx, rh.DrillPlan, "")
	require.Error(t, err, "the author does not approve their own plan here")
	_, _, err = bob.svc.ApprovePlan(ctx, rh.DrillPlan, "drill")
	require.NoError(t, err)

	// The recovery plan is a plan too: it waits for its own approval.
	rh2, err := p.rh.Resume(ctx, rh.ID, nil)
	require.ErrorIs(t, err, fault.ErrApprovalRequired)
	require.Equal(t, rh.DrillPlan, rh2.DrillPlan, "the approved plan was applied, not a new one")
	require.Equal(t, rehearsal.VerdictApplyFailed, rh2.Detected)
	require.Equal(t, rehearsal.PhaseRecovering, rh2.Phase)
	require.Contains(t, err.Error(), "relcap approve --plan "+rh2.RecoveryPlan)
	_, _, err = bob.svc.ApprovePlan(ctx, rh2.RecoveryPlan, "recover")
	require.NoError(t, err)

	done, err := p.rh.Resume(ctx, rh.ID, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, done.State, done.Failure)
	require.Empty(t, w.ScratchDirs())
}

func TestRehearseFailedApplyNamesAHeldStateLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := cleanTerraform(), workflowtest.NewLedger()
	w.ScratchLockHeld = true
	p := drillProcess(t, testProject(0), w, l, nil)
	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillFailedApply}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StateFailed, rh.State)
	require.Equal(t, "state lock held", rh.ControllerStatus.Value)
	require.Contains(t, rh.ControllerStatus.Shown, "lock ID 1234")
	require.Contains(t, rh.Failure, "the state lock is still held")
	require.Empty(t, w.ScratchDirs(), "a failed drill leaves nothing behind either")
}

func TestCleanupOfAFailedApplyDrillRemovesTheScratchCopy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := cleanTerraform(), workflowtest.NewLedger()
	p := drillProcess(t, testProject(0), w, l, nil)
	serial := w.StateSerial
	l.AfterRehearsalSave = func(_ int, r *rehearsal.Rehearsal) error {
		if r.Phase == rehearsal.PhaseDetected {
			return errKilled // killed with the tainted resource in the scratch state
		}
		return nil
	}
	_, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillFailedApply}, nil)
	require.ErrorIs(t, err, errKilled)
	require.Len(t, w.ScratchDirs(), 1)
	l.AfterRehearsalSave = nil
	all, err := l.ListRehearsals(ctx, rehearsal.Filter{})
	require.NoError(t, err)
	require.Len(t, all, 1)

	rh, err := p.rh.Cleanup(ctx, all[0].ID, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StateAbandoned, rh.State)
	requireRealStateUntouched(t, w, serial)
	again, err := p.rh.Cleanup(ctx, all[0].ID, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StateAbandoned, again.State, "cleaning up twice changes nothing")
}

// TestAFailedApplyDrillKilledAtAnySaveResumes kills the drill right after
// each of its saves in turn (every phase, and the scratch copy and plans
// within them) and resumes it: it passes, and leaves nothing behind.
func TestAFailedApplyDrillKilledAtAnySaveResumes(t *testing.T) {
	t.Parallel()
	// A run without a kill, to count its saves.
	w0, l0 := cleanTerraform(), workflowtest.NewLedger()
	rh0, err := drillProcess(t, testProject(0), w0, l0, nil).rh.Rehearse(t.Context(), rehearsal.Request{Env: "staging", Drill: rehearsal.DrillFailedApply}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, rh0.State, rh0.Failure)
	var saves int
	l0.AfterRehearsalSave = func(n int, _ *rehearsal.Rehearsal) error { saves = n; return nil }
	_ = l0.SaveRehearsal(t.Context(), rh0)
	saves-- // the save just made to read the count
	require.Greater(t, saves, 5)

	for kill := 1; kill <= saves; kill++ {
		w, l := cleanTerraform(), workflowtest.NewLedger()
		p := drillProcess(t, testProject(0), w, l, nil)
		serial := w.StateSerial
		var phase rehearsal.Phase
		l.AfterRehearsalSave = func(n int, r *rehearsal.Rehearsal) error {
			if n == kill {
				phase = r.Phase
				return errKilled
			}
			return nil
		}
		_, err := p.rh.Rehearse(t.Context(), rehearsal.Request{Env: "staging", Drill: rehearsal.DrillFailedApply}, nil)
		require.True(t, errors.Is(err, errKilled), "kill at save %d: %v", kill, err)
		l.AfterRehearsalSave = nil
		all, err := l.ListRehearsals(t.Context(), rehearsal.Filter{})
		require.NoError(t, err)
		require.Len(t, all, 1)
		rh, err := p.rh.Resume(t.Context(), all[0].ID, nil)
		require.NoError(t, err, "kill at save %d (phase %s)", kill, phase)
		require.Equal(t, rehearsal.StatePassed, rh.State, "kill at save %d (phase %s): %s", kill, phase, rh.Failure)
		require.Equal(t, rehearsal.VerdictApplyFailed, rh.Detected)
		require.NotEmpty(t, rh.NextSafeAction.Value, "kill at save %d", kill)
		requireRealStateUntouched(t, w, serial)
	}
}

// TestAFailedApplyDrillInterruptedDuringTheApplyResumes interrupts the
// drill (Ctrl-C) while Terraform applies: the apply had already failed
// part-way, so the resumed drill finds its plan stale and reads what the
// apply left from the scratch state.
func TestAFailedApplyDrillInterruptedDuringTheApplyResumes(t *testing.T) {
	t.Parallel()
	w, l := cleanTerraform(), workflowtest.NewLedger()
	p := drillProcess(t, testProject(0), w, l, nil)
	serial := w.StateSerial
	ctx, cancel := context.WithCancel(t.Context())
	w.Interrupt = func(effect string) error {
		if effect == "apply" {
			cancel()
			return context.Canceled
		}
		return nil
	}
	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillFailedApply}, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "relcap rehearse --resume "+rh.ID)
	require.Equal(t, rehearsal.PhaseInjected, rh.Phase)
	w.Interrupt = nil

	done, err := p.rh.Resume(t.Context(), rh.ID, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, done.State, done.Failure)
	require.Equal(t, "terraform_data.relcap_rehearsal tainted", done.ActualArtifact.Value)
	require.Contains(t, done.NextSafeAction.Value, "terraform_data.relcap_rehearsal is tainted")
	requireRealStateUntouched(t, w, serial)
}

func TestStateRestoreProvesABackupOnAScratchCopyAndNeverWritesTheRealState(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := cleanTerraform(), workflowtest.NewLedger()
	p := drillProcess(t, testProject(0), w, l, nil)
	serial := w.StateSerial

	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillStateRestore}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	require.Equal(t, rehearsal.VerdictStateRestored, rh.Detected)
	require.Equal(t, rehearsal.VerdictStateRestored, rh.Expected)
	require.NotNil(t, rh.Restore)
	require.Equal(t, "lineage-1", rh.Restore.Lineage)
	require.Equal(t, serial, rh.Restore.Serial)
	require.Equal(t, 1, rh.Restore.Resources)
	require.Equal(t, 1, w.StatePulls, "one backup")
	proof, err := l.LoadPlan(ctx, rh.Restore.Plan)
	require.NoError(t, err)
	require.False(t, proof.HasChanges(), "the proving plan changes nothing")
	_, detect := rh.TimeToDetect()
	_, recover := rh.TimeToRecover()
	require.False(t, detect || recover, "its times are back up, restore and prove, never detect and recover")
	requireRealStateUntouched(t, w, serial)
}

func TestStateRestoreIsRefusedWhenThePlanWouldProveNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger() // the root has pending changes
	p := drillProcess(t, testProject(0), w, l, nil)
	serial := w.StateSerial
	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillStateRestore}, nil)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.ErrorContains(t, err, "staging has drift or pending changes and the plan proves nothing about the backup")
	require.Equal(t, rehearsal.StateAbandoned, rh.State)
	requireRealStateUntouched(t, w, serial)
}
