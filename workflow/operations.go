package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
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
	if err := CheckSelfApproval(env.Approvals, plan.Author, d.Actor); err != nil {
		_, _ = d.Journal.Append(ctx, "approval.refused", map[string]string{"kind": ApprovePlan, "subject": fingerprint, "approver": d.Actor, "reason": err.Error()})
		return Approval{}, ApprovalCheck{}, err
	}
	return s.approve(ctx, Approval{Kind: ApprovePlan, Subject: fingerprint, Env: plan.Env, Approver: d.Actor, Comment: comment, At: d.Clock.Now()},
		plan.Author, env.Approvals.Plan, env.Approvals.DistinctFromAuthor)
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
	if err := CheckSelfApproval(env.Approvals, r.Captain, d.Actor); err != nil {
		_, _ = d.Journal.Append(ctx, "approval.refused", map[string]string{"kind": ApprovePromotion, "subject": releaseID, "approver": d.Actor, "reason": err.Error()})
		return Approval{}, ApprovalCheck{}, err
	}
	return s.approve(ctx, Approval{Kind: ApprovePromotion, Subject: releaseID, Env: r.Env, Approver: d.Actor, Comment: comment, At: d.Clock.Now()},
		r.Captain, env.Approvals.Promotion, env.Approvals.DistinctFromAuthor)
}

func (s *Service) approve(ctx context.Context, a Approval, author string, required int, distinct bool) (Approval, ApprovalCheck, error) {
	d := s.d
	if err := d.Ledger.RecordApproval(ctx, a); err != nil {
		return Approval{}, ApprovalCheck{}, fmt.Errorf("record approval: %w", err)
	}
	if _, err := d.Journal.Append(ctx, "approval.recorded", a); err != nil {
		return Approval{}, ApprovalCheck{}, err
	}
	all, err := d.Ledger.Approvals(ctx, a.Kind, a.Subject)
	if err != nil {
		return a, ApprovalCheck{}, fmt.Errorf("read approvals: %w", err)
	}
	return a, CountApprovals(a.Kind, a.Subject, author, required, distinct, all), nil
}

// OffToolRequest is coordination time spent outside relcap: meetings, chat.
type OffToolRequest struct {
	ReleaseID string
	Minutes   float64
	What      string
	Person    string // defaults to the actor
	At        time.Time
}

// LogEffort records off-tool coordination time against a release. The
// release may not be in the ledger yet (a planning meeting comes first);
// known reports whether it is.
func (s *Service) LogEffort(ctx context.Context, req OffToolRequest) (entry EffortEntry, known bool, err error) {
	d := s.d
	what := strings.TrimSpace(req.What)
	switch {
	case strings.TrimSpace(req.ReleaseID) == "":
		return EffortEntry{}, false, fmt.Errorf("%w: --release is required", ErrUsage)
	case req.Minutes <= 0:
		return EffortEntry{}, false, fmt.Errorf("%w: --minutes must be more than 0, got %g", ErrUsage, req.Minutes)
	case req.Minutes > 24*60:
		return EffortEntry{}, false, fmt.Errorf("%w: --minutes %g is more than a day; log each day separately", ErrUsage, req.Minutes)
	case what == "":
		return EffortEntry{}, false, fmt.Errorf("%w: --what is required: say what the time was spent on", ErrUsage)
	}
	person := req.Person
	if person == "" {
		person = d.Actor
	}
	at := req.At
	if at.IsZero() {
		at = d.Clock.Now()
	}
	entry = EffortEntry{ReleaseID: req.ReleaseID, Person: person, Role: RoleCaptain, Step: StepNone, Kind: EffortOffTool,
		Duration: time.Duration(req.Minutes * float64(time.Minute)), At: at, Note: what}
	_, err = d.Ledger.LoadRelease(ctx, req.ReleaseID)
	switch {
	case err == nil:
		known = true
	case errors.Is(err, ErrNotFound):
	default:
		return EffortEntry{}, false, err
	}
	if err := d.Ledger.RecordEffort(ctx, []EffortEntry{entry}); err != nil {
		return EffortEntry{}, known, fmt.Errorf("record effort: %w", err)
	}
	if _, err := d.Journal.Append(ctx, "effort.logged", entry); err != nil {
		return entry, known, err
	}
	return entry, known, nil
}
