package rehearsal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
)

// The phases of the Argo CD drills (unavailable-image, failed-readiness,
// interrupted-reconciliation): the failure injected through the promotion
// path, detected by the convergence watch, recovered by a rollback.

// inject puts the drill's failure into the environment through the
// promotion path, up to landing (and, for interrupted-reconciliation, the
// interruption).
func (s *Service) inject(ctx context.Context, env workflow.Environment, rh *Rehearsal, sink workflow.EventSink) error {
	d := s.d
	if rh.DrillRelease == "" {
		req := workflow.StartRequest{Env: env.Name, PromoteOnly: true, Promotion: workflow.PromotionHook{Rehearsal: rh.ID},
			ForceUnverified: fmt.Sprintf("rehearsal %s: %s", rh.ID, rh.Drill)}
		switch rh.Drill {
		case DrillUnavailableImage:
			digest, err := s.unavailableDigest(ctx, env)
			if err != nil {
				return err
			}
			req.Image, req.Promotion.Unavailable = env.Registry.Repository+"@"+digest.String(), true
		case DrillFailedReadiness:
			req.Image = env.Rehearsal.UnreadyImage
		case DrillInterruptedReconc:
			prev, err := s.previousGood(ctx, env, rh)
			if err != nil {
				return err
			}
			req.Image = env.Registry.Repository + "@" + prev.Checkpoints.Digest.String()
		}
		r, err := s.core.Start(ctx, req)
		if err != nil {
			return err
		}
		rh.DrillRelease = r.ID
		if err := s.saveRehearsal(ctx, rh); err != nil {
			return err
		}
	}
	if rh.Drill == DrillInterruptedReconc {
		// Stopped before the change lands, so the rollout it starts is
		// the one interrupted: stopped after, a rollout of a good build
		// may finish first (on a kwok cluster pods are ready within
		// milliseconds) and the drill would prove nothing.
		if err := s.interrupt(ctx, env, rh); err != nil {
			return fmt.Errorf("rehearsal %s: interrupt reconciliation: %w (undo with relcap rehearse --cleanup %s)", rh.ID, err, rh.ID)
		}
	}
	r, err := s.core.RunUntil(ctx, rh.DrillRelease, sink, workflow.StepPromotion)
	if err != nil {
		return fmt.Errorf("rehearsal %s: inject through release %s: %w (continue with relcap rehearse --resume %s, or undo with relcap rehearse --cleanup %s)",
			rh.ID, rh.DrillRelease, err, rh.ID, rh.ID)
	}
	if !r.Checkpoints.Landed() {
		return fmt.Errorf("rehearsal %s: release %s did not land", rh.ID, r.ID)
	}
	rh.Phase, rh.InjectedAt = PhaseInjected, d.Clock.Now().UTC()
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return err
	}
	return s.core.Journal(ctx, RehearsalInjected{Rehearsal: rh.ID, Release: rh.DrillRelease, At: rh.InjectedAt})
}

// unavailableDigest is a digest that cannot exist: 32 random bytes, never
// the hash of anything, checked absent from the environment's repository.
func (s *Service) unavailableDigest(ctx context.Context, env workflow.Environment) (image.Digest, error) {
	for range 3 {
		var b [32]byte
		_, _ = rand.Read(b[:])
		digest, err := image.ParseDigest("sha256:" + hex.EncodeToString(b[:]))
		if err != nil {
			return image.Digest{}, err
		}
		_, err = s.d.Registry.Resolve(ctx, env.Registry.Repository+"@"+digest.String())
		switch {
		case errors.Is(err, fault.ErrNotFound):
			return digest, nil
		case err != nil:
			return image.Digest{}, fmt.Errorf("check that %s is not in %s: %w", digest.Short(), env.Registry.Repository, err)
		}
	}
	return image.Digest{}, fmt.Errorf("%s answers every random digest as present; it cannot run the unavailable-image drill", env.Registry.Repository)
}

// previousGood is the release env converged on before the baseline, with
// another digest: a good build whose rollout the drill interrupts.
func (s *Service) previousGood(ctx context.Context, env workflow.Environment, rh *Rehearsal) (*workflow.Release, error) {
	rs, err := s.convergedReleases(ctx, env.Name)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.ID != rh.Baseline.ReleaseID && r.Checkpoints.Digest != rh.Baseline.Digest {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w: interrupted-reconciliation rolls out a good build other than the baseline, and %s has converged on only one digest (%s); release twice (two different builds) first",
		fault.ErrBlocked, env.Name, rh.Baseline.Digest.Short())
}

// interrupt stops reconciliation: the configured stop command, or
// relcap's own break-glass pause.
func (s *Service) interrupt(ctx context.Context, env workflow.Environment, rh *Rehearsal) error {
	if argv := env.Rehearsal.InterruptStop; len(argv) > 0 {
		return s.commands.RunCommand(ctx, argv)
	}
	if s.pauser == nil {
		return missingPort("break-glass pauser")
	}
	if paused, err := s.pauser.Paused(ctx, env.Name); err != nil || paused {
		return err // paused already by this drill before a crash
	}
	return s.pauser.Pause(ctx, env.Name, "rehearsal "+rh.ID+": interrupted-reconciliation", 3*rh.phaseTimeout(env)+time.Minute)
}

// resumeReconciliation undoes interrupt; doing it twice is harmless.
func (s *Service) resumeReconciliation(ctx context.Context, env workflow.Environment, rh *Rehearsal) error {
	if argv := env.Rehearsal.InterruptStart; len(argv) > 0 {
		return s.commands.RunCommand(ctx, argv)
	}
	if s.pauser == nil {
		return missingPort("break-glass pauser")
	}
	if paused, err := s.pauser.Paused(ctx, env.Name); err != nil || !paused {
		return err
	}
	return s.pauser.Resume(ctx, env.Name)
}

// canPause says why this process cannot pause reconciliation with
// break-glass, or nil when it can: the pause is a deny sync window, so it
// needs Argo CD's sync windows.
func (s *Service) canPause() error {
	if _, ok := s.d.Convergence.(workflow.SyncWindows); !ok || s.d.Convergence == nil {
		return missingPort("argo cd sync windows")
	}
	if s.pauser == nil {
		return missingPort("break-glass pauser")
	}
	return nil
}

// detect watches the drill's release converge, which it must not: the
// watch names the failure, and the four answers are what it showed.
func (s *Service) detect(ctx context.Context, env workflow.Environment, rh *Rehearsal, sink workflow.EventSink) error {
	d := s.d
	var last appstate.AppState
	watchSink := func(e workflow.Event) {
		if e.Kind == workflow.EventAppState && e.App != nil {
			last = *e.App
		}
		if sink != nil {
			sink(e)
		}
	}
	pctx, cancel := context.WithTimeout(ctx, rh.phaseTimeout(env))
	_, runErr := s.core.RunUntil(pctx, rh.DrillRelease, watchSink, workflow.StepConvergence)
	cancel()
	r, err := d.Ledger.LoadRelease(ctx, rh.DrillRelease)
	if err != nil {
		return fmt.Errorf("load release %s: %w", rh.DrillRelease, err)
	}
	var failed *evidence.AppNotConverged
	for _, ev := range r.Step(workflow.StepConvergence).Evidence {
		if nc, ok := ev.Detail.(evidence.AppNotConverged); ok {
			failed = &nc
		} else if nc, ok := ev.Detail.(*evidence.AppNotConverged); ok {
			failed = nc
		}
	}
	switch {
	case failed != nil:
		rh.Detected = failed.Verdict
		if rh.Detected != rh.Expected {
			rh.Failure = fmt.Sprintf("misnamed: the watch named %s, the drill expects %s", rh.Detected, rh.Expected)
		}
		s.answer(rh, r, *failed, last)
	case r.Status == workflow.ReleaseConverged:
		rh.Detected = appstate.VerdictConverged
		rh.Failure = "not detected: release " + r.ID + " converged although the drill broke it"
	case runErr != nil && (errors.Is(runErr, fault.ErrNotConverged) || errors.Is(runErr, context.DeadlineExceeded)) && ctx.Err() == nil:
		rh.Failure = fmt.Sprintf("not detected within %s: %v", rh.phaseTimeout(env), runErr)
	case runErr != nil:
		return fmt.Errorf("rehearsal %s: watch release %s: %w (continue with relcap rehearse --resume %s)", rh.ID, r.ID, runErr, rh.ID)
	default:
		rh.Failure = "not detected: the watch of release " + r.ID + " ended without a verdict"
	}
	rh.Phase, rh.DetectedAt = PhaseDetected, d.Clock.Now().UTC()
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return err
	}
	ttd, _ := rh.TimeToDetect()
	return s.core.Journal(ctx, RehearsalDetected{Rehearsal: rh.ID, Verdict: rh.Detected, Expected: rh.Expected, IntendedRevision: rh.IntendedRevision,
		ActualArtifact: rh.ActualArtifact, ControllerStatus: rh.ControllerStatus, NextSafeAction: rh.NextSafeAction, DetectSeconds: ttd.Seconds()})
}

// answer fills the four answers from the watch's verdict and last state.
func (s *Service) answer(rh *Rehearsal, r *workflow.Release, v evidence.AppNotConverged, last appstate.AppState) {
	images := strings.Join(v.Images, ", ")
	if images == "" {
		images = "(none reported)"
	}
	op := ""
	if last.Operation != "" {
		op = ", operation " + string(last.Operation)
	}
	rh.IntendedRevision = workflow.Answer{Value: v.IntendedRevision,
		Shown: fmt.Sprintf("intended revision: %s (release %s pins %s)", workflow.RevOrNone(v.IntendedRevision), r.ID, v.Digest)}
	rh.ActualArtifact = workflow.Answer{Value: images, Shown: fmt.Sprintf("actual artifact: %s — %s", images, v.Reason)}
	ctrl := fmt.Sprintf("sync %s at %s, health %s%s", v.Sync, workflow.RevOrNone(v.Revision), v.Health, op)
	rh.ControllerStatus = workflow.Answer{Value: ctrl, Shown: fmt.Sprintf("controller status: %s: %s", v.Verdict.FindingCode(), ctrl)}
	rh.NextSafeAction = workflow.Answer{Value: v.NextAction, Shown: "next safe action: " + v.NextAction}
}

// recover returns env to the baseline: for an interrupted reconciliation
// it resumes it and lets the drill's release converge first; then a
// rollback to the baseline release, converged on its digest.
func (s *Service) recover(ctx context.Context, env workflow.Environment, rh *Rehearsal, sink workflow.EventSink) error {
	d := s.d
	pctx, cancel := context.WithTimeout(ctx, rh.phaseTimeout(env))
	defer cancel()
	if rh.Phase != PhaseRecovering {
		if rh.Drill == DrillInterruptedReconc && !rh.InjectedAt.IsZero() {
			if err := s.resumeReconciliation(ctx, env, rh); err != nil {
				return err
			}
			if rh.State == StateRunning && rh.Phase == PhaseDetected {
				if _, err := s.core.RunUntil(pctx, rh.DrillRelease, sink, workflow.StepConvergence); err != nil {
					rh.Failure = joinFailure(rh.Failure, "after reconciliation resumed, release "+rh.DrillRelease+" did not converge: "+err.Error())
				}
			}
		}
		rh.Phase = PhaseRecovering
		if err := s.saveRehearsal(ctx, rh); err != nil {
			return err
		}
	}
	if rh.RecoveryRelease == "" {
		r, err := s.core.StartRollback(ctx, workflow.RollbackRequest{Env: env.Name, To: rh.Baseline.ReleaseID})
		if err != nil {
			return fmt.Errorf("rehearsal %s: roll back to %s: %w", rh.ID, rh.Baseline.ReleaseID, err)
		}
		r.Checkpoints.Rehearsal = rh.ID
		if err := d.Ledger.SaveRelease(ctx, r); err != nil {
			return fmt.Errorf("save release %s: %w", r.ID, err)
		}
		rh.RecoveryRelease = r.ID
		if err := s.saveRehearsal(ctx, rh); err != nil {
			return err
		}
	}
	r, err := s.core.Run(pctx, rh.RecoveryRelease, sink)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %v", fault.ErrNotConverged, err)
		}
		return err
	}
	if r.Status != workflow.ReleaseConverged || r.Checkpoints.Digest != rh.Baseline.Digest {
		return fmt.Errorf("%w: release %s is %s with %s", fault.ErrNotConverged, r.ID, r.Status, r.Checkpoints.Digest.Short())
	}
	rh.Phase, rh.RecoveredAt = PhaseRecovered, d.Clock.Now().UTC()
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return err
	}
	ttr, _ := rh.TimeToRecover()
	return s.core.Journal(ctx, RehearsalRecovered{Rehearsal: rh.ID, Release: r.ID, Digest: r.Checkpoints.Digest.String(), RecoverSeconds: ttr.Seconds()})
}
