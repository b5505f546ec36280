package workflow

import (
	"context"
	"fmt"

	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/ownership"
)

// The problem stage: one owner per resource and desired-state field. The
// check itself is workflow/ownership; here it reads the sources, records
// the findings under "ownership/<env>" (so open conflicts keep their
// first-seen time across runs) and blocks the release on conflicts.

func (run *releaseRun) ownership(ctx context.Context) (StepResult, error) {
	d := run.svc.d
	if len(d.Ownership) == 0 {
		return StepResult{}, missingPort("ownership source")
	}
	if res, ok, err := run.custodyGate(ctx); !ok || err != nil {
		return res, err
	}
	src, err := run.svc.readOwnership(ctx, run.env, clusterWhenKubernetes, func(f func() ([]ownership.ManagedObject, error)) ([]ownership.ManagedObject, error) {
		return wait(run, StepOwnership, f)
	})
	if err != nil {
		return StepResult{}, err
	}
	objects := src.Objects()
	findings := ownership.CheckSources(d.Project.Ownership, src)
	if err := d.Ledger.RecordFindings(ctx, ownershipScope(run.env.Name), d.Clock.Now(), findings); err != nil {
		return StepResult{}, fmt.Errorf("record findings: %w", err)
	}
	established := []evidence.Evidence{evidence.New(run.env.Name, evidence.OwnershipChecked{Objects: len(objects), Findings: len(findings),
		Kubernetes: src.Kubernetes, LiveUnchecked: src.LiveError})}
	if n := finding.Blockers(findings); n > 0 {
		res := blocked(fault.ErrOwnershipConflict, fmt.Sprintf("%d ownership problem(s) must be resolved first", n), findings)
		res.Evidence = established
		return res, nil
	}
	msg := fmt.Sprintf("%d managed objects, one owner each", len(objects))
	switch {
	case !src.LiveRan && src.Kubernetes == "":
		msg = src.Summary() + fmt.Sprintf("; %d Terraform resources checked against the map", len(objects))
	case !src.LiveRan || len(src.Desired) > 0:
		msg += "; " + src.Summary()
	}
	if src.LiveError != "" && run.svc.d.Project.IsProduction(run.env) {
		msg += "; applying a plan that writes Kubernetes objects in production is refused until it runs"
	}
	return StepResult{Status: Succeeded, Message: msg, Findings: findings, Evidence: established}, nil
}

// ownershipScope is where an environment's ownership findings are kept.
func ownershipScope(env string) string { return "ownership/" + env }
