package rehearsal_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/oplock"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// drillWatch is a convergence watch fast enough for a test on the wall
// clock: the resource tree every few milliseconds, readiness failing for
// longer than 20ms fails the rollout.
var drillWatch = workflow.WaitOptions{TreeInterval: 2 * time.Millisecond, ReadinessGrace: 20 * time.Millisecond, StallAfter: time.Hour, RefreshWithin: time.Second}

// drillProcess is a relcap process over the world whose Pods fail as a
// kubelet's would (workflowtest.TreeConvergence), on the wall clock.
func drillProcess(t *testing.T, p *workflow.Project, w *workflowtest.World, l workflow.Ledger, conv workflow.Convergence) process {
	t.Helper()
	return drillProcessWatching(t, p, w, l, conv, drillWatch)
}

// drillProcessWatching is drillProcess with the watch's timings.
func drillProcessWatching(t *testing.T, p *workflow.Project, w *workflowtest.World, l workflow.Ledger, conv workflow.Convergence, watch workflow.WaitOptions) process {
	t.Helper()
	if conv == nil {
		conv = workflowtest.TreeConvergence{Convergence: workflowtest.Convergence{W: w}}
	}
	clock := workflow.SystemClock{}
	j := workflowtest.NewJournal(clock, "alice")
	tf := workflowtest.Terraform{W: w}
	svc, err := workflow.NewService(workflow.Deps{
		Project: p, Ledger: l, Journal: j, Clock: clock, Actor: "alice",
		Ownership: []workflow.OwnershipSource{workflowtest.Ownership{W: w}},
		Planner:   tf, Applier: tf,
		Registry: workflowtest.Registry{W: w}, EnvRepo: workflowtest.EnvRepo{W: w},
		Convergence: conv, ConvergeTimeout: 5 * time.Second, Wait: watch,
	})
	require.NoError(t, err)
	return withDrills(t, svc, j, nil)
}

// released runs a full release to env and returns it converged: the
// baseline a drill starts from.
func released(t *testing.T, p process, w *workflowtest.World, env string) *workflow.Release {
	t.Helper()
	r, err := p.svc.Start(t.Context(), workflow.StartRequest{Env: env, Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	w.Changes = []tfplan.ResourceChange{{Address: "terraform_data.web", Type: "terraform_data", Action: tfplan.ActionUpdate}}
	final, err := p.svc.Run(t.Context(), r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
	return final
}

// runsBaseline checks the application is synced, healthy and runs only
// base's digest.
func runsBaseline(t *testing.T, w *workflowtest.World, base *workflow.Release) {
	t.Helper()
	st, err := workflowtest.Convergence{W: w}.Get(t.Context(), appstate.AppRef{})
	require.NoError(t, err)
	require.Equal(t, appstate.SyncSynced, st.SyncStatus)
	require.Equal(t, appstate.HealthHealthy, st.Health)
	require.Len(t, st.Images, 1)
	require.True(t, strings.HasSuffix(st.Images[0], "@"+base.Checkpoints.Digest.String()), "runs %s, not the baseline %s", st.Images[0], base.Checkpoints.Digest)
}

func unreadyWorld(t *testing.T, p *workflow.Project) (*workflowtest.World, image.Digest) {
	t.Helper()
	w := workflowtest.NewWorld()
	d, err := image.ParseDigest("sha256:" + strings.Repeat("ab", 32))
	require.NoError(t, err)
	w.Repos["registry.test/ci/web"][d] = true
	w.NeverReady = map[image.Digest]bool{d: true}
	for i := range p.Environments {
		p.Environments[i].Rehearsal.UnreadyImage = "registry.test/ci/web@" + d.String()
	}
	return w, d
}

func TestRehearseUnavailableImageIsDetectedNamedAndRecovered(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	p := drillProcess(t, testProject(0), w, l, nil)
	base := released(t, p, w, "staging")
	copies := w.Copies

	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillUnavailableImage}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	require.Equal(t, rehearsal.PhaseRecovered, rh.Phase)
	require.Equal(t, appstate.VerdictImagePullFailed, rh.Detected)
	require.Equal(t, base.ID, rh.Baseline.ReleaseID)
	require.Equal(t, base.Checkpoints.Digest, rh.Baseline.Digest)
	require.Equal(t, copies, w.Copies, "a digest that exists nowhere is not copied")

	drill, err := l.LoadRelease(ctx, rh.DrillRelease)
	require.NoError(t, err)
	require.True(t, drill.Checkpoints.Unavailable)
	require.Equal(t, "rehearsal "+rh.ID+": unavailable-image", drill.Checkpoints.ForceUnverified)
	require.Contains(t, rh.IntendedRevision.Value, drill.Checkpoints.EnvCommit)
	require.Contains(t, rh.IntendedRevision.Shown, drill.Checkpoints.Digest.String())
	require.Contains(t, rh.ActualArtifact.Value, drill.Checkpoints.Digest.String(), "the pods run the drill's digest")
	require.Contains(t, rh.ActualArtifact.Shown, "cannot pull its image")
	require.Contains(t, rh.ControllerStatus.Shown, "convergence.image-pull-failed")
	require.Contains(t, rh.NextSafeAction.Value, "roll back")
	ttd, ok := rh.TimeToDetect()
	require.True(t, ok)
	require.Positive(t, ttd)
	_, ok = rh.TimeToRecover()
	require.True(t, ok)

	recovery, err := l.LoadRelease(ctx, rh.RecoveryRelease)
	require.NoError(t, err)
	require.Equal(t, workflow.KindRollback, recovery.Kind)
	require.Equal(t, base.ID, recovery.RollbackOf)
	require.Equal(t, workflow.ReleaseConverged, recovery.Status)
	runsBaseline(t, w, base)

	kinds := p.journal.Kinds()
	for _, k := range []string{"rehearsal.started", "rehearsal.injected", "rehearsal.detected", "rehearsal.recovered", "rehearsal.passed"} {
		require.Contains(t, kinds, k)
	}
	stored, err := l.LoadRehearsal(ctx, rh.ID)
	require.NoError(t, err)
	require.Equal(t, rh, stored)
}

// TestTheEnvironmentsReadinessGraceDecides: the watch's own grace is an
// hour here, the environment's (argocd.readiness_grace) 20ms: the unready
// build is named readiness-failed within the convergence timeout.
func TestTheEnvironmentsReadinessGraceDecides(t *testing.T) {
	t.Parallel()
	proj := testProject(0)
	proj.Environments[0].ArgoCD.ReadinessGrace = 20 * time.Millisecond
	w, _ := unreadyWorld(t, proj)
	slow := drillWatch
	slow.ReadinessGrace = time.Hour
	p := drillProcessWatching(t, proj, w, workflowtest.NewLedger(), nil, slow)
	released(t, p, w, "staging")

	rh, err := p.rh.Rehearse(t.Context(), rehearsal.Request{Env: "staging", Drill: rehearsal.DrillFailedReadiness}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	require.Equal(t, appstate.VerdictReadinessFailed, rh.Detected)
}

func TestRehearseFailedReadiness(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	proj := testProject(0)
	w, unready := unreadyWorld(t, proj)
	l := workflowtest.NewLedger()
	p := drillProcess(t, proj, w, l, nil)
	base := released(t, p, w, "staging")

	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillFailedReadiness}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	require.Equal(t, appstate.VerdictReadinessFailed, rh.Detected)
	require.Contains(t, rh.ActualArtifact.Value, unready.String())
	require.Contains(t, rh.ActualArtifact.Shown, "does not become ready")
	runsBaseline(t, w, base)
}

func TestRehearseFailedReadinessNeedsTheUnreadyImage(t *testing.T) {
	t.Parallel()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	p := drillProcess(t, testProject(0), w, l, nil)
	released(t, p, w, "staging")
	_, err := p.rh.Rehearse(t.Context(), rehearsal.Request{Env: "staging", Drill: rehearsal.DrillFailedReadiness}, nil)
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), "environments[staging].rehearsal.unready_image")
	all, err := l.ListRehearsals(t.Context(), rehearsal.Filter{})
	require.NoError(t, err)
	require.Empty(t, all, "refused before anything is recorded")
}

func TestRehearsalNotDetectedFails(t *testing.T) {
	t.Parallel()
	proj := testProject(0)
	w, unready := unreadyWorld(t, proj)
	delete(w.NeverReady, unready) // the "unready" build is fine after all
	l := workflowtest.NewLedger()
	p := drillProcess(t, proj, w, l, nil)
	base := released(t, p, w, "staging")

	rh, err := p.rh.Rehearse(t.Context(), rehearsal.Request{Env: "staging", Drill: rehearsal.DrillFailedReadiness}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StateFailed, rh.State)
	require.Equal(t, appstate.VerdictConverged, rh.Detected)
	require.Contains(t, rh.Failure, "not detected")
	require.Contains(t, p.journal.Kinds(), "rehearsal.failed")
	runsBaseline(t, w, base) // recovered all the same
}

// misnaming reports a Pod that cannot pull its image as one failing its
// readiness probe: a watch that names the failure wrongly.
type misnaming struct{ workflowtest.TreeConvergence }

func (m misnaming) ResourceTree(ctx context.Context, app appstate.AppRef) ([]appstate.AppResource, error) {
	rs, err := m.TreeConvergence.ResourceTree(ctx, app)
	for i, r := range rs {
		if strings.Contains(r.Message, "ImagePullBackOff") {
			rs[i].Health, rs[i].Message = appstate.HealthDegraded, "Readiness probe failed"
		}
	}
	return rs, err
}

func TestRehearsalMisnamedFails(t *testing.T) {
	t.Parallel()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	p := drillProcess(t, testProject(0), w, l, misnaming{workflowtest.TreeConvergence{Convergence: workflowtest.Convergence{W: w}}})
	base := released(t, p, w, "staging")

	rh, err := p.rh.Rehearse(t.Context(), rehearsal.Request{Env: "staging", Drill: rehearsal.DrillUnavailableImage}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StateFailed, rh.State)
	require.Equal(t, appstate.VerdictReadinessFailed, rh.Detected)
	require.Contains(t, rh.Failure, "misnamed: the watch named readiness-failed, the drill expects image-pull-failed")
	require.Equal(t, rehearsal.PhaseRecovered, rh.Phase, "recovered even so")
	runsBaseline(t, w, base)
}

func TestRehearsalInProductionNeedsIKnow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	proj := testProject(0)
	proj.Environments[1].Production = true
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	p := drillProcess(t, proj, w, l, nil)
	released(t, p, w, "staging")
	base := released(t, p, w, "prod")

	_, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "prod", Drill: rehearsal.DrillUnavailableImage, IKnow: "  "}, nil)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "--i-know REASON")
	require.NotContains(t, p.journal.Kinds(), "rehearsal.started")

	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "prod", Drill: rehearsal.DrillUnavailableImage, IKnow: "game day INC-7, approved by the CAB"}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	require.Equal(t, "game day INC-7, approved by the CAB", rh.ProductionOverride)
	require.Contains(t, p.journal.Kinds(), "rehearsal.production_override")
	runsBaseline(t, w, base)
}

func TestRehearsalRefusedWhenNotConvergedNow(t *testing.T) {
	t.Parallel()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	p := drillProcess(t, testProject(0), w, l, nil)
	_, err := p.rh.Rehearse(t.Context(), rehearsal.Request{Env: "staging", Drill: rehearsal.DrillUnavailableImage}, nil)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "no converged release")

	released(t, p, w, "staging")
	w.App.Health = appstate.HealthDegraded // someone broke it since
	_, err = p.rh.Rehearse(t.Context(), rehearsal.Request{Env: "staging", Drill: rehearsal.DrillUnavailableImage}, nil)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "converge first")
}

func TestUnknownDrillListsTheValidOnes(t *testing.T) {
	t.Parallel()
	_, err := rehearsal.ParseDrill("chaos-monkey")
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), "failed-apply, state-restore, unavailable-image, failed-readiness, interrupted-reconciliation")
}

// TestRehearsalResumesAfterAKillAtEveryPhase kills the process right after
// each save of the rehearsal and resumes it in a new one: it passes, the
// failure injected once, the environment back on the baseline.
func TestRehearsalResumesAfterAKillAtEveryPhase(t *testing.T) {
	t.Parallel()
	for kill := 1; kill <= 8; kill++ {
		t.Run("after save "+string(rune('0'+kill)), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
			first := drillProcess(t, testProject(0), w, l, nil)
			base := released(t, first, w, "staging")
			lands := w.Lands
			var phase rehearsal.Phase
			l.AfterRehearsalSave = func(n int, r *rehearsal.Rehearsal) error {
				if n == kill {
					phase = r.Phase
					return errKilled
				}
				return nil
			}
			_, err := first.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillUnavailableImage}, nil)
			if kill == 8 {
				// The last save is the verdict itself: nothing is left.
				require.ErrorIs(t, err, errKilled)
			} else {
				require.ErrorIs(t, err, errKilled, "phase %s", phase)
			}
			l.AfterRehearsalSave = nil
			all, err := l.ListRehearsals(ctx, rehearsal.Filter{})
			require.NoError(t, err)
			require.Len(t, all, 1)

			second := drillProcess(t, testProject(0), w, l, nil)
			rh, err := second.rh.Resume(ctx, all[0].ID, nil)
			require.NoError(t, err)
			require.Equal(t, rehearsal.StatePassed, rh.State, "killed at phase %s: %s", phase, rh.Failure)
			require.Equal(t, lands+2, w.Lands, "one drill landing and one rollback landing, whatever the kill")
			runsBaseline(t, w, base)
			again, err := second.rh.Resume(ctx, rh.ID, nil)
			require.NoError(t, err)
			require.Equal(t, rh, again, "resuming a finished rehearsal changes nothing")
		})
	}
}

func TestCleanupRestoresTheBaseline(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	p := drillProcess(t, testProject(0), w, l, nil)
	base := released(t, p, w, "staging")
	l.AfterRehearsalSave = func(_ int, r *rehearsal.Rehearsal) error {
		if r.Phase == rehearsal.PhaseInjected {
			return errKilled // killed with the broken digest landed
		}
		return nil
	}
	_, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillUnavailableImage}, nil)
	require.ErrorIs(t, err, errKilled)
	l.AfterRehearsalSave = nil
	all, err := l.ListRehearsals(ctx, rehearsal.Filter{Env: "staging"})
	require.NoError(t, err)
	require.Len(t, all, 1)

	q := drillProcess(t, testProject(0), w, l, nil)
	rh, err := q.rh.Cleanup(ctx, all[0].ID, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StateAbandoned, rh.State)
	require.NotEmpty(t, rh.RecoveryRelease)
	runsBaseline(t, w, base)
	drill, err := l.LoadRelease(ctx, rh.DrillRelease)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseRolledBack, drill.Status, "the drill's release is not left open for relcap promote to join")
	require.Contains(t, q.journal.Kinds(), "rehearsal.abandoned")

	lands := w.Lands
	again, err := q.rh.Cleanup(ctx, rh.ID, nil)
	require.NoError(t, err)
	require.Equal(t, rh, again)
	require.Equal(t, lands, w.Lands, "a second cleanup changes nothing")
}

func TestRehearsalHoldsThePromotionLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := workflowtest.NewWorld()
	locks := &workflowtest.FakeLocks{}
	l := workflowtest.LockingLedger{Ledger: workflowtest.NewLedger(), FakeLocks: locks}
	p := drillProcess(t, testProject(0), w, l, nil)
	released(t, p, w, "staging")
	scope := oplock.Scope{Kind: oplock.Promote, Key: "web/staging"}
	var heldAt []rehearsal.Phase
	l.AfterRehearsalSave = func(_ int, r *rehearsal.Rehearsal) error {
		if h, ok := locks.Holder(scope); ok && strings.Contains(h.What, "rehearse unavailable-image in staging") {
			heldAt = append(heldAt, r.Phase)
		}
		return nil
	}
	rh, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillUnavailableImage}, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	for _, ph := range []rehearsal.Phase{rehearsal.PhaseBaseline, rehearsal.PhaseInjected, rehearsal.PhaseDetected, rehearsal.PhaseRecovering, rehearsal.PhaseRecovered} {
		require.True(t, slices.Contains(heldAt, ph), "lock held at phase %s", ph)
	}
	_, held := locks.Holder(scope)
	require.False(t, held, "released at the end")

	// Another captain's promotion meanwhile is refused.
	release := locks.Hold(scope, oplock.Holder{Actor: "bob", What: "promote"})
	defer release()
	_, err = p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillUnavailableImage}, nil)
	require.ErrorIs(t, err, fault.ErrLocked)
}

// TestRehearsalInterruptedByCtrlCResumes: the context ends while the
// watch looks at the broken release; the rehearsal stays running at its
// phase, and a resume in a new process finishes it.
func TestRehearsalInterruptedByCtrlCResumes(t *testing.T) {
	t.Parallel()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	p := drillProcess(t, testProject(0), w, l, nil)
	base := released(t, p, w, "staging")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillUnavailableImage}, func(e workflow.Event) {
		if e.Kind == workflow.EventAppState && e.Step == workflow.StepConvergence {
			cancel() // Ctrl-C during detection
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	all, err := l.ListRehearsals(t.Context(), rehearsal.Filter{})
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, rehearsal.StateRunning, all[0].State)
	require.Equal(t, rehearsal.PhaseInjected, all[0].Phase)

	q := drillProcess(t, testProject(0), w, l, nil)
	rh, err := q.rh.Resume(t.Context(), all[0].ID, nil)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	runsBaseline(t, w, base)
}

// TestADrillLeftMidwayIsNotJoinedByRelcapPromote: a drill stopped before
// it landed leaves its release in progress; relcap promote starts its own
// release rather than joining the drill's.
func TestADrillLeftMidwayIsNotJoinedByRelcapPromote(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	p := drillProcess(t, testProject(0), w, l, nil)
	released(t, p, w, "staging")
	l.AfterRehearsalSave = func(n int, r *rehearsal.Rehearsal) error {
		if r.DrillRelease != "" {
			return errKilled // the drill's release exists, nothing ran yet
		}
		return nil
	}
	_, err := p.rh.Rehearse(ctx, rehearsal.Request{Env: "staging", Drill: rehearsal.DrillUnavailableImage}, nil)
	require.ErrorIs(t, err, errKilled)
	l.AfterRehearsalSave = nil
	all, err := l.ListRehearsals(ctx, rehearsal.Filter{})
	require.NoError(t, err)
	require.Len(t, all, 1)

	opened, err := p.svc.OpenRelease(ctx, workflow.OpenRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3", PromoteOnly: true})
	require.NoError(t, err)
	require.True(t, opened.Started)
	require.NotEqual(t, all[0].DrillRelease, opened.Release.ID)
}
