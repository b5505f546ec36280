package workflow

import (
	"context"
	"errors"
	"fmt"
)

// ApprovePlan records d.Actor's approval of exactly the plan with this
// fingerprint, refusing what the environment's policy would never count.
func (s *Service) ApprovePlan(ctx context.Context, fingerprint, comment string) (Approval, ApprovalCheck, error) {
	d := s.d
	plan, err := d.Ledger.LoadPlan(ctx, fingerprint)
	if errors.Is(err, ErrNotFound) {
		return Approval{}, ApprovalCheck{}, fmt.Errorf("%w: no plan with fingerprint %s: run relcap plan --env ENV and approve the fingerprint it prints", ErrUsage, fingerprint)
	}
	if err != nil {
		return Approval{}, ApprovalCheck{}, err
	}
	env, err := d.Project.Env(plan.Env)
	if err != nil {
		return Approval{}, ApprovalCheck{}, err
	}
	a, check, err := s.approve(ctx, env.Approvals.Rule(ApprovePlan), plan.Author,
		Approval{Kind: ApprovePlan, Subject: fingerprint, Env: plan.Env, Approver: d.Actor, Comment: comment, At: d.Clock.Now()})
	if err != nil {
		return a, check, err
	}
	// The plan is a release's: the approver's session worked on it.
	if r, err := s.ReleaseOfPlan(ctx, fingerprint); err != nil {
		return a, check, err
	} else if r != nil {
		return a, check, s.linkSession(ctx, r.ID)
	}
	return a, check, nil
}

// ApproveRelease records d.Actor's approval of a release's promotion.
func (s *Service) ApproveRelease(ctx context.Context, releaseID, comment string) (Approval, ApprovalCheck, error) {
	d := s.d
	r, err := d.Ledger.LoadRelease(ctx, releaseID)
	if err != nil {
		return Approval{}, ApprovalCheck{}, err
	}
	env, err := d.Project.Env(r.Env)
	if err != nil {
		return Approval{}, ApprovalCheck{}, err
	}
	a, check, err := s.approve(ctx, env.Approvals.Rule(ApprovePromotion), r.Captain,
		Approval{Kind: ApprovePromotion, Subject: releaseID, Env: r.Env, Approver: d.Actor, Comment: comment, At: d.Clock.Now()})
	if err != nil {
		return a, check, err
	}
	// The approver's session worked on this release: audits find it there.
	return a, check, s.linkSession(ctx, releaseID)
}

// approve records a, unless rule would never count it, and returns how the
// subject's approvals now count.
func (s *Service) approve(ctx context.Context, rule ApprovalRule, author string, a Approval) (Approval, ApprovalCheck, error) {
	if err := rule.Refuses(author, a.Approver); err != nil {
		return Approval{}, ApprovalCheck{}, s.journalFailure(ctx, err, ApprovalRefused{Kind: a.Kind, Subject: a.Subject, Approver: a.Approver, Reason: err.Error()})
	}
	if err := s.d.Ledger.RecordApproval(ctx, a); err != nil {
		return Approval{}, ApprovalCheck{}, fmt.Errorf("record approval: %w", err)
	}
	if err := s.journal(ctx, ApprovalRecorded{Approval: a}); err != nil {
		return Approval{}, ApprovalCheck{}, err
	}
	all, err := s.d.Ledger.Approvals(ctx, a.Kind, a.Subject)
	if err != nil {
		return a, ApprovalCheck{}, fmt.Errorf("read approvals: %w", err)
	}
	return a, rule.Count(a.Subject, author, all), nil
}

// MayApprove says whether the actor may approve kind for a change by
// author in env, and if not, why: what the screens ask before they offer
// an approve key, under the same rule the Service enforces.
func (s *Service) MayApprove(env string, kind ApprovalKind, author string) error {
	e, err := s.d.Project.Env(env)
	if err != nil {
		return err
	}
	return e.Approvals.Rule(kind).Refuses(author, s.d.Actor)
}
