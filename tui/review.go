package tui

import (
	"fmt"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// ReviewTarget is what an approver's review screen shows.
type ReviewTarget int

// Review targets.
const (
	NoReview        ReviewTarget = iota
	ReviewPlan                   // relcap review --plan FP
	ReviewPromotion              // relcap review --release ID
)

// asReview turns the cockpit into an approver's review of t: the release
// is never run from here, the plan screen offers no apply, and the time
// spent is the approver's effort on the step under review.
func (m Model) asReview(t ReviewTarget) Model {
	m.review = t
	m.plan = m.plan.AsReview()
	m.active = scrPlan
	if t == ReviewPromotion {
		m.active = scrPromote
	}
	return m
}

// waitingFor is what a release stopped on, as the run that stopped it
// said, for a review, which runs nothing: the screens decide from it
// whether an approval is what the release waits for.
func waitingFor(r *workflow.Release) error {
	k, ok := r.Current()
	if !ok {
		return nil
	}
	st := r.Step(k)
	switch {
	case st.Status != workflow.Blocked:
		return nil
	case k == workflow.StepPromotion && r.Checkpoints.PullRequest != nil:
		return fmt.Errorf("%w: %s", fault.ErrAwaitingForge, st.Message)
	case k == workflow.StepPromotion && r.Checkpoints.EnvPinned != "" || k == workflow.StepPlanReview:
		return fmt.Errorf("%w: %s", fault.ErrApprovalRequired, st.Message)
	}
	return nil
}
