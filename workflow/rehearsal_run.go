package workflow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// RehearseRequest asks for one drill in one environment.
type RehearseRequest struct {
	Env   string
	Drill Drill
	// IKnow is the reason to drill a production environment (--i-know);
	// without it a production environment is refused.
	IKnow string
	// Timeout bounds each phase (detect, recover); 0 means the
	// environment's rehearsal.timeout.
	Timeout time.Duration
}

// Rehearse runs one drill from the environment's baseline to its end:
// inject, detect, recover (failed-apply: rehearsal_failedapply.go). It holds the environment's promotion lock
// throughout, so no release lands in the middle of it, and saves the
// rehearsal after every phase, so a drill killed at any point is continued
// by ResumeRehearsal or undone by CleanupRehearsal. The returned record
// says whether it passed; err is why it could not run or continue
// (refused, blocked, the context ended), not a failed drill.
func (s *Service) Rehearse(ctx context.Context, req RehearseRequest, sink EventSink) (*Rehearsal, error) {
	d := s.d
	env, err := d.Project.Env(req.Env)
	if err != nil {
		return nil, err
	}
	if _, err := ParseDrill(string(req.Drill)); err != nil {
		return nil, err
	}
	if err := s.rehearsalPorts(req.Drill); err != nil {
		return nil, err
	}
	reason := strings.TrimSpace(req.IKnow)
	if env.Production && reason == "" {
		return nil, fmt.Errorf("%w: %s is a production environment: a drill breaks it on purpose; rehearse in an environment before it, or pass --i-know REASON (journaled and signed)", ErrBlocked, env.Name)
	}
	if err := s.drillConfigured(env, req.Drill); err != nil {
		return nil, err
	}
	unlock, err := s.lockOperation(ctx, LockScope{Kind: LockPromote, Key: PromotionBoundary(d.Project, env)}, "",
		fmt.Sprintf("rehearse %s in %s", req.Drill, env.Name))
	if err != nil {
		return nil, err
	}
	defer unlock()
	// The failed-apply drill never reaches Argo CD: its baseline is the
	// Terraform state, taken as it makes its scratch copy.
	var base RehearsalBaseline
	if req.Drill != DrillFailedApply {
		if base, err = s.baseline(ctx, env); err != nil {
			return nil, err
		}
	}
	now := d.Clock.Now()
	rh := &Rehearsal{ID: NewRehearsalID(d.Project.App, env.Name, now), App: d.Project.App, Env: env.Name, Drill: req.Drill, Captain: d.Actor,
		State: RehearsalStateRunning, Phase: PhaseBaseline, Baseline: base, Expected: s.expected(env, req.Drill), StartedAt: now.UTC(),
		PhaseTimeout: env.Rehearsal.PhaseTimeout()}
	if req.Timeout > 0 {
		rh.PhaseTimeout = req.Timeout
	}
	if env.Production {
		rh.ProductionOverride = reason
		if err := s.journal(ctx, RehearsalProductionOverride{Env: env.Name, Drill: req.Drill, Reason: reason}); err != nil {
			return nil, err
		}
	}
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return nil, err
	}
	if err := s.journal(ctx, RehearsalStarted{Rehearsal: rh.ID, Env: env.Name, Drill: req.Drill, Baseline: base.ReleaseID,
		Digest: base.Digest.String(), Expected: string(rh.Expected)}); err != nil {
		return rh.Clone(), err
	}
	return s.advanceRehearsal(ctx, env, rh, sink)
}

// ResumeRehearsal continues a rehearsal from the phase it was saved in.
// A finished one is returned as it is.
func (s *Service) ResumeRehearsal(ctx context.Context, id string, sink EventSink) (*Rehearsal, error) {
	rh, env, unlock, err := s.heldRehearsal(ctx, id, "resume")
	if err != nil || rh.State.Done() {
		return rh, err
	}
	defer unlock()
	return s.advanceRehearsal(ctx, env, rh, sink)
}

// CleanupRehearsal undoes what an unfinished rehearsal left: it resumes
// reconciliation it paused, rolls the environment back to the baseline
// when it is not running it, and marks the drill's release ended (for
// failed-apply: removes its scratch copy, all it made); then the
// rehearsal is abandoned. A finished rehearsal is returned as it is,
// so cleaning up twice changes nothing.
func (s *Service) CleanupRehearsal(ctx context.Context, id string, sink EventSink) (*Rehearsal, error) {
	rh, env, unlock, err := s.heldRehearsal(ctx, id, "clean up")
	if err != nil || rh.State.Done() {
		return rh, err
	}
	defer unlock()
	d := s.d
	if rh.Drill == DrillFailedApply {
		return s.cleanupFailedApply(ctx, rh)
	}
	var undone []string
	if rh.Drill == DrillInterruptedReconc && rh.DrillRelease != "" {
		// Killed between the interruption and its save, the record does
		// not say it happened: resume anyway (starting a running
		// controller, or ending no break-glass, changes nothing).
		if err := s.resumeReconciliation(ctx, env, rh); err != nil {
			return rh.Clone(), err
		}
		undone = append(undone, "reconciliation resumed")
	}
	if rh.DrillRelease != "" {
		if r, err := d.Ledger.LoadRelease(ctx, rh.DrillRelease); err == nil && !r.Status.Done() {
			// Never joined by a later relcap promote as an open release.
			r.Status, r.EndedAt, r.UpdatedAt = ReleaseEnded, d.Clock.Now(), d.Clock.Now()
			if err := d.Ledger.SaveRelease(ctx, r); err != nil {
				return rh.Clone(), fmt.Errorf("save release %s: %w", r.ID, err)
			}
			undone = append(undone, "drill release "+r.ID+" ended")
		}
	}
	onBase, err := s.onBaseline(ctx, env, rh)
	if err != nil {
		return rh.Clone(), err
	}
	if !onBase {
		if err := s.recover(ctx, env, rh, sink); err != nil {
			return rh.Clone(), err
		}
		undone = append(undone, "rolled back to "+rh.Baseline.ReleaseID+" ("+rh.Baseline.Digest.Short()+") with "+rh.RecoveryRelease)
	}
	if len(undone) == 0 {
		undone = append(undone, "nothing to undo: the environment runs the baseline")
	}
	rh.State, rh.FinishedAt = RehearsalStateAbandoned, d.Clock.Now().UTC()
	if rh.Failure == "" {
		rh.Failure = "abandoned at phase " + string(rh.Phase) + ": cleaned up"
	}
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return rh.Clone(), err
	}
	return rh.Clone(), s.journal(ctx, RehearsalAbandoned{Rehearsal: rh.ID, Phase: string(rh.Phase), Undone: strings.Join(undone, "; ")})
}

// heldRehearsal loads a rehearsal and, when it is unfinished, takes its
// environment's promotion lock.
func (s *Service) heldRehearsal(ctx context.Context, id, what string) (*Rehearsal, Environment, func(), error) {
	d := s.d
	rh, err := d.Ledger.LoadRehearsal(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, Environment{}, nil, fmt.Errorf("%w: no rehearsal %s in the ledger (relcap rehearse list shows them)", ErrUsage, id)
	}
	if err != nil {
		return nil, Environment{}, nil, err
	}
	if rh.State.Done() {
		return rh, Environment{}, nil, nil
	}
	env, err := d.Project.Env(rh.Env)
	if err != nil {
		return rh, env, nil, err
	}
	if err := s.rehearsalPorts(rh.Drill); err != nil {
		return rh, env, nil, err
	}
	unlock, err := s.lockOperation(ctx, LockScope{Kind: LockPromote, Key: PromotionBoundary(d.Project, env)}, "",
		fmt.Sprintf("%s rehearsal %s in %s", what, rh.ID, env.Name))
	if err != nil {
		return rh, env, nil, err
	}
	return rh, env, unlock, nil
}

func (s *Service) rehearsalPorts(drill Drill) error {
	if drill == DrillFailedApply {
		if _, ok := s.d.Planner.(RehearsalRoots); !ok || s.d.Applier == nil {
			return missingPort("terraform (planner with scratch roots, applier)")
		}
		return nil
	}
	if s.d.Registry == nil || s.d.EnvRepo == nil || s.d.Convergence == nil {
		return missingPort("registry, environment-repo or convergence")
	}
	return nil
}

// drillConfigured refuses a drill the environment's configuration cannot
// run, saying which key to set.
func (s *Service) drillConfigured(env Environment, drill Drill) error {
	switch drill {
	case DrillFailedReadiness:
		if env.Rehearsal.UnreadyImage == "" {
			return fmt.Errorf("%w: failed-readiness needs a build whose pods never become ready: set environments[%s].rehearsal.unready_image to its digest reference (repository@sha256:…)", ErrUsage, env.Name)
		}
	case DrillInterruptedReconc:
		if len(env.Rehearsal.InterruptStop) == 0 {
			if err := s.pausable(); err != nil {
				return fmt.Errorf("%w: interrupted-reconciliation pauses %s with break-glass, which needs Argo CD's sync windows (%v); or set environments[%s].rehearsal.interrupt.stop and .start",
					ErrUsage, env.Name, err, env.Name)
			}
		} else if s.d.Commands == nil {
			return missingPort("command runner (rehearsal.interrupt)")
		}
	case DrillFailedApply:
		if env.Terraform.Dir == "" {
			return fmt.Errorf("%w: failed-apply fails a Terraform apply on a copy of %s's root, and %s has none: set environments[%s].terraform.dir", ErrUsage, env.Name, env.Name, env.Name)
		}
	}
	return nil
}

// expected is the verdict the watch must name for drill in env: a paused
// application (break-glass) is named differently from a stopped controller.
func (s *Service) expected(env Environment, drill Drill) VerdictKind {
	if drill == DrillInterruptedReconc && len(env.Rehearsal.InterruptStop) == 0 {
		return VerdictReconcilePaused
	}
	return drill.Expected()
}

// convergedReleases are env's releases that converged, latest convergence
// first.
func (s *Service) convergedReleases(ctx context.Context, env string) ([]*Release, error) {
	releases, err := s.d.Ledger.ListReleases(ctx, ReleaseFilter{App: s.d.Project.App, Env: env, Limit: 200})
	if err != nil {
		return nil, err
	}
	var out []*Release
	for _, r := range releases {
		if r.Checkpoints.Converged() && !r.Checkpoints.Digest.IsZero() {
			out = append(out, r)
		}
	}
	for i := 1; i < len(out); i++ { // insertion sort by ConvergedAt, newest first
		for j := i; j > 0 && out[j].Checkpoints.ConvergedAt.After(out[j-1].Checkpoints.ConvergedAt); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}

// baseline is the release env last converged on, confirmed converged on
// it now: a drill starts only from a known good state it can return to.
func (s *Service) baseline(ctx context.Context, env Environment) (RehearsalBaseline, error) {
	rs, err := s.convergedReleases(ctx, env.Name)
	if err != nil {
		return RehearsalBaseline{}, err
	}
	if len(rs) == 0 {
		return RehearsalBaseline{}, fmt.Errorf("%w: %s has no converged release in the ledger to return to; release to it first (relcap release), then rehearse", ErrBlocked, env.Name)
	}
	b := rs[0]
	base := RehearsalBaseline{ReleaseID: b.ID, Digest: b.Checkpoints.Digest, EnvCommit: b.Checkpoints.EnvCommit}
	st, err := s.d.Convergence.Get(ctx, env.AppRef())
	if err != nil {
		return base, fmt.Errorf("get application %s: %w", env.ArgoCD.App, err)
	}
	if v := Converged(st, Want{Revision: base.EnvCommit, Digest: base.Digest}); v.Kind != VerdictConverged {
		return base, fmt.Errorf("%w: %s is not converged on its last release %s (%s at %s) now: %s; converge first (relcap converge --env %s --revision %s), then rehearse",
			ErrBlocked, env.Name, b.ID, base.Digest.Short(), revOrNone(base.EnvCommit), v.Reason, env.Name, base.EnvCommit)
	}
	return base, nil
}

// onBaseline reports whether env runs the baseline digest now, synced and
// healthy, at whatever revision (a rollback restores it as a new commit).
func (s *Service) onBaseline(ctx context.Context, env Environment, rh *Rehearsal) (bool, error) {
	st, err := s.d.Convergence.Get(ctx, env.AppRef())
	if err != nil {
		return false, fmt.Errorf("get application %s: %w", env.ArgoCD.App, err)
	}
	return st.SyncStatus == SyncSynced && st.Health == HealthHealthy && len(st.Images) > 0 && runsDigest(st.Images, rh.Baseline.Digest) &&
		!slicesAnyOther(st.Images, rh.Baseline.Digest), nil
}

// slicesAnyOther reports whether an image runs another digest than d
// (a rollout half done).
func slicesAnyOther(images []string, d Digest) bool {
	for _, img := range images {
		if !strings.HasSuffix(img, "@"+d.String()) {
			return true
		}
	}
	return false
}

func (s *Service) saveRehearsal(ctx context.Context, rh *Rehearsal) error {
	if err := s.d.Ledger.SaveRehearsal(ctx, rh); err != nil {
		return fmt.Errorf("save rehearsal %s: %w", rh.ID, err)
	}
	return nil
}

// advanceRehearsal runs the phases left, each saved as it ends.
func (s *Service) advanceRehearsal(ctx context.Context, env Environment, rh *Rehearsal, sink EventSink) (*Rehearsal, error) {
	if rh.Drill == DrillFailedApply {
		return s.advanceFailedApply(ctx, env, rh)
	}
	if rh.Phase == PhaseBaseline {
		if err := s.inject(ctx, env, rh, sink); err != nil {
			return rh.Clone(), err
		}
	}
	if rh.Phase == PhaseInjected {
		if err := s.detect(ctx, env, rh, sink); err != nil {
			return rh.Clone(), err
		}
	}
	if rh.Phase == PhaseDetected || rh.Phase == PhaseRecovering {
		if err := s.recover(ctx, env, rh, sink); err != nil {
			if !errors.Is(err, ErrNotConverged) {
				return rh.Clone(), err
			}
			// The recovery did not converge: the drill failed, and the
			// environment needs the captain.
			rh.Failure = joinFailure(rh.Failure, "recovery did not converge on "+rh.Baseline.Digest.Short()+": "+err.Error())
		}
	}
	return s.finishRehearsal(ctx, rh)
}

// finishRehearsal ends a rehearsal that ran all its phases: passed, or
// failed saying why.
func (s *Service) finishRehearsal(ctx context.Context, rh *Rehearsal) (*Rehearsal, error) {
	rh.FinishedAt = s.d.Clock.Now().UTC()
	if rh.Failure == "" {
		rh.State = RehearsalStatePassed
	} else {
		rh.State = RehearsalStateFailed
	}
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return rh.Clone(), err
	}
	if rh.State == RehearsalStatePassed {
		return rh.Clone(), s.journal(ctx, RehearsalPassed{Rehearsal: rh.ID})
	}
	return rh.Clone(), s.journal(ctx, RehearsalFailed{Rehearsal: rh.ID, Reason: rh.Failure})
}

// phaseTimeout is how long each phase of rh may take.
func (rh *Rehearsal) phaseTimeout(env Environment) time.Duration {
	if rh.PhaseTimeout > 0 {
		return rh.PhaseTimeout
	}
	return env.Rehearsal.PhaseTimeout()
}

func joinFailure(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// inject puts the drill's failure into the environment through the
// promotion path, up to landing (and, for interrupted-reconciliation, the
// interruption).
func (s *Service) inject(ctx context.Context, env Environment, rh *Rehearsal, sink EventSink) error {
	d := s.d
	if rh.DrillRelease == "" {
		req := StartRequest{Env: env.Name, PromoteOnly: true, rehearsal: rh.ID,
			ForceUnverified: fmt.Sprintf("rehearsal %s: %s", rh.ID, rh.Drill)}
		switch rh.Drill {
		case DrillUnavailableImage:
			digest, err := s.unavailableDigest(ctx, env)
			if err != nil {
				return err
			}
			req.Image, req.rehearsalUnavailable = env.Registry.Repository+"@"+digest.String(), true
		case DrillFailedReadiness:
			req.Image = env.Rehearsal.UnreadyImage
		case DrillInterruptedReconc:
			prev, err := s.previousGood(ctx, env, rh)
			if err != nil {
				return err
			}
			req.Image = env.Registry.Repository + "@" + prev.Checkpoints.Digest.String()
		}
		r, err := s.Start(ctx, req)
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
	r, err := s.RunUntil(ctx, rh.DrillRelease, sink, StepPromotion)
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
	return s.journal(ctx, RehearsalInjected{Rehearsal: rh.ID, Release: rh.DrillRelease, At: rh.InjectedAt})
}

// unavailableDigest is a digest that cannot exist: 32 random bytes, never
// the hash of anything, checked absent from the environment's repository.
func (s *Service) unavailableDigest(ctx context.Context, env Environment) (Digest, error) {
	for range 3 {
		var b [32]byte
		_, _ = rand.Read(b[:])
		digest, err := ParseDigest("sha256:" + hex.EncodeToString(b[:]))
		if err != nil {
			return Digest{}, err
		}
		_, err = s.d.Registry.Resolve(ctx, env.Registry.Repository+"@"+digest.String())
		switch {
		case errors.Is(err, ErrNotFound):
			return digest, nil
		case err != nil:
			return Digest{}, fmt.Errorf("check that %s is not in %s: %w", digest.Short(), env.Registry.Repository, err)
		}
	}
	return Digest{}, fmt.Errorf("%s answers every random digest as present; it cannot run the unavailable-image drill", env.Registry.Repository)
}

// previousGood is the release env converged on before the baseline, with
// another digest: a good build whose rollout the drill interrupts.
func (s *Service) previousGood(ctx context.Context, env Environment, rh *Rehearsal) (*Release, error) {
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
		ErrBlocked, env.Name, rh.Baseline.Digest.Short())
}

// interrupt stops reconciliation: the configured stop command, or
// relcap's own break-glass pause.
func (s *Service) interrupt(ctx context.Context, env Environment, rh *Rehearsal) error {
	if argv := env.Rehearsal.InterruptStop; len(argv) > 0 {
		return s.d.Commands.RunCommand(ctx, argv)
	}
	pauser, err := s.pauser()
	if err != nil {
		return err
	}
	if paused, err := pauser.Paused(ctx, env.Name); err != nil || paused {
		return err // paused already by this drill before a crash
	}
	return pauser.Pause(ctx, env.Name, "rehearsal "+rh.ID+": interrupted-reconciliation", 3*rh.phaseTimeout(env)+time.Minute)
}

// resumeReconciliation undoes interrupt; doing it twice is harmless.
func (s *Service) resumeReconciliation(ctx context.Context, env Environment, rh *Rehearsal) error {
	if argv := env.Rehearsal.InterruptStart; len(argv) > 0 {
		return s.d.Commands.RunCommand(ctx, argv)
	}
	pauser, err := s.pauser()
	if err != nil {
		return err
	}
	if paused, err := pauser.Paused(ctx, env.Name); err != nil || !paused {
		return err
	}
	return pauser.Resume(ctx, env.Name)
}

// detect watches the drill's release converge, which it must not: the
// watch names the failure, and the four answers are what it showed.
func (s *Service) detect(ctx context.Context, env Environment, rh *Rehearsal, sink EventSink) error {
	d := s.d
	var last AppState
	watchSink := func(e Event) {
		if e.Kind == EventAppState && e.App != nil {
			last = *e.App
		}
		if sink != nil {
			sink(e)
		}
	}
	pctx, cancel := context.WithTimeout(ctx, rh.phaseTimeout(env))
	_, runErr := s.RunUntil(pctx, rh.DrillRelease, watchSink, StepConvergence)
	cancel()
	r, err := d.Ledger.LoadRelease(ctx, rh.DrillRelease)
	if err != nil {
		return fmt.Errorf("load release %s: %w", rh.DrillRelease, err)
	}
	var failed *AppNotConverged
	for _, ev := range r.Step(StepConvergence).Evidence {
		if nc, ok := ev.Detail.(AppNotConverged); ok {
			failed = &nc
		} else if nc, ok := ev.Detail.(*AppNotConverged); ok {
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
	case r.Status == ReleaseConverged:
		rh.Detected = VerdictConverged
		rh.Failure = "not detected: release " + r.ID + " converged although the drill broke it"
	case runErr != nil && (errors.Is(runErr, ErrNotConverged) || errors.Is(runErr, context.DeadlineExceeded)) && ctx.Err() == nil:
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
	return s.journal(ctx, RehearsalDetected{Rehearsal: rh.ID, Verdict: rh.Detected, Expected: rh.Expected, IntendedRevision: rh.IntendedRevision,
		ActualArtifact: rh.ActualArtifact, ControllerStatus: rh.ControllerStatus, NextSafeAction: rh.NextSafeAction, DetectSeconds: ttd.Seconds()})
}

// answer fills the four answers from the watch's verdict and last state.
func (s *Service) answer(rh *Rehearsal, r *Release, v AppNotConverged, last AppState) {
	images := strings.Join(v.Images, ", ")
	if images == "" {
		images = "(none reported)"
	}
	op := ""
	if last.Operation != "" {
		op = ", operation " + string(last.Operation)
	}
	rh.IntendedRevision = Answer{Value: v.IntendedRevision,
		Shown: fmt.Sprintf("intended revision: %s (release %s pins %s)", revOrNone(v.IntendedRevision), r.ID, v.Digest)}
	rh.ActualArtifact = Answer{Value: images, Shown: fmt.Sprintf("actual artifact: %s — %s", images, v.Reason)}
	ctrl := fmt.Sprintf("sync %s at %s, health %s%s", v.Sync, revOrNone(v.Revision), v.Health, op)
	rh.ControllerStatus = Answer{Value: ctrl, Shown: fmt.Sprintf("controller status: %s: %s", v.Verdict.FindingCode(), ctrl)}
	rh.NextSafeAction = Answer{Value: v.NextAction, Shown: "next safe action: " + v.NextAction}
}

// recover returns env to the baseline: for an interrupted reconciliation
// it resumes it and lets the drill's release converge first; then a
// rollback to the baseline release, converged on its digest.
func (s *Service) recover(ctx context.Context, env Environment, rh *Rehearsal, sink EventSink) error {
	d := s.d
	pctx, cancel := context.WithTimeout(ctx, rh.phaseTimeout(env))
	defer cancel()
	if rh.Phase != PhaseRecovering {
		if rh.Drill == DrillInterruptedReconc && !rh.InjectedAt.IsZero() {
			if err := s.resumeReconciliation(ctx, env, rh); err != nil {
				return err
			}
			if rh.State == RehearsalStateRunning && rh.Phase == PhaseDetected {
				if _, err := s.RunUntil(pctx, rh.DrillRelease, sink, StepConvergence); err != nil {
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
		r, err := s.StartRollback(ctx, RollbackRequest{Env: env.Name, To: rh.Baseline.ReleaseID})
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
	r, err := s.Run(pctx, rh.RecoveryRelease, sink)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %v", ErrNotConverged, err)
		}
		return err
	}
	if r.Status != ReleaseConverged || r.Checkpoints.Digest != rh.Baseline.Digest {
		return fmt.Errorf("%w: release %s is %s with %s", ErrNotConverged, r.ID, r.Status, r.Checkpoints.Digest.Short())
	}
	rh.Phase, rh.RecoveredAt = PhaseRecovered, d.Clock.Now().UTC()
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return err
	}
	ttr, _ := rh.TimeToRecover()
	return s.journal(ctx, RehearsalRecovered{Rehearsal: rh.ID, Release: r.ID, Digest: r.Checkpoints.Digest.String(), RecoverSeconds: ttr.Seconds()})
}
