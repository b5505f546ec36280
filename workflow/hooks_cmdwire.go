package workflow

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/relcap/relcap/workflow/journal"
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

// NoRecording says why a session has no screen recording on this machine:
// it has none (only cockpit sessions do), or its journal, read from the
// ledger (from), names recordings that stay on the machine that recorded
// them.
func NoRecording(id string, entries []journal.Entry, from JournalSource) error {
	var names []string
	for _, e := range entries {
		var rec ScreenRecorded
		if from == JournalFromLedger && e.Kind == KindScreenRecorded && json.Unmarshal(e.Data, &rec) == nil {
			names = append(names, rec.File)
		}
	}
	if len(names) > 0 {
		return fmt.Errorf("%w: session %s was recorded on another machine; its screen recording (%s) stays there: replay it on that machine", ErrUsage, id, strings.Join(names, ", "))
	}
	return fmt.Errorf("%w: session %s has no screen recording (only cockpit sessions do)", ErrUsage, id)
}
