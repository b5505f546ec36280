package workflowtest

import (
	"context"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/tfplan"
)

var _ workflow.PlanFileDiscarder = Terraform{}

// DiscardPlanFile records that plan's saved file was deleted unapplied.
func (t Terraform) DiscardPlanFile(ctx context.Context, plan tfplan.Summary) error {
	if err := t.W.gate(ctx); err != nil {
		return err
	}
	t.W.mu.Lock()
	defer t.W.mu.Unlock()
	t.W.Discarded = append(t.W.Discarded, plan.Fingerprint)
	return nil
}
