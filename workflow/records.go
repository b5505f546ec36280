package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/relcap/relcap/workflow/effort"
)

// Records answers questions about what the ledger holds, changing nothing
// and journaling nothing: the queries commands ask before (or instead of)
// acting, and the screens' reads. It needs the project, the ledger and the
// clock. A Service embeds one. Journal verification is workflow/audit's.
type Records struct {
	project  *Project
	ledger   Ledger
	clock    Clock
	verifier SignatureVerifier
}

// NewRecords checks the ports a query needs: Project, Ledger and Clock.
func NewRecords(d Deps) (*Records, error) {
	switch {
	case d.Project == nil:
		return nil, errors.New("workflow: no project configuration")
	case d.Ledger == nil:
		return nil, errors.New("workflow: no ledger")
	case d.Clock == nil:
		return nil, errors.New("workflow: no clock")
	}
	return &Records{project: d.Project, ledger: d.Ledger, clock: d.Clock, verifier: d.Verifier}, nil
}

// Project is the loaded configuration.
func (q *Records) Project() *Project { return q.project }

// Release returns a stored release; UIs read releases through here.
func (q *Records) Release(ctx context.Context, id string) (*Release, error) {
	return q.ledger.LoadRelease(ctx, id)
}

// Plan returns a reviewed plan by fingerprint.
func (q *Records) Plan(ctx context.Context, fingerprint string) (PlanSummary, error) {
	return q.ledger.LoadPlan(ctx, fingerprint)
}

// PlanApprovals counts the approvals of a plan against its environment's
// rule, as apply will.
func (q *Records) PlanApprovals(ctx context.Context, p PlanSummary) (ApprovalCheck, error) {
	env, err := q.project.Env(p.Env)
	if err != nil {
		return ApprovalCheck{}, err
	}
	all, err := q.ledger.Approvals(ctx, ApprovePlan, p.Fingerprint)
	if err != nil {
		return ApprovalCheck{}, err
	}
	return countPlanApprovals(ctx, q.verifier, env, p, all)
}

// Effort returns the effort recorded against a release.
func (q *Records) Effort(ctx context.Context, releaseID string) ([]effort.Entry, error) {
	return q.ledger.Effort(ctx, releaseID)
}

// InProgress returns the newest release of the project that is not done
// (break-glass records aside), or ErrNotFound: what plain `relcap` opens the
// cockpit on.
func (q *Records) InProgress(ctx context.Context) (*Release, error) {
	releases, err := q.ledger.ListReleases(ctx, ReleaseFilter{App: q.project.App, Limit: 50})
	if err != nil {
		return nil, err
	}
	for _, r := range releases {
		if r.Kind != KindBreakGlass && !r.Status.Done() {
			return r, nil
		}
	}
	return nil, fmt.Errorf("no release of %s is in progress: %w", q.project.App, ErrNotFound)
}

// AwaitingConvergence returns the latest release of env whose promotion
// landed and that has not converged: what relcap converge --env watches.
func (q *Records) AwaitingConvergence(ctx context.Context, env string) (*Release, error) {
	if _, err := q.project.Env(env); err != nil {
		return nil, err
	}
	releases, err := q.ledger.ListReleases(ctx, ReleaseFilter{Env: env, Limit: 20})
	if err != nil {
		return nil, err
	}
	for _, r := range releases {
		if r.Checkpoints.Landed() && !r.Status.Done() {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w: no promotion into %s is waiting to converge: promote first, or pass --release ID or --revision SHA", ErrUsage, env)
}

// Sessions lists the sessions, oldest first.
func (q *Records) Sessions(ctx context.Context) ([]Session, error) {
	return q.ledger.Sessions(ctx)
}

// Changes signals each time the ledger changes, from this process or
// another, until ctx ends; nil when the ledger cannot tell (the cockpit
// then offers r to re-check by hand).
func (q *Records) Changes(ctx context.Context) <-chan struct{} {
	if f, ok := q.ledger.(ChangeFeed); ok {
		return f.Changes(ctx)
	}
	return nil
}

// AwaitedApprovals is the count of approvals the release's current step
// waits for: the plan's at plan review and apply, the release's at
// promotion. ok is false when the current step waits for no approval.
func (q *Records) AwaitedApprovals(ctx context.Context, r *Release) (check ApprovalCheck, ok bool, err error) {
	cur, unfinished := r.Current()
	if !unfinished {
		return ApprovalCheck{}, false, nil
	}
	env, err := q.project.Env(r.Env)
	if err != nil {
		return ApprovalCheck{}, false, err
	}
	switch cur {
	case StepPlanReview, StepApply:
		fp := r.Checkpoints.Fingerprint
		if fp == "" {
			return ApprovalCheck{}, false, nil
		}
		p, err := q.ledger.LoadPlan(ctx, fp)
		if err != nil {
			return ApprovalCheck{}, false, err
		}
		if !p.HasChanges() {
			return ApprovalCheck{}, false, nil
		}
		check, err := q.PlanApprovals(ctx, p)
		return check, err == nil, err
	case StepPromotion:
		rule := env.Approvals.Rule(ApprovePromotion)
		review := env.EnvRepo.Review
		if rule.Required == 0 || (review.PullRequests() && review.Approvals != ApprovalsFromBoth) {
			// Approvals given on the forge reach no ledger: the cockpit
			// polls the forge instead (ErrAwaitingForge).
			return ApprovalCheck{}, false, nil
		}
		all, err := q.ledger.Approvals(ctx, ApprovePromotion, r.ID)
		if err != nil {
			return ApprovalCheck{}, false, err
		}
		return rule.Count(PromotionTarget(r), r.Captain, all, verifyWith(ctx, q.verifier)), true, nil
	}
	return ApprovalCheck{}, false, nil
}
