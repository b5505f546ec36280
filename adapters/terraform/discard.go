package terraform

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/tfplan"
)

var _ workflow.PlanFileDiscarder = (*Adapter)(nil)

// DiscardPlanFile deletes the saved plan file of a plan that will never be
// applied (an abandoned release's) from this machine's private plan
// store, where plans are named by fingerprint (on another machine than its
// author's the ledger's PlanFile names the author's store, so it is not
// used).
func (a *Adapter) DiscardPlanFile(_ context.Context, plan tfplan.Summary) error {
	fp := plan.Fingerprint
	if fp == "" || strings.ContainsAny(fp, `/\.`) {
		return fmt.Errorf("plan fingerprint %q cannot name a plan file", fp)
	}
	if err := os.Remove(filepath.Join(a.planDir, fp+planSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete plan file: %w", err)
	}
	return nil
}
