package rehearsal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
)

// Request asks for one drill in one environment.
type Request struct {
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
// inject, detect, recover (failed-apply: failedapply.go). It holds the
// environment's promotion lock throughout, so no release lands in the
// middle of it, and saves the rehearsal after every phase, so a drill
// killed at any point is continued by Resume or undone by Cleanup. The
// returned record says whether it passed; err is why it could not run or
// continue (refused, blocked, the context ended), not a failed drill.
func (s *Service) Rehearse(ctx context.Context, req Request, sink workflow.EventSink) (*Rehearsal, error) {
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
		return nil, fmt.Errorf("%w: %s is a production environment: a drill breaks it on purpose; rehearse in an environment before it, or pass --i-know REASON (journaled and signed)", fault.ErrBlocked, env.Name)
	}
	if err := s.drillConfigured(env, req.Drill); err != nil {
		return nil, err
	}
	unlock, err := s.core.LockPromotion(ctx, env, fmt.Sprintf("rehearse %s in %s", req.Drill, env.Name))
	if err != nil {
		return nil, err
	}
	defer unlock()
	// The failed-apply drill never reaches Argo CD: its baseline is the
	// Terraform state, taken as it makes its scratch copy.
	var base Baseline
	if !req.Drill.OnScratchCopy() {
		if base, err = s.baseline(ctx, env); err != nil {
			return nil, err
		}
	}
	now := d.Clock.Now()
	rh := &Rehearsal{ID: NewID(d.Project.App, env.Name, now), App: d.Project.App, Env: env.Name, Drill: req.Drill, Captain: d.Actor,
		State: StateRunning, Phase: PhaseBaseline, Baseline: base, Expected: s.expected(env, req.Drill), StartedAt: now.UTC(),
		PhaseTimeout: env.Rehearsal.PhaseTimeout()}
	if req.Timeout > 0 {
		rh.PhaseTimeout = req.Timeout
	}
	if env.Production {
		rh.ProductionOverride = reason
		if err := s.core.Journal(ctx, RehearsalProductionOverride{Env: env.Name, Drill: string(req.Drill), Reason: reason}); err != nil {
			return nil, err
		}
	}
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return nil, err
	}
	if err := s.core.Journal(ctx, RehearsalStarted{Rehearsal: rh.ID, Env: env.Name, Drill: string(req.Drill), Baseline: base.ReleaseID,
		Digest: base.Digest.String(), Expected: string(rh.Expected)}); err != nil {
		return rh.Clone(), err
	}
	return s.advanceRehearsal(ctx, env, rh, sink)
}

// Resume continues a rehearsal from the phase it was saved in.
// A finished one is returned as it is.
func (s *Service) Resume(ctx context.Context, id string, sink workflow.EventSink) (*Rehearsal, error) {
	rh, env, unlock, err := s.heldRehearsal(ctx, id, "resume")
	if err != nil || rh.State.Done() {
		return rh, err
	}
	defer unlock()
	return s.advanceRehearsal(ctx, env, rh, sink)
}

// Cleanup undoes what an unfinished rehearsal left: it resumes
// reconciliation it paused, rolls the environment back to the baseline
// when it is not running it, and marks the drill's release ended (for
// failed-apply: removes its scratch copy, all it made); then the
// rehearsal is abandoned. A finished rehearsal is returned as it is,
// so cleaning up twice changes nothing.
func (s *Service) Cleanup(ctx context.Context, id string, sink workflow.EventSink) (*Rehearsal, error) {
	rh, env, unlock, err := s.heldRehearsal(ctx, id, "clean up")
	if err != nil || rh.State.Done() {
		return rh, err
	}
	defer unlock()
	d := s.d
	if rh.Drill.OnScratchCopy() {
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
			r.Status, r.EndedAt, r.UpdatedAt = workflow.ReleaseEnded, d.Clock.Now(), d.Clock.Now()
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
	rh.State, rh.FinishedAt = StateAbandoned, d.Clock.Now().UTC()
	if rh.Failure == "" {
		rh.Failure = "abandoned at phase " + string(rh.Phase) + ": cleaned up"
	}
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return rh.Clone(), err
	}
	return rh.Clone(), s.core.Journal(ctx, RehearsalAbandoned{Rehearsal: rh.ID, Phase: string(rh.Phase), Undone: strings.Join(undone, "; ")})
}

// heldRehearsal loads a rehearsal and, when it is unfinished, takes its
// environment's promotion lock.
func (s *Service) heldRehearsal(ctx context.Context, id, what string) (*Rehearsal, workflow.Environment, func(), error) {
	d := s.d
	rh, err := s.store.LoadRehearsal(ctx, id)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, workflow.Environment{}, nil, fmt.Errorf("%w: no rehearsal %s in the ledger (relcap rehearse list shows them)", fault.ErrUsage, id)
	}
	if err != nil {
		return nil, workflow.Environment{}, nil, err
	}
	if rh.State.Done() {
		return rh, workflow.Environment{}, nil, nil
	}
	env, err := d.Project.Env(rh.Env)
	if err != nil {
		return rh, env, nil, err
	}
	if err := s.rehearsalPorts(rh.Drill); err != nil {
		return rh, env, nil, err
	}
	unlock, err := s.core.LockPromotion(ctx, env, fmt.Sprintf("%s rehearsal %s in %s", what, rh.ID, env.Name))
	if err != nil {
		return rh, env, nil, err
	}
	return rh, env, unlock, nil
}

func (s *Service) rehearsalPorts(drill Drill) error {
	if drill.OnScratchCopy() {
		if s.roots == nil || s.d.Planner == nil || s.d.Applier == nil {
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
func (s *Service) drillConfigured(env workflow.Environment, drill Drill) error {
	switch drill {
	case DrillFailedReadiness:
		if env.Rehearsal.UnreadyImage == "" {
			return fmt.Errorf("%w: failed-readiness needs a build whose pods never become ready: set environments[%s].rehearsal.unready_image to its digest reference (repository@sha256:…)", fault.ErrUsage, env.Name)
		}
	case DrillInterruptedReconc:
		if len(env.Rehearsal.InterruptStop) == 0 {
			if err := s.canPause(); err != nil {
				return fmt.Errorf("%w: interrupted-reconciliation pauses %s with break-glass, which needs Argo CD's sync windows (%v); or set environments[%s].rehearsal.interrupt.stop and .start",
					fault.ErrUsage, env.Name, err, env.Name)
			}
		} else if s.commands == nil {
			return missingPort("command runner (rehearsal.interrupt)")
		}
	case DrillFailedApply, DrillStateRestore:
		if env.Terraform.Dir == "" {
			return fmt.Errorf("%w: %s works on a copy of %s's Terraform root, and %s has none: set environments[%s].terraform.dir", fault.ErrUsage, drill, env.Name, env.Name, env.Name)
		}
	}
	return nil
}

// expected is the verdict the watch must name for drill in env: a paused
// application (break-glass) is named differently from a stopped controller.
func (s *Service) expected(env workflow.Environment, drill Drill) appstate.VerdictKind {
	if drill == DrillInterruptedReconc && len(env.Rehearsal.InterruptStop) == 0 {
		return appstate.VerdictReconcilePaused
	}
	return drill.Expected()
}

// convergedReleases are env's releases that converged, latest convergence
// first.
func (s *Service) convergedReleases(ctx context.Context, env string) ([]*workflow.Release, error) {
	releases, err := s.d.Ledger.ListReleases(ctx, workflow.ReleaseFilter{App: s.d.Project.App, Env: env, Limit: 200})
	if err != nil {
		return nil, err
	}
	var out []*workflow.Release
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
func (s *Service) baseline(ctx context.Context, env workflow.Environment) (Baseline, error) {
	rs, err := s.convergedReleases(ctx, env.Name)
	if err != nil {
		return Baseline{}, err
	}
	if len(rs) == 0 {
		return Baseline{}, fmt.Errorf("%w: %s has no converged release in the ledger to return to; release to it first (relcap release), then rehearse", fault.ErrBlocked, env.Name)
	}
	b := rs[0]
	base := Baseline{ReleaseID: b.ID, Digest: b.Checkpoints.Digest, EnvCommit: b.Checkpoints.EnvCommit}
	st, err := s.d.Convergence.Get(ctx, env.AppRef())
	if err != nil {
		return base, fmt.Errorf("get application %s: %w", env.ArgoCD.App, err)
	}
	if v := workflow.Converged(st, workflow.Want{Revision: base.EnvCommit, Digest: base.Digest}); v.Kind != appstate.VerdictConverged {
		return base, fmt.Errorf("%w: %s is not converged on its last release %s (%s at %s) now: %s; converge first (relcap converge --env %s --revision %s), then rehearse",
			fault.ErrBlocked, env.Name, b.ID, base.Digest.Short(), workflow.RevOrNone(base.EnvCommit), v.Reason, env.Name, base.EnvCommit)
	}
	return base, nil
}

// onBaseline reports whether env runs the baseline digest now, synced and
// healthy, at whatever revision (a rollback restores it as a new commit).
func (s *Service) onBaseline(ctx context.Context, env workflow.Environment, rh *Rehearsal) (bool, error) {
	st, err := s.d.Convergence.Get(ctx, env.AppRef())
	if err != nil {
		return false, fmt.Errorf("get application %s: %w", env.ArgoCD.App, err)
	}
	return st.SyncStatus == appstate.SyncSynced && st.Health == appstate.HealthHealthy && len(st.Images) > 0 && workflow.RunsDigest(st.Images, rh.Baseline.Digest) &&
		!slicesAnyOther(st.Images, rh.Baseline.Digest), nil
}

// slicesAnyOther reports whether an image runs another digest than d
// (a rollout half done).
func slicesAnyOther(images []string, d image.Digest) bool {
	for _, img := range images {
		if !strings.HasSuffix(img, "@"+d.String()) {
			return true
		}
	}
	return false
}

func (s *Service) saveRehearsal(ctx context.Context, rh *Rehearsal) error {
	if err := s.store.SaveRehearsal(ctx, rh); err != nil {
		return fmt.Errorf("save rehearsal %s: %w", rh.ID, err)
	}
	return nil
}

// advanceRehearsal runs the phases left, each saved as it ends.
func (s *Service) advanceRehearsal(ctx context.Context, env workflow.Environment, rh *Rehearsal, sink workflow.EventSink) (*Rehearsal, error) {
	switch rh.Drill {
	case DrillFailedApply:
		return s.advanceFailedApply(ctx, env, rh)
	case DrillStateRestore:
		return s.advanceStateRestore(ctx, env, rh)
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
			if !errors.Is(err, fault.ErrNotConverged) {
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
		rh.State = StatePassed
	} else {
		rh.State = StateFailed
	}
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return rh.Clone(), err
	}
	if rh.State == StatePassed {
		return rh.Clone(), s.core.Journal(ctx, RehearsalPassed{Rehearsal: rh.ID})
	}
	return rh.Clone(), s.core.Journal(ctx, RehearsalFailed{Rehearsal: rh.ID, Reason: rh.Failure})
}

// phaseTimeout is how long each phase of rh may take.
func (rh *Rehearsal) phaseTimeout(env workflow.Environment) time.Duration {
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
