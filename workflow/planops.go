package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PlanEnv makes, reviews and records a saved plan for env outside a
// release run (relcap plan). The fingerprint it returns is what approvals
// and apply name.
func (s *Service) PlanEnv(ctx context.Context, envName string) (PlanSummary, error) {
	d := s.d
	env, err := d.Project.Env(envName)
	if err != nil {
		return PlanSummary{}, err
	}
	if d.Planner == nil {
		return PlanSummary{}, missingPort("planner")
	}
	clock := s.effortFor(ctx, "unreleased/"+env.Name)
	defer s.flush(ctx, clock)
	if _, err := d.Journal.Append(ctx, "plan.started", map[string]string{"env": env.Name, "dir": env.Terraform.Dir, "workspace": env.Terraform.Workspace}); err != nil {
		return PlanSummary{}, err
	}
	clock.BeginWait(StepPlanReview.String())
	plan, err := d.Planner.Plan(ctx, env, d.Actor)
	clock.EndWait(StepPlanReview.String())
	if err != nil {
		_, _ = d.Journal.Append(context.WithoutCancel(ctx), "plan.failed", map[string]string{"env": env.Name, "error": err.Error()})
		return PlanSummary{}, fmt.Errorf("plan %s: %w", env.Name, err)
	}
	if err := d.Ledger.SavePlan(ctx, plan); err != nil {
		return PlanSummary{}, fmt.Errorf("save plan: %w", err)
	}
	if _, err := d.Journal.Append(ctx, "plan.reviewed", planJournal(plan)); err != nil {
		return PlanSummary{}, err
	}
	return plan, nil
}

// planJournal is what the journal keeps of a plan: counts, flags and the
// fingerprint's inputs, never attribute values.
func planJournal(p PlanSummary) map[string]any {
	flagged := map[string][]string{}
	for _, c := range p.Changes {
		for _, f := range c.Flags {
			flagged[f] = append(flagged[f], c.Address)
		}
	}
	return map[string]any{"env": p.Env, "fingerprint": p.Fingerprint, "plan_file_sha256": p.PlanHash, "inputs": p.Inputs,
		"counts": p.Counts, "flagged": flagged, "author": p.Author}
}

// ApplyPlan applies exactly the plan with this fingerprint (relcap apply),
// only if it is approved per the environment's policy and not stale.
func (s *Service) ApplyPlan(ctx context.Context, fingerprint string) (ApplyResult, PlanSummary, error) {
	d := s.d
	plan, err := d.Ledger.LoadPlan(ctx, fingerprint)
	if errors.Is(err, ErrNotFound) {
		return ApplyResult{}, plan, fmt.Errorf("%w: no plan with fingerprint %s: run relcap plan --env ENV first", ErrUsage, fingerprint)
	}
	if err != nil {
		return ApplyResult{}, plan, err
	}
	if !plan.AppliedAt.IsZero() {
		return ApplyResult{}, plan, fmt.Errorf("%w: plan %s was already applied at %s; run relcap plan --env %s for a new one", ErrStalePlan, shortFP(fingerprint), plan.AppliedAt.UTC().Format(time.RFC3339), plan.Env)
	}
	env, err := d.Project.Env(plan.Env)
	if err != nil {
		return ApplyResult{}, plan, err
	}
	if d.Applier == nil {
		return ApplyResult{}, plan, missingPort("applier")
	}
	approvals, err := d.Ledger.Approvals(ctx, ApprovePlan, fingerprint)
	if err != nil {
		return ApplyResult{}, plan, fmt.Errorf("read approvals: %w", err)
	}
	check := CountApprovals(ApprovePlan, fingerprint, plan.Author, env.Approvals.Plan, env.Approvals.DistinctFromAuthor, approvals)
	if !check.Satisfied() {
		err := fmt.Errorf("%w: plan %s needs %d more approval(s) in %s (approvals.plan = %d): relcap approve --plan %s", ErrApprovalRequired, shortFP(fingerprint), check.Missing(), env.Name, env.Approvals.Plan, fingerprint)
		_, _ = d.Journal.Append(ctx, "apply.refused", map[string]string{"fingerprint": fingerprint, "reason": err.Error()})
		return ApplyResult{}, plan, err
	}
	clock := s.effortFor(ctx, "unreleased/"+env.Name)
	defer s.flush(ctx, clock)
	if _, err := d.Journal.Append(ctx, "apply.started", map[string]string{"env": env.Name, "fingerprint": fingerprint}); err != nil {
		return ApplyResult{}, plan, err
	}
	clock.BeginWait(StepApply.String())
	res, err := d.Applier.Apply(ctx, ApplyRequest{Env: env, Fingerprint: fingerprint, PlanFile: plan.PlanFile, PlanHash: plan.PlanHash, Inputs: plan.Inputs})
	clock.EndWait(StepApply.String())
	jctx := context.WithoutCancel(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		next := fmt.Sprintf("Terraform was interrupted and stopped cleanly; run relcap plan --env %s to see what is left, then approve and apply the new plan", env.Name)
		_, _ = d.Journal.Append(jctx, "apply.interrupted", map[string]string{"fingerprint": fingerprint, "error": err.Error(), "next_action": next})
		return ApplyResult{}, plan, fmt.Errorf("apply interrupted: %w; next: %s", err, next)
	case errors.Is(err, ErrStalePlan):
		_, _ = d.Journal.Append(jctx, "apply.refused", map[string]string{"fingerprint": fingerprint, "reason": err.Error()})
		return ApplyResult{}, plan, fmt.Errorf("%w; run relcap plan --env %s again and have the new fingerprint approved", err, env.Name)
	case err != nil:
		_, _ = d.Journal.Append(jctx, "apply.failed", map[string]string{"fingerprint": fingerprint, "error": err.Error()})
		return ApplyResult{}, plan, err
	}
	if err := d.Ledger.MarkPlanApplied(jctx, fingerprint, d.Clock.Now()); err != nil {
		return res, plan, fmt.Errorf("plan %s was applied but the ledger could not record it: %w", shortFP(fingerprint), err)
	}
	_, err = d.Journal.Append(jctx, "apply.done", map[string]any{"fingerprint": fingerprint, "state_serial": res.StateSerial, "already_applied": res.AlreadyApplied})
	return res, plan, err
}

// effortFor starts an effort clock for work outside a release run. It
// measures machine wait; staff effort comes from the cockpit and off-tool
// logs.
func (s *Service) effortFor(_ context.Context, scope string) *EffortClock {
	return NewEffortClock(s.d.Clock, s.d.Project.Effort.IdleThreshold, scope)
}

func (s *Service) flush(ctx context.Context, c *EffortClock) {
	if entries := c.Drain(); len(entries) > 0 {
		if err := s.d.Ledger.RecordEffort(context.WithoutCancel(ctx), entries); err != nil {
			_, _ = s.d.Journal.Append(context.WithoutCancel(ctx), "effort.lost", map[string]string{"error": err.Error()})
		}
	}
}
