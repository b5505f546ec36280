package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/oplock"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/tooloutput"
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
		return nil, fmt.Errorf("%w: no image: pass --image REF (a tag or digest reference)", fault.ErrUsage)
	}
	now := s.d.Clock.Now()
	r := s.d.Project.NewReleaseOf(NewReleaseID(s.d.Project.App, req.Env, now), req.Env, req.Image, s.d.Actor, now)
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
		return nil, s.journalFailure(ctx, err, journal.PlanFailed{Env: r.Env, Error: err.Error()})
	}
	if err := s.d.Ledger.SaveRelease(ctx, r); err != nil {
		return nil, fmt.Errorf("save release %s: %w", r.ID, err)
	}
	if err := s.journal(ctx, journal.ReleaseStarted{Release: r.ID, Kind: string(r.Kind), Env: r.Env, Image: r.Image, Captain: r.Captain, ForceUnverified: req.ForceUnverified}); err != nil {
		return nil, err
	}
	if err := s.linkSession(ctx, r.ID); err != nil {
		return nil, err
	}
	return r, nil
}

// Run drives the release from its first unfinished step until it converges,
// is blocked by policy (an error wrapping fault.ErrBlocked), fails, or ctx ends.
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
	unlock, err := s.lockOperation(ctx, oplock.Scope{Kind: oplock.Run, Key: r.ID}, r.ID, fmt.Sprintf("run release %s in %s", r.ID, r.Env))
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
		if err := r.MissingInput(k); err != nil {
			return r.Clone(), err // preflight.go: not a failure of the step
		}
		if err := run.step(ctx, k); err != nil {
			return r.Clone(), err
		}
	}
	// How it ends is its shape's (shape.go).
	msg, err := run.finish(ctx)
	if err != nil {
		return r.Clone(), err
	}
	run.sink(Event{Time: r.EndedAt, Kind: EventReleaseFinished, ReleaseID: r.ID, Status: Succeeded, Message: msg, Release: r.Clone()})
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
	Evidence []evidence.Evidence
	// Err explains a Blocked result (wraps fault.ErrBlocked).
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
	if jerr := run.svc.journal(ctx, journal.EffortLost{Release: run.r.ID, Error: err.Error()}); jerr != nil {
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
	if err := run.svc.journal(ctx, journal.StepStarted{Release: run.r.ID, Step: k.String(), Attempt: rec.Attempts, Resumed: resumed}); err != nil {
		return err
	}
	run.sink(Event{Time: rec.StartedAt, Kind: EventStepStarted, ReleaseID: run.r.ID, Step: k, Status: Running, Release: run.r.Clone()})

	out := tooloutput.NewLines(func(line string) {
		run.sink(Event{Time: d.Clock.Now(), Kind: EventStepOutput, ReleaseID: run.r.ID, Step: k, Status: Running, Output: line})
	}, d.Secrets)
	res, err := run.runStep(tooloutput.With(ctx, out), k)
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
		jerr := run.svc.journal(saveCtx, journal.StepInterrupted{Release: run.r.ID, Step: k.String(), Error: err.Error()})
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
				err = fmt.Errorf("%w: %s", fault.ErrBlocked, res.Message)
			}
		}
	}
	if serr := run.save(ctx); serr != nil {
		return serr
	}
	if jerr := run.svc.journal(ctx, journal.StepFinished{Release: run.r.ID, Step: k.String(), Status: rec.Status.String(), Message: rec.Message,
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
	if res, handled, err := run.byShape(ctx, k); handled {
		return res, err
	}
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

// The command-line path is one release too: relcap plan, apply, promote and
// converge each take the release up to their own step, joining the
// environment's open release (or the one named with --release), or
// starting one, so a scripted release leaves the same record, step history
// and journal links as one driven in the cockpit.

// OpenRequest names the release a command works on.
type OpenRequest struct {
	Env string
	// ReleaseID names the release (--release); empty joins the
	// environment's open release, or starts one.
	ReleaseID string
	// Image is the image the command promotes, when it knows it (relcap
	// promote); a release started by relcap plan learns it at promote.
	Image string
	// PromoteOnly starts, when no release is open, a promotion: the
	// problem and boundary stages are skipped (relcap promote alone).
	PromoteOnly bool
	// ForceUnverified is the journaled reason to promote a digest that
	// has not converged in the previous environment.
	ForceUnverified string
}

// Opened is the release a command works on and how it came to be.
type Opened struct {
	Release *Release
	// Started is true when the command started it, false when it joined
	// an open one.
	Started bool
}

// Describe says which release a command works on, for the captain.
func (o Opened) Describe() string {
	r := o.Release
	if o.Started {
		return fmt.Sprintf("started release %s in %s", r.ID, r.Env)
	}
	return fmt.Sprintf("joined release %s in %s (started by %s at %s, %s)", r.ID, r.Env, r.Captain, r.CreatedAt.UTC().Format(time.RFC3339), r.Status)
}

// open reports whether a release is one a command joins: not done, and
// not ended by a failure someone has to look at first. A rehearsal's
// drill is never joined: relcap rehearse --resume or --cleanup ends it.
func open(r *Release) bool {
	return (r.Kind == KindRelease || r.Kind == KindPromotion) && (r.Status == ReleaseInProgress || r.Status == ReleaseBlocked || r.AwaitsReplan()) &&
		r.Checkpoints.Rehearsal == ""
}

// OpenRelease returns the release req names, or the environment's open
// release, or a new one, and links this session to it. A release that has
// no image yet (started by relcap plan) takes req.Image; one promoting
// another image is not joined: the captain names it or finishes it first.
func (s *Service) OpenRelease(ctx context.Context, req OpenRequest) (Opened, error) {
	return s.openRelease(ctx, req, nil)
}

// openRelease is OpenRelease; admit, when set, may refuse a joined release
// before anything is recorded of this session's work on it (a refused
// command leaves no session: store.PrepareSession).
func (s *Service) openRelease(ctx context.Context, req OpenRequest, admit func(*Release) error) (Opened, error) {
	d := s.d
	env, err := d.Project.Env(req.Env)
	if err != nil {
		return Opened{}, err
	}
	var r *Release
	if req.ReleaseID != "" {
		r, err = d.Ledger.LoadRelease(ctx, req.ReleaseID)
		switch {
		case errors.Is(err, fault.ErrNotFound):
			return Opened{}, fmt.Errorf("%w: no release %s in the ledger", fault.ErrUsage, req.ReleaseID)
		case err != nil:
			return Opened{}, err
		case r.Env != env.Name:
			return Opened{}, fmt.Errorf("%w: release %s is a release to %s, not %s", fault.ErrUsage, r.ID, r.Env, env.Name)
		case r.Status.Done():
			return Opened{}, fmt.Errorf("%w: release %s is %s; start a new one (leave out --release)", fault.ErrUsage, r.ID, r.Status)
		}
	} else if r, err = s.openIn(ctx, env.Name); err != nil {
		return Opened{}, err
	}
	if r == nil {
		r, err = s.Start(ctx, StartRequest{Env: env.Name, Image: req.Image, PromoteOnly: req.PromoteOnly, ForceUnverified: req.ForceUnverified, allowNoImage: true})
		if err != nil {
			return Opened{}, err
		}
		return Opened{Release: r, Started: true}, nil
	}
	if admit != nil {
		if err := admit(r); err != nil {
			return Opened{}, err
		}
	}
	switch {
	case req.Image != "" && r.Image != "" && !sameImage(r, req.Image):
		if req.ReleaseID != "" {
			// Asked for this very release: the image is what is wrong.
			return Opened{}, fmt.Errorf("%w: release %s promotes %s, not %s: give --image %s (or its digest, %s), or relcap resume %s",
				fault.ErrUsage, r.ID, r.Image, req.Image, r.Image, imageAtDigest(r), r.ID)
		}
		return Opened{}, fmt.Errorf("%w: release %s is open in %s for %s, not %s: continue it with --release %s (or relcap resume %s), or finish it first",
			fault.ErrUsage, r.ID, env.Name, r.Image, req.Image, r.ID, r.ID)
	case req.Image != "" && r.Image == "":
		r.Image = req.Image
		if req.ForceUnverified != "" {
			r.Checkpoints.ForceUnverified = req.ForceUnverified
		}
		r.UpdatedAt = d.Clock.Now()
		if err := d.Ledger.SaveRelease(ctx, r); err != nil {
			return Opened{}, fmt.Errorf("save release %s: %w", r.ID, err)
		}
		if err := s.journal(ctx, journal.ReleaseImageSet{Release: r.ID, Image: r.Image, ForceUnverified: req.ForceUnverified}); err != nil {
			return Opened{}, err
		}
	}
	return Opened{Release: r}, s.linkSession(ctx, r.ID)
}

// sameImage reports whether image names what r promotes: the reference
// it was opened with, or the digest that reference resolved to, in the
// same repository (a captain who resumes by digest, as relcap prints it).
func sameImage(r *Release, image string) bool {
	if image == r.Image {
		return true
	}
	return !r.Checkpoints.Digest.IsZero() && image == imageAtDigest(r)
}

// imageAtDigest is r's image repository at the digest it resolved to, or
// its reference as given before it resolved.
func imageAtDigest(r *Release) string {
	if r.Checkpoints.Digest.IsZero() {
		return r.Image
	}
	repo := r.Image
	if at := strings.IndexByte(repo, '@'); at >= 0 {
		repo = repo[:at]
	}
	// A tag follows the last colon after the last slash (a registry's
	// port comes before a slash).
	if colon := strings.LastIndexByte(repo, ':'); colon > strings.LastIndexByte(repo, '/') {
		repo = repo[:colon]
	}
	return repo + "@" + r.Checkpoints.Digest.String()
}

// openIn is the newest open release of env, or nil.
func (s *Service) openIn(ctx context.Context, env string) (*Release, error) {
	releases, err := s.d.Ledger.ListReleases(ctx, ReleaseFilter{App: s.d.Project.App, Env: env, Limit: 50})
	if err != nil {
		return nil, err
	}
	for _, r := range releases {
		if open(r) {
			return r, nil
		}
	}
	return nil, nil
}

// ReleaseOfPlan is the open release whose current plan is fingerprint, or
// nil when none is (a plan made outside a release, or replaced since).
func (q *Records) ReleaseOfPlan(ctx context.Context, fingerprint string) (*Release, error) {
	releases, err := q.ledger.ListReleases(ctx, ReleaseFilter{App: q.project.App, Limit: 200})
	if err != nil {
		return nil, err
	}
	for _, r := range releases {
		if r.Checkpoints.Fingerprint == fingerprint {
			return r, nil
		}
	}
	return nil, nil
}

// PlanOutcome is where relcap plan left its release.
type PlanOutcome struct {
	Opened
	Plan tfplan.Summary
	// Waiting is why the release waits after plan review (approvals), or
	// "" when it may apply.
	Waiting string
	// Refused is why no approval makes the plan applicable (errored,
	// incomplete, failing checks, drift on another owner's fields);
	// PlanRelease then also returns fault.ErrPlanRefused.
	Refused string
}

// PlanRelease takes the release req opens up to plan review (relcap plan):
// the ownership check first if it has not run, then the saved plan and its
// review. Waiting for approvals is the outcome, not an error; any other
// stop (an ownership conflict) is.
func (s *Service) PlanRelease(ctx context.Context, req OpenRequest, sink EventSink) (PlanOutcome, error) {
	if s.d.Planner == nil {
		return PlanOutcome{}, missingPort("planner")
	}
	opened, err := s.openRelease(ctx, req, refuseReplan)
	if err != nil {
		return PlanOutcome{}, err
	}
	if err := s.replanIfReviewed(ctx, opened.Release); err != nil {
		return PlanOutcome{}, err
	}
	out := PlanOutcome{Opened: opened}
	r, err := s.RunUntil(ctx, opened.Release.ID, sink, StepPlanReview)
	if r != nil {
		out.Release = r
	}
	var step *StepError
	reviewed := errors.As(err, &step) && step.Step == StepPlanReview
	switch {
	case reviewed && errors.Is(err, fault.ErrApprovalRequired):
		out.Waiting, err = out.Release.Step(StepPlanReview).Message, nil
	case reviewed && errors.Is(err, fault.ErrPlanRefused):
		// The review is the point: it is returned with the refusal.
		out.Refused = out.Release.Step(StepPlanReview).Message
	case err != nil:
		return out, err
	}
	fp := out.Release.Checkpoints.Fingerprint
	if fp == "" {
		return out, errors.Join(err, fmt.Errorf("release %s has no plan after plan review", out.Release.ID))
	}
	plan, lerr := s.d.Ledger.LoadPlan(ctx, fp)
	out.Plan = plan
	return out, errors.Join(err, lerr)
}

// refuseReplan says why relcap plan cannot plan for r: it promotes only,
// or it is past its apply. Decided before this session records anything.
func refuseReplan(r *Release) error {
	switch {
	case r.Step(StepPlanReview).Status == Skipped:
		return fmt.Errorf("%w: release %s in %s promotes only (no infrastructure change); finish it (relcap promote, relcap converge) before planning the next one", fault.ErrUsage, r.ID, r.Env)
	case r.Step(StepApply).Status == Succeeded:
		return alreadyApplied(r)
	}
	return nil
}

// replanIfReviewed prepares a joined release for relcap plan. Plan review
// that already succeeded is reviewed again: its step reuses the saved plan
// while nothing moved and plans again when something did (a var file
// edited since), so plan never hands back a plan apply would refuse as
// stale. A release past apply, or one that promotes only, has no plan to
// make: the captain finishes it first.
func (s *Service) replanIfReviewed(ctx context.Context, r *Release) error {
	if err := refuseReplan(r); err != nil {
		return err
	}
	review := r.Step(StepPlanReview)
	if review.Status != Succeeded {
		return nil
	}
	review.Status = Pending
	r.UpdatedAt = s.d.Clock.Now()
	if err := s.d.Ledger.SaveRelease(ctx, r); err != nil {
		return fmt.Errorf("save release %s: %w", r.ID, err)
	}
	return nil
}
