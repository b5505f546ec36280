package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/finding"
)

// StartRequest asks for a new release.
type StartRequest struct {
	Env           string
	Image         string
	Compatibility *Compatibility
	// PromoteOnly starts a promotion (relcap promote): the problem and
	// boundary steps are skipped and the run stops after the decision.
	PromoteOnly bool
	// ForceUnverified is the reason to promote a digest that has not
	// converged in the previous environment; empty means the policy holds.
	ForceUnverified string
	// allowNoImage lets OpenRelease start a release whose image comes
	// later, at relcap promote (relcap plan starts it).
	allowNoImage bool
	// Promotion marks a release a recovery drill starts on purpose
	// (workflow/rehearsal); the zero value for every other release.
	Promotion PromotionHook
}

// Start creates and persists a new release without running it, and links
// this session to it.
func (s *Service) Start(ctx context.Context, req StartRequest) (*Release, error) {
	if _, err := s.d.Project.Env(req.Env); err != nil {
		return nil, err
	}
	if req.Image == "" && !req.allowNoImage {
		return nil, fmt.Errorf("%w: no image: pass --image REF (a tag or digest reference)", ErrUsage)
	}
	now := s.d.Clock.Now()
	r := NewRelease(NewReleaseID(s.d.Project.App, req.Env, now), s.d.Project.App, req.Env, req.Image, s.d.Actor, now)
	r.Compatibility = s.d.Project.Compatibility
	if req.Compatibility != nil {
		r.Compatibility = *req.Compatibility
	}
	if req.PromoteOnly {
		r.Kind = KindPromotion
		for _, k := range []StepKind{StepOwnership, StepPlanReview, StepApply} {
			st := r.Step(k)
			st.Status, st.Message = Skipped, "relcap promote: the decision step alone"
		}
	}
	r.Checkpoints.ForceUnverified = req.ForceUnverified
	r.Checkpoints.PromotionHook = req.Promotion
	if req.Promotion.Unavailable {
		// Nothing to resolve: the digest is made up, on purpose.
		d, repo, err := req.Promotion.pinnedDigest(req.Image)
		if err != nil {
			return nil, err
		}
		r.Checkpoints.Digest, r.Checkpoints.DigestRepository = d, repo
	}
	if env, err := s.d.Project.Env(r.Env); err != nil {
		return nil, err
	} else if err := s.signRelease(ctx, env, r); err != nil {
		return nil, s.journalFailure(ctx, err, PlanFailed{Env: r.Env, Error: err.Error()})
	}
	if err := s.d.Ledger.SaveRelease(ctx, r); err != nil {
		return nil, fmt.Errorf("save release %s: %w", r.ID, err)
	}
	if err := s.journal(ctx, ReleaseStarted{Release: r.ID, Kind: r.Kind, Env: r.Env, Image: r.Image, Captain: r.Captain, ForceUnverified: req.ForceUnverified}); err != nil {
		return nil, err
	}
	if err := s.linkSession(ctx, r.ID); err != nil {
		return nil, err
	}
	return r, nil
}

// Run drives the release from its first unfinished step until it converges,
// is blocked by policy (an error wrapping ErrBlocked), fails, or ctx ends.
// Steps that succeeded are never run again; a step that was running when
// the process died runs again and consults its checkpoints.
func (s *Service) Run(ctx context.Context, id string, sink EventSink) (*Release, error) {
	return s.RunUntil(ctx, id, sink, StepConvergence)
}

// RunUntil is Run that stops after the step last and never runs a later
// one (relcap plan stops after plan review, relcap promote after the
// decision; relcap converge or resume take the release on).
func (s *Service) RunUntil(ctx context.Context, id string, sink EventSink, last StepKind) (_ *Release, err error) {
	r, err := s.d.Ledger.LoadRelease(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load release %s: %w", id, err)
	}
	if r.Status.Done() {
		return r, nil
	}
	env, err := s.d.Project.Env(r.Env)
	if err != nil {
		return r, err
	}
	// One process drives a release at a time across captains; the release
	// is read again once it is held, since the holder may have moved it on.
	unlock, err := s.lockOperation(ctx, LockScope{Kind: LockRun, Key: r.ID}, r.ID, fmt.Sprintf("run release %s in %s", r.ID, r.Env))
	if err != nil {
		return r, err
	}
	defer unlock()
	if r, err = s.d.Ledger.LoadRelease(ctx, id); err != nil {
		return nil, fmt.Errorf("load release %s: %w", id, err)
	}
	if r.Status.Done() {
		return r, nil
	}
	if err := s.linkSession(ctx, r.ID); err != nil {
		return r, err
	}
	run := &releaseRun{svc: s, r: r, env: env, sink: s.fanOut(sink),
		effort: effort.NewClock(s.d.Clock, s.d.Project.Effort.IdleThreshold, r.ID)}
	defer func() { err = errors.Join(err, run.flushEffort(context.WithoutCancel(ctx))) }()

	if r.Status == ReleaseBlocked || r.Status == ReleaseFailed {
		r.Status = ReleaseInProgress
	}
	for _, k := range StepKinds {
		if k > last {
			// Never past last: relcap apply of an applied plan must not
			// go on to promote.
			return r.Clone(), nil
		}
		if r.Step(k).Status.Done() {
			continue
		}
		if err := run.step(ctx, k); err != nil {
			return r.Clone(), err
		}
	}
	now := s.d.Clock.Now()
	r.Status = ReleaseConverged
	r.EndedAt = now
	if err := run.save(ctx); err != nil {
		return r.Clone(), err
	}
	if err := s.journal(ctx, ReleaseDone{Release: r.ID, Digest: r.Checkpoints.Digest.String(), Revision: r.Checkpoints.EnvCommit}); err != nil {
		return r.Clone(), err
	}
	run.sink(Event{Time: now, Kind: EventReleaseFinished, ReleaseID: r.ID, Status: Succeeded, Message: "converged", Release: r.Clone()})
	return r.Clone(), nil
}

// fanOut is sink followed by the Service's subscribers.
func (s *Service) fanOut(sink EventSink) EventSink {
	return func(e Event) {
		if sink != nil {
			sink(e)
		}
		s.publish(e)
	}
}

// releaseRun is the state of one Run call.
type releaseRun struct {
	svc    *Service
	r      *Release
	env    Environment
	sink   EventSink
	effort *effort.Clock
}

// StepResult is what a step function returns when it did not fail.
type StepResult struct {
	Status   StepStatus
	Message  string
	Findings []finding.Finding
	Evidence []Evidence
	// Err explains a Blocked result (wraps ErrBlocked).
	Err error
}

// blocked is a Blocked result whose Err wraps sentinel.
func blocked(sentinel error, msg string, findings []finding.Finding) StepResult {
	return StepResult{Status: Blocked, Message: msg, Findings: findings, Err: fmt.Errorf("%w: %s", sentinel, msg)}
}

func (run *releaseRun) save(ctx context.Context) error {
	run.r.UpdatedAt = run.svc.d.Clock.Now()
	if err := run.svc.d.Ledger.SaveRelease(ctx, run.r); err != nil {
		return fmt.Errorf("save release %s: %w", run.r.ID, err)
	}
	return nil
}

// checkpoint records a side effect as done, durably, before anything else
// happens: set changes the release's checkpoints, then the release is saved.
func (run *releaseRun) checkpoint(ctx context.Context, set func(*Checkpoints)) error {
	set(&run.r.Checkpoints)
	return run.save(ctx)
}

func (run *releaseRun) progress(k StepKind, msg string) {
	run.sink(Event{Time: run.svc.d.Clock.Now(), Kind: EventStepProgress, ReleaseID: run.r.ID, Step: k, Status: Running, Message: msg})
}

// flushEffort stores the effort measured so far. Losing effort must not
// fail a release, so a failed store is journaled (effort.lost) and the run
// goes on; only when that record fails too does the run report it.
func (run *releaseRun) flushEffort(ctx context.Context) error {
	entries := run.effort.Drain()
	if len(entries) == 0 {
		return nil
	}
	err := run.svc.d.Ledger.RecordEffort(ctx, entries)
	if err == nil {
		return nil
	}
	if jerr := run.svc.journal(ctx, EffortLost{Release: run.r.ID, Error: err.Error()}); jerr != nil {
		return fmt.Errorf("record effort of %s: %w, %w", run.r.ID, err, journalFailed(jerr))
	}
	return nil
}

// wait times machine work on step k as machine wait.
func wait[T any](run *releaseRun, k StepKind, f func() (T, error)) (T, error) {
	run.effort.BeginWait(k.String())
	defer run.effort.EndWait(k.String())
	return f()
}

func (run *releaseRun) step(ctx context.Context, k StepKind) error {
	d := run.svc.d
	rec := run.r.Step(k)
	resumed := rec.Status == Running
	rec.Status = Running
	rec.Attempts++
	rec.StartedAt = d.Clock.Now()
	rec.EndedAt = time.Time{}
	rec.Message = ""
	run.r.Status = ReleaseInProgress
	// No effort Touch here: a step's start and end say nothing about
	// whether anyone was watching. Staff effort comes from the cockpit's
	// input and focus (Service.Touch) and from logged off-tool time; the
	// run itself records only machine wait, so headless numbers are never
	// inflated by Terraform or Argo CD taking their time.
	if err := run.save(ctx); err != nil {
		return err
	}
	if err := run.svc.journal(ctx, StepStarted{Release: run.r.ID, Step: k.String(), Attempt: rec.Attempts, Resumed: resumed}); err != nil {
		return err
	}
	run.sink(Event{Time: rec.StartedAt, Kind: EventStepStarted, ReleaseID: run.r.ID, Step: k, Status: Running, Release: run.r.Clone()})

	out := newOutputLines(func(line string) {
		run.sink(Event{Time: d.Clock.Now(), Kind: EventStepOutput, ReleaseID: run.r.ID, Step: k, Status: Running, Output: line})
	}, d.Secrets)
	res, err := run.runStep(WithToolOutput(ctx, out), k)
	if jerr := run.svc.journalOutput(ctx, out, run.r.ID, k); jerr != nil {
		err = errors.Join(err, jerr)
	}
	rec = run.r.Step(k)
	rec.EndedAt = d.Clock.Now()
	switch {
	case err != nil && ctx.Err() != nil:
		// Interrupted: the step stays Running so resume re-enters it and
		// its checkpoints decide what is left to do.
		rec.Message = "interrupted: " + err.Error()
		saveCtx := context.WithoutCancel(ctx)
		saveErr := run.save(saveCtx)
		jerr := run.svc.journal(saveCtx, StepInterrupted{Release: run.r.ID, Step: k.String(), Error: err.Error()})
		return errors.Join(&StepError{Step: k, Err: err}, saveErr, journalFailed(jerr), run.flushEffort(saveCtx))
	case err != nil:
		rec.Status = Failed
		rec.Message = err.Error()
		rec.Findings = res.Findings
		// A failed step keeps what it established about the failure (a
		// watch that did not converge says what it saw).
		rec.Evidence = append(rec.Evidence, res.Evidence...)
		run.r.Status = ReleaseFailed
	default:
		rec.Status = res.Status
		rec.Message = res.Message
		rec.Findings = res.Findings
		rec.Evidence = append(rec.Evidence, res.Evidence...)
		if res.Status == Blocked {
			run.r.Status = ReleaseBlocked
			err = res.Err
			if err == nil {
				err = fmt.Errorf("%w: %s", ErrBlocked, res.Message)
			}
		}
	}
	if serr := run.save(ctx); serr != nil {
		return serr
	}
	if jerr := run.svc.journal(ctx, StepFinished{Release: run.r.ID, Step: k.String(), Status: rec.Status.String(), Message: rec.Message,
		Evidence: res.Evidence, Findings: res.Findings}); jerr != nil {
		return jerr
	}
	if ferr := run.flushEffort(ctx); ferr != nil {
		return ferr
	}
	run.sink(Event{Time: rec.EndedAt, Kind: EventStepFinished, ReleaseID: run.r.ID, Step: k, Status: rec.Status, Message: rec.Message, Findings: rec.Findings, Release: run.r.Clone()})
	if err != nil {
		return &StepError{Step: k, Err: err}
	}
	return nil
}

func (run *releaseRun) runStep(ctx context.Context, k StepKind) (StepResult, error) {
	switch k {
	case StepOwnership:
		return run.ownership(ctx)
	case StepPlanReview:
		return run.planReview(ctx)
	case StepApply:
		return run.apply(ctx)
	case StepPromotion:
		return run.promote(ctx)
	case StepConvergence:
		return run.converge(ctx)
	}
	return StepResult{}, fmt.Errorf("unknown step %s", k)
}
