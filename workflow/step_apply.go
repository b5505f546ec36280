package workflow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/oplock"
	"github.com/relcap/relcap/workflow/tfplan"
)

// The boundary stage, second half: apply exactly the approved plan, only
// while nothing it depends on moved, never bypassing state locking.

func (run *releaseRun) apply(ctx context.Context) (StepResult, error) {
	d := run.svc.d
	if !run.r.Checkpoints.Applied.IsZero() {
		// A run killed between its checkpoint and deleting the shared
		// copy deletes it now; deleting twice is harmless.
		if fp := run.r.Checkpoints.Fingerprint; fp != "" && !run.r.Checkpoints.Applied.NoChanges {
			if err := run.svc.forgetSharedPlan(ctx, fp); err != nil {
				return StepResult{}, err
			}
		}
		return StepResult{Status: Succeeded, Message: "applied earlier"}, nil
	}
	fp := run.r.Checkpoints.Fingerprint
	if fp == "" {
		return StepResult{}, &TerminalError{Err: errors.New("no reviewed plan to apply")}
	}
	plan, err := d.Ledger.LoadPlan(ctx, fp)
	if err != nil {
		return StepResult{}, fmt.Errorf("load plan %s: %w", fp, err)
	}
	if !plan.HasChanges() {
		// The release ships an image only (shape.go): apply is skipped.
		return StepResult{Status: Skipped, Message: "the plan has no changes: nothing to apply"},
			run.checkpoint(ctx, func(c *Checkpoints) { c.Applied = Applied{Done: true, NoChanges: true} })
	}
	if res, ok, err := run.liveOwnershipGate(ctx, plan); !ok || err != nil {
		return res, err
	}
	// The attempt is recorded before Terraform may start: a relcap killed
	// from here on resumes by taking that run's result, never by starting
	// the plan again. The applier checks the plan file and its inputs
	// itself, and first what the earlier attempts did (waiting for one
	// still running), so a resumed apply takes their result rather than
	// applying again.
	res, plan, ran, err := run.svc.applyThroughGate(ctx, applyGate{
		env: run.env, fingerprint: fp, holder: run.r.ID,
		lockWhat: fmt.Sprintf("apply plan %s in %s (release %s)", ShortHash(fp), run.env.Name, run.r.ID),
		earlier:  run.r.Checkpoints.ApplyRunsOf(fp),
		started: func(attempt ApplyRun) error {
			if err := run.checkpoint(ctx, func(c *Checkpoints) { c.ApplyRuns = append(c.ApplyRuns, attempt) }); err != nil {
				return err
			}
			run.progress(StepApply, "applying plan "+ShortHash(fp))
			return nil
		},
		await: func(_ context.Context, apply func(context.Context) (ApplyResult, error)) (ApplyResult, error) {
			return wait(run, StepApply, func() (ApplyResult, error) { return apply(ctx) })
		},
	})
	var refusal *applyRefusal
	if errors.As(err, &refusal) {
		// What the gate refused (who may apply, a refused plan, its
		// plan file) is judged as what Terraform refused would be.
		err, ran = refusal.err, true
	}
	if res, ok := lockBlocked(err); ok {
		return res, nil
	}
	if err != nil && !ran {
		return StepResult{}, err
	}
	switch {
	case errors.Is(err, fault.ErrApplyOutcomeUnknown):
		// Nothing applies this plan again; a new plan, reviewed and
		// approved, is the way on once the captain has looked.
		run.r.Step(StepPlanReview).Status = Pending
		run.r.Checkpoints.Fingerprint = ""
		why := strings.TrimPrefix(err.Error(), fault.ErrApplyOutcomeUnknown.Error()+": ")
		return blocked(fault.ErrApplyOutcomeUnknown, fmt.Sprintf("%s; relcap resume %s plans again", why, run.r.ID), nil), nil
	case errors.Is(err, fault.ErrStalePlan):
		// The plan step plans again when the release resumes; approvals of
		// the old fingerprint do not carry over.
		run.r.Step(StepPlanReview).Status = Pending
		run.r.Checkpoints.Fingerprint = ""
		msg := fmt.Sprintf("plan %s is stale: %v; run relcap plan --env %s again (or relcap resume %s) and have the new fingerprint approved", ShortHash(fp), err, run.env.Name, run.r.ID)
		return blocked(fault.ErrStalePlan, msg, nil), nil
	case errors.Is(err, fault.ErrPlanRefused):
		return blocked(fault.ErrPlanRefused, withoutSentinel(err, fault.ErrPlanRefused), plan.Findings), nil
	case errors.Is(err, fault.ErrBlocked):
		return StepResult{Status: Blocked, Message: err.Error(), Err: err}, nil
	case err != nil && ctx.Err() != nil:
		// Interrupted: the step stays Running, and resuming asks the
		// Applier whether the plan was applied meanwhile.
		return StepResult{}, fmt.Errorf("apply plan %s: %w", ShortHash(fp), err)
	case err != nil:
		// Terraform failed: it may have changed part of the
		// infrastructure, so retrying reviews the plan again, which keeps
		// this plan (and its approvals) only while its inputs, the state
		// among them, are unchanged.
		run.r.Step(StepPlanReview).Status = Pending
		next := run.svc.nextAfterFailedApply(ctx, run.env)
		return StepResult{}, &ApplyFailedError{Fingerprint: fp, Err: err, NextAction: next}
	}
	if err := run.checkpoint(ctx, func(c *Checkpoints) { c.Applied = Applied{Done: true, StateSerial: res.StateSerial} }); err != nil {
		return StepResult{}, err
	}
	if err := d.Ledger.MarkPlanApplied(ctx, fp, d.Clock.Now()); err != nil {
		return StepResult{}, fmt.Errorf("mark plan applied: %w", err)
	}
	if err := run.svc.forgetSharedPlan(ctx, fp); err != nil {
		return StepResult{}, err
	}
	msg := "applied plan " + ShortHash(fp)
	if res.AlreadyApplied {
		msg += " (completed by an earlier, interrupted run)"
	}
	return StepResult{Status: Succeeded, Message: msg, Evidence: []evidence.Evidence{evidence.New(fp, evidence.PlanApplied{StateSerial: res.StateSerial})}}, nil
}

// ApplyPlan applies exactly the plan with this fingerprint (relcap apply),
// only if it is approved per the environment's policy and not stale. When
// the plan is an open release's, the release runs up to and through its
// apply step (events to sink), so the apply is in its step history;
// otherwise the plan is applied on its own.
func (s *Service) ApplyPlan(ctx context.Context, fingerprint string, sink EventSink) (ApplyResult, tfplan.Summary, error) {
	d := s.d
	if r, err := s.records.ReleaseOfPlan(ctx, fingerprint); err != nil {
		return ApplyResult{}, tfplan.Summary{}, err
	} else if r != nil && open(r) {
		return s.applyRelease(ctx, r, fingerprint, sink)
	} else if r != nil && r.Status == ReleaseAbandoned {
		return ApplyResult{}, tfplan.Summary{}, abandonedPlan(r, fingerprint)
	}
	plan, err := d.Ledger.LoadPlan(ctx, fingerprint)
	if errors.Is(err, fault.ErrNotFound) {
		return ApplyResult{}, plan, fmt.Errorf("%w: no plan with fingerprint %s: run relcap plan --env ENV first", fault.ErrUsage, fingerprint)
	}
	if err != nil {
		return ApplyResult{}, plan, err
	}
	if err := appliedBefore(plan); err != nil {
		return ApplyResult{}, plan, err
	}
	env, err := d.Project.Env(plan.Env)
	if err != nil {
		return ApplyResult{}, plan, err
	}
	return s.ApplyPlanIn(ctx, env, fingerprint)
}

// applyGate is one apply through the gate: where, which plan, and how
// the caller records the attempt and waits for Terraform.
type applyGate struct {
	env         Environment
	fingerprint string
	// holder is the release that holds the apply lock ("" outside a
	// release); lockWhat says what holds it, for whoever is refused.
	holder, lockWhat string
	// approvals counts the plan's approvals here: outside a release (a
	// release's plan step counted them before its apply step).
	approvals bool
	// earlier are the attempts at the plan recorded before.
	earlier []ApplyRun
	// started records the attempt before Terraform may start.
	started func(ApplyRun) error
	// await runs apply, which calls the Applier with the context given.
	await func(ctx context.Context, apply func(context.Context) (ApplyResult, error)) (ApplyResult, error)
}

// applyRefusal is what the gate refused before Terraform could start: who
// may apply, a plan refused as reviewed, missing approvals, or its plan
// file. Callers journal or report it as a refusal. (A plan applied
// already is fault.ErrAlreadyApplied, returned as it is.)
type applyRefusal struct{ err error }

func (r *applyRefusal) Error() string { return r.err.Error() }
func (r *applyRefusal) Unwrap() error { return r.err }

// applyThroughGate is the one apply gate, for a release's apply step,
// relcap apply and the failed-apply drill: who may apply, the apply lock
// (one apply per Terraform state across captains, held until Terraform
// is done), the plan read again under it (another captain may have
// applied it meanwhile) and not applied already nor refused, approvals
// by env's plan rule when asked, the plan file, the attempt recorded,
// then the Applier (which checks the plan file and its inputs). ran
// reports whether the Applier was asked; err is then its error.
func (s *Service) applyThroughGate(ctx context.Context, g applyGate) (res ApplyResult, plan tfplan.Summary, ran bool, err error) {
	d := s.d
	fp := g.fingerprint
	if err := g.env.MayApply(d.Actor); err != nil {
		return res, plan, false, &applyRefusal{err}
	}
	unlock, err := s.lockOperation(ctx, oplock.Scope{Kind: oplock.Apply, Key: StateBoundary(d.Project, g.env)}, g.holder, g.lockWhat)
	if err != nil {
		return res, plan, false, err
	}
	defer unlock()
	if plan, err = d.Ledger.LoadPlan(ctx, fp); err != nil {
		return res, plan, false, err
	}
	if err := appliedBefore(plan); err != nil {
		return res, plan, false, err
	}
	if why, refused := plan.Refused(); refused {
		return res, plan, false, &applyRefusal{fmt.Errorf("%w: plan %s cannot be applied as reviewed: %s", fault.ErrPlanRefused, ShortHash(fp), why)}
	}
	if d.Applier == nil {
		return res, plan, false, missingPort("applier")
	}
	if g.approvals {
		check, err := s.planApprovals(ctx, g.env, plan)
		if err != nil {
			return res, plan, false, err
		}
		if !check.Satisfied() {
			return res, plan, false, &applyRefusal{fmt.Errorf("%w: plan %s needs %d more approval(s) in %s (approvals.plan = %d): relcap approve --plan %s%s", fault.ErrApprovalRequired, ShortHash(fp), check.Missing(), g.env.Name, g.env.Approvals.Plan, fp, check.NotCountedNote())}
		}
	}
	planFile, err := s.planFileToApply(ctx, g.env, plan)
	if err != nil {
		return res, plan, false, &applyRefusal{err}
	}
	attempt := s.newApplyRun(fp)
	if err := g.started(attempt); err != nil {
		return res, plan, false, err
	}
	res, err = g.await(ctx, func(ctx context.Context) (ApplyResult, error) {
		return d.Applier.Apply(ctx, ApplyRequest{Env: g.env, Fingerprint: fp, PlanFile: planFile, PlanHash: plan.PlanHash, Inputs: plan.Inputs, Run: attempt, Earlier: g.earlier})
	})
	return res, plan, true, err
}

// planApprovals counts the approvals of plan under env's plan rule.
func (s *Service) planApprovals(ctx context.Context, env Environment, plan tfplan.Summary) (approval.Check, error) {
	approvals, err := s.d.Ledger.Approvals(ctx, approval.Plan, plan.Fingerprint)
	if err != nil {
		return approval.Check{}, fmt.Errorf("read approvals: %w", err)
	}
	return countPlanApprovals(ctx, s.d.Verifier, env, plan, approvals)
}

// ApplyFailedError is a plan's apply that Terraform failed, with the next
// safe action relcap showed for it.
type ApplyFailedError struct {
	Fingerprint string
	Err         error
	NextAction  string
}

// Error puts the next safe action on the first line, which is what a
// status line or a notice shows; Terraform's error, often many lines,
// follows.
func (e *ApplyFailedError) Error() string {
	return fmt.Sprintf("apply of plan %s failed; next safe action: %s\n%v", ShortHash(e.Fingerprint), e.NextAction, e.Err)
}

func (e *ApplyFailedError) Unwrap() error { return e.Err }

// nextAfterFailedApply is the next safe action after a failed apply: a
// failed apply may have changed part of the infrastructure, so the saved
// plan no longer describes what applying does. It names the resources
// the apply left tainted when the Planner can read the state.
func (s *Service) nextAfterFailedApply(ctx context.Context, env Environment) string {
	rest := fmt.Sprintf("re-plan from the reviewed root (relcap plan --env %s), review what the plan destroys or replaces, then apply", env.Name)
	roots, ok := s.d.Planner.(StateReader)
	if !ok {
		return "the apply may have failed part-way: " + rest
	}
	resources, err := roots.StateResources(ctx, env)
	if err != nil {
		return "the apply may have failed part-way (the state could not be read: " + err.Error() + "): " + rest
	}
	var tainted []string
	for _, r := range resources {
		if r.Tainted {
			tainted = append(tainted, r.Address)
		}
	}
	switch len(tainted) {
	case 0:
		return "the apply failed; no resource is tainted: " + rest
	case 1:
		return "the apply failed part-way: " + tainted[0] + " is tainted; " + rest
	}
	return "the apply failed part-way: " + strings.Join(tainted, ", ") + " are tainted; " + rest
}

// applyRelease runs release r through its apply step for relcap apply.
func (s *Service) applyRelease(ctx context.Context, r *Release, fingerprint string, sink EventSink) (ApplyResult, tfplan.Summary, error) {
	plan, err := s.d.Ledger.LoadPlan(ctx, fingerprint)
	if err != nil {
		return ApplyResult{}, plan, err
	}
	if !plan.AppliedAt.IsZero() || r.Step(StepApply).Status.Done() {
		return ApplyResult{}, plan, fmt.Errorf("%w: plan %s was already applied (release %s); run relcap plan --env %s for a new one", fault.ErrAlreadyApplied, ShortHash(fingerprint), r.ID, r.Env)
	}
	if err := s.linkSession(ctx, r.ID); err != nil {
		return ApplyResult{}, plan, err
	}
	// Held before the run, so a captain refused here leaves the release
	// another captain is applying as it is; the apply step holds it then.
	env, err := s.d.Project.Env(r.Env)
	if err != nil {
		return ApplyResult{}, plan, err
	}
	unlock, err := s.lockOperation(ctx, oplock.Scope{Kind: oplock.Apply, Key: StateBoundary(s.d.Project, env)}, r.ID,
		fmt.Sprintf("apply plan %s in %s (release %s)", ShortHash(fingerprint), env.Name, r.ID))
	if err != nil {
		return ApplyResult{}, plan, err
	}
	defer unlock()
	final, err := s.RunUntil(ctx, r.ID, sink, StepApply)
	if err != nil {
		return ApplyResult{}, plan, err
	}
	if final.Checkpoints.Fingerprint != fingerprint {
		return ApplyResult{}, plan, fmt.Errorf("%w: release %s planned again (plan %s) before applying %s; review and approve the new plan",
			fault.ErrStalePlan, r.ID, ShortHash(final.Checkpoints.Fingerprint), ShortHash(fingerprint))
	}
	applied := final.Checkpoints.Applied
	return ApplyResult{StateSerial: applied.StateSerial}, plan, nil
}

// appliedBefore refuses a plan that was applied already: its fingerprint
// names a state that is gone.
func appliedBefore(plan tfplan.Summary) error {
	if plan.AppliedAt.IsZero() {
		return nil
	}
	return fmt.Errorf("%w: plan %s was already applied at %s; run relcap plan --env %s for a new one", fault.ErrAlreadyApplied, ShortHash(plan.Fingerprint), plan.AppliedAt.UTC().Format(time.RFC3339), plan.Env)
}

// newApplyRun names a new attempt at applying plan fp and, when the
// Applier can say, where its Terraform run will be kept.
func (s *Service) newApplyRun(fp string) ApplyRun {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	now := s.d.Clock.Now().UTC()
	id := now.Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	run := ApplyRun{Fingerprint: fp, ID: id}
	if p, ok := s.d.Applier.(ApplyRunPlacer); ok {
		run = p.PlaceApplyRun(fp, id)
	}
	run.StartedAt = now
	return run
}

// runRef is how the journal names an attempt's run.
func runRef(r ApplyRun) string {
	if r.Dir == "" {
		return r.ID
	}
	return r.Host + ":" + r.Dir
}

// ApplyPlanIn applies the plan with this fingerprint in env, outside a
// release: ApplyPlan's environment from the configuration, or the
// failed-apply drill's scratch copy of it. It passes the one apply gate
// (applyThroughGate) with the plan's approvals counted, journals the
// attempt before Terraform may start, and journals how it ended: a
// refusal, an interruption, a stale plan, a failure with the next safe
// action, or the apply.
func (s *Service) ApplyPlanIn(ctx context.Context, env Environment, fingerprint string) (ApplyResult, tfplan.Summary, error) {
	d := s.d
	plan, err := d.Ledger.LoadPlan(ctx, fingerprint)
	if err != nil {
		return ApplyResult{}, plan, fmt.Errorf("load plan %s: %w", ShortHash(fingerprint), err)
	}
	if plan.Env != env.Name {
		return ApplyResult{}, plan, fmt.Errorf("%w: plan %s is %s's, not %s's", fault.ErrUsage, ShortHash(fingerprint), plan.Env, env.Name)
	}
	res, gated, ran, err := s.applyThroughGate(ctx, applyGate{
		env: env, fingerprint: fingerprint, approvals: true,
		lockWhat: fmt.Sprintf("apply plan %s in %s", ShortHash(fingerprint), env.Name),
		// The Applier finds this machine's earlier runs of the plan itself.
		started: func(attempt ApplyRun) error {
			return s.journal(ctx, journal.ApplyStarted{Env: env.Name, Fingerprint: fingerprint, Run: runRef(attempt)})
		},
		await: func(ctx context.Context, apply func(context.Context) (ApplyResult, error)) (ApplyResult, error) {
			tctx, done := s.withToolOutput(ctx, "", StepApply)
			res, err := measureWait(tctx, s, "unreleased/"+env.Name, StepApply, func() (ApplyResult, error) { return apply(tctx) })
			if jerr := done(nil); jerr != nil {
				err = errors.Join(err, jerr)
			}
			return res, err
		},
	})
	if gated.Fingerprint != "" {
		plan = gated
	}
	var refusal *applyRefusal
	if errors.As(err, &refusal) {
		return ApplyResult{}, plan, s.journalFailure(ctx, refusal.err, journal.ApplyRefused{Fingerprint: fingerprint, Reason: refusal.err.Error()})
	}
	if !ran {
		return ApplyResult{}, plan, err
	}
	jctx := context.WithoutCancel(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		next := fmt.Sprintf("Terraform was interrupted and stopped cleanly; run relcap plan --env %s to see what is left, then approve and apply the new plan", env.Name)
		return ApplyResult{}, plan, s.journalFailure(jctx, fmt.Errorf("apply interrupted: %w; next: %s", err, next),
			journal.ApplyInterrupted{Fingerprint: fingerprint, Error: err.Error(), NextAction: next})
	case errors.Is(err, fault.ErrApplyOutcomeUnknown):
		return ApplyResult{}, plan, s.journalFailure(jctx, err, journal.ApplyRefused{Fingerprint: fingerprint, Reason: err.Error()})
	case errors.Is(err, fault.ErrStalePlan):
		return ApplyResult{}, plan, s.journalFailure(jctx, fmt.Errorf("%w; run relcap plan --env %s again and have the new fingerprint approved", err, env.Name),
			journal.ApplyRefused{Fingerprint: fingerprint, Reason: err.Error()})
	case err != nil:
		next := s.nextAfterFailedApply(jctx, env)
		return ApplyResult{}, plan, s.journalFailure(jctx, &ApplyFailedError{Fingerprint: fingerprint, Err: err, NextAction: next},
			journal.ApplyFailed{Fingerprint: fingerprint, Error: err.Error(), NextAction: next})
	}
	if err := d.Ledger.MarkPlanApplied(jctx, fingerprint, d.Clock.Now()); err != nil {
		return res, plan, fmt.Errorf("plan %s was applied but the ledger could not record it: %w", ShortHash(fingerprint), err)
	}
	forgot := s.forgetSharedPlan(jctx, fingerprint)
	return res, plan, errors.Join(s.journal(jctx, journal.ApplyDone{Fingerprint: fingerprint, StateSerial: res.StateSerial, AlreadyApplied: res.AlreadyApplied}), forgot)
}
