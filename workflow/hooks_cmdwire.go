package workflow

import (
	"fmt"
	"strings"

	"github.com/relcap/relcap/workflow/ownership"
)

// PlanDocumentRules are the rules a plan document made outside relcap
// (terraform show -json, as a CI job uploads it) is reviewed with: the
// project's classification and ownership map when there is a project, the
// default classification and no map otherwise.
func (p *Project) PlanDocumentRules() (Classify, ownership.Map) {
	if p == nil || len(p.Environments) == 0 {
		return DefaultClassify(), ownership.Map{}
	}
	return p.Classify, p.Ownership
}

// ReviewPlanDocument finishes the review of a plan document the Terraform
// adapter read: its drift against the ownership map, when there is one,
// and an ErrPlanRefused error when it could not be applied as reviewed.
func ReviewPlanDocument(review *PlanSummary, own ownership.Map) error {
	if own.File != "" {
		ReviewDrift(review, own)
	}
	if why, ok := review.Refused(); ok {
		return fmt.Errorf("%w: this plan cannot be applied as reviewed: %s", ErrPlanRefused, why)
	}
	return nil
}

// OwnershipBlocked is nil when no environment's ownership report blocks,
// else an ErrOwnershipConflict error counting the problems and naming the
// environments.
func OwnershipBlocked(reports []ownership.Report) error {
	blockers := 0
	var blocked []string
	for _, r := range reports {
		if n := r.Blockers(); n > 0 {
			blockers += n
			blocked = append(blocked, r.Env)
		}
	}
	if blockers == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d ownership problem(s) in %s must be resolved first", ErrOwnershipConflict, blockers, strings.Join(blocked, ", "))
}
