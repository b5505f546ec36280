package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/tfplan"
)

// The boundary stage, first half: the exact saved plan, reviewed, with its
// approvals bound to its fingerprint. A release reuses its plan while the
// plan's inputs are unchanged and plans again when they moved.

func (run *releaseRun) planReview(ctx context.Context) (StepResult, error) {
	d := run.svc.d
	if d.Planner == nil {
		return StepResult{}, missingPort("planner")
	}
	var plan tfplan.Summary
	var note string
	if fp := run.r.Checkpoints.Fingerprint; fp != "" {
		p, err := d.Ledger.LoadPlan(ctx, fp)
		if err != nil {
			return StepResult{}, fmt.Errorf("load plan %s: %w", fp, err)
		}
		inputs, err := wait(run, StepPlanReview, func() (tfplan.Inputs, error) { return d.Planner.Inputs(ctx, run.env) })
		if err != nil {
			return StepResult{}, fmt.Errorf("read plan inputs: %w", err)
		}
		if reasons := tfplan.StaleReasons(p.Inputs, inputs); len(reasons) > 0 {
			note = fmt.Sprintf("plan %s was stale (%s); planned again. ", ShortHash(fp), reasons[0])
		} else {
			// Checked again: an acceptance in relcap.yaml or a backend
			// initialised anew since the plan counts now.
			held, err := run.svc.reviewCustody(ctx, run.env)
			if err != nil {
				return StepResult{}, err
			}
			plan = p
			plan.Findings = custody.Replace(plan.Findings, held.Findings)
		}
	}
	if plan.Fingerprint == "" {
		run.progress(StepPlanReview, "planning")
		// With a people file the author is who plans, and signs the
		// plan; the release's captain may be someone else (a release
		// joined or resumed by a teammate).
		author := run.r.Captain
		if d.Verifier != nil && d.Actor != "" {
			author = d.Actor
		}
		facts, err := wait(run, StepPlanReview, func() (tfplan.Facts, error) { return d.Planner.Plan(ctx, run.env, author) })
		if err != nil {
			return StepResult{}, fmt.Errorf("plan: %w", err)
		}
		// Again after the plan (the ownership step checked it before
		// Terraform first read the state), so what init recorded of the
		// backend Terraform resolved counts; kept with the plan, so every
		// review of it shows it.
		held, err := run.svc.reviewCustody(ctx, run.env)
		if err != nil {
			return StepResult{}, err
		}
		p, err := run.svc.keepPlan(ctx, run.env, facts, run.r.ID, held.Findings)
		if err != nil {
			if errors.Is(err, ErrAuthorUnverified) {
				return blocked(ErrAuthorUnverified, note+withoutSentinel(err, ErrAuthorUnverified), p.Findings), nil
			}
			return StepResult{}, err
		}
		// Shared before the checkpoint: a plan the team store could not
		// take is planned again on resume, not kept on this machine alone.
		if err := run.svc.sharePlan(ctx, run.env, p, func(msg string) { run.progress(StepPlanReview, msg) }); err != nil {
			return StepResult{}, err
		}
		if err := run.checkpoint(ctx, func(c *Checkpoints) { c.Fingerprint = p.Fingerprint }); err != nil {
			return StepResult{}, err
		}
		plan = p
	}
	res := StepResult{Findings: plan.Findings, Evidence: []evidence.Evidence{evidence.New(plan.Fingerprint, PlanReviewedOf(plan))}}
	if why, refused := plan.Refused(); refused {
		// No approval can make it applicable: say so before anyone is
		// asked to approve it.
		msg := fmt.Sprintf("%splan %s cannot be applied as reviewed: %s", note, ShortHash(plan.Fingerprint), why)
		b := blocked(fault.ErrPlanRefused, msg, plan.Findings)
		b.Evidence = res.Evidence
		return b, nil
	}
	if custody.Blocking(plan.Findings) {
		b := blocked(fault.ErrCustody, note+custody.Explain(run.env.Name, plan.Findings), plan.Findings)
		b.Evidence = res.Evidence
		return b, nil
	}
	if !plan.HasChanges() {
		res.Status = Succeeded
		res.Message = note + "no changes: infrastructure matches the configuration"
		return res, nil
	}
	approvals, err := d.Ledger.Approvals(ctx, approval.Plan, plan.Fingerprint)
	if err != nil {
		return StepResult{}, fmt.Errorf("read approvals: %w", err)
	}
	check, err := countPlanApprovals(ctx, d.Verifier, run.env, plan, approvals)
	for _, sentinel := range []error{ErrAuthorUnverified, ErrPeopleFileDiffers, fault.ErrBlocked} {
		if errors.Is(err, sentinel) {
			b := blocked(sentinel, note+withoutSentinel(err, sentinel), plan.Findings)
			b.Evidence = res.Evidence
			return b, nil
		}
	}
	if err != nil {
		return StepResult{}, err
	}
	for _, w := range check.Warnings {
		note += "warning: " + w + ". "
	}
	if !check.Satisfied() {
		msg := fmt.Sprintf("%splan %s needs %d more approval(s): relcap approve --plan %s%s", note, ShortHash(plan.Fingerprint), check.Missing(), plan.Fingerprint, check.NotCountedNote())
		b := blocked(fault.ErrApprovalRequired, msg, plan.Findings)
		b.Evidence = res.Evidence
		return b, nil
	}
	res.Status = Succeeded
	if len(check.Counted) == 0 {
		res.Message = fmt.Sprintf("%splan %s needs no approval in %s (approvals.plan: 0)", note, ShortHash(plan.Fingerprint), run.env.Name)
	} else {
		names := make([]string, 0, len(check.Counted))
		for _, a := range check.Counted {
			names = append(names, a.Approver)
		}
		res.Message = fmt.Sprintf("%splan %s approved by %s", note, ShortHash(plan.Fingerprint), strings.Join(names, ", "))
	}
	for _, a := range check.Counted {
		res.Evidence = append(res.Evidence, evidence.New(plan.Fingerprint, evidence.PlanApproved{Approver: a.Approver, At: a.At.UTC()}))
	}
	return res, nil
}

// reviewCustody checks where env's state lives and how it is kept apart
// from the other environments' (workflow/custody), and journals what it
// found. Without a custody reader nothing is checked.
func (s *Service) reviewCustody(ctx context.Context, env Environment) (custody.Result, error) {
	if s.d.Custody == nil {
		return custody.Result{}, nil
	}
	res, err := custody.Check(ctx, s.d.Custody, s.d.Project.CustodyEnvs(), env.Name)
	if err != nil {
		return res, fmt.Errorf("state custody of %s: %w", env.Name, err)
	}
	return res, s.journal(ctx, custody.Record(res))
}

// custodyGate checks env's state custody before Terraform first reads
// the state (the ownership step's), from the record of the last init or
// the backend block, so it is said even where init cannot run: a blocker
// stops the release there. ok is false with the Blocked result.
func (run *releaseRun) custodyGate(ctx context.Context) (StepResult, bool, error) {
	held, err := run.svc.reviewCustody(ctx, run.env)
	if err != nil {
		return StepResult{}, false, err
	}
	if custody.Blocking(held.Findings) {
		return blocked(fault.ErrCustody, custody.Explain(run.env.Name, held.Findings), held.Findings), false, nil
	}
	return StepResult{}, true, nil
}

// keepPlan reviews what the Planner read of a new plan (ReviewPlan with
// the project's classification, then its drift against the ownership
// map), adds the findings made beside it (the state custody check's),
// signs it, saves it in the ledger and journals it: every plan relcap
// makes, a release's (release is its ID) or a drill's (release is ""),
// is kept the same way.
func (s *Service) keepPlan(ctx context.Context, env Environment, facts tfplan.Facts, release string, beside []finding.Finding) (tfplan.Summary, error) {
	p := tfplan.ReviewPlan(facts, s.d.Project.PlanClassify())
	p.Release = release
	tfplan.ReviewAgainstMap(&p, s.d.Project.Ownership)
	p.Findings = append(p.Findings, beside...)
	p, err := s.signPlan(ctx, env, p)
	if err != nil {
		return p, s.journalFailure(ctx, err, journal.PlanFailed{Env: p.Env, Error: err.Error()})
	}
	if err := s.d.Ledger.SavePlan(ctx, p); err != nil {
		return p, fmt.Errorf("save plan: %w", err)
	}
	return p, s.journal(ctx, planRecord(p))
}

// planRecord is what the journal keeps of a plan: counts, flags and the
// fingerprint's inputs, never attribute values.
func planRecord(p tfplan.Summary) journal.PlanRecorded {
	flagged := map[string][]string{}
	for _, c := range p.Changes {
		for _, f := range c.Flags {
			flagged[f] = append(flagged[f], c.Address)
		}
	}
	refused, _ := p.Refused()
	return journal.PlanRecorded{Env: p.Env, Fingerprint: p.Fingerprint, PlanFileSHA: p.PlanHash, Inputs: p.Inputs, Counts: p.Counts,
		Flagged: flagged, Author: p.Author, AuthorKey: p.AuthorSignature.Key, Drifted: len(p.Drift), Refused: refused}
}

// PlanReviewedOf is the evidence detail of a reviewed plan.
func PlanReviewedOf(p tfplan.Summary) evidence.PlanReviewed {
	return evidence.PlanReviewed{Revision: p.Inputs.Revision, Create: p.Counts.Create, Update: p.Counts.Update, Delete: p.Counts.Delete,
		Replace: p.Counts.ReplaceDeleteFirst + p.Counts.ReplaceCreateFirst, Outputs: len(p.Outputs)}
}
