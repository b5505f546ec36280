package workflow

import (
	"context"
	"fmt"
	"strings"

	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/journal"
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
	if src.LiveError != "" && run.svc.isProduction(run.env) {
		msg += "; applying a plan that writes Kubernetes objects in production is refused until it runs"
	}
	return StepResult{Status: Succeeded, Message: msg, Findings: findings, Evidence: established}, nil
}

// ownershipScope is where an environment's ownership findings are kept.
func ownershipScope(env string) string { return "ownership/" + env }

// CheckOwnershipEnv runs the ownership check of one environment outside a
// release (relcap ownership check): it reads every OwnershipSource, checks
// the objects against the project's ownership map, records the findings in
// the ledger and journals the outcome. Argo CD is asked whenever the
// environment has one; when it cannot be read, the check goes on offline
// (the environment repository rendered) and says so in a finding, as the
// plan step does. Blockers are in the report, not an error: the caller
// decides the exit code.
func (s *Service) CheckOwnershipEnv(ctx context.Context, envName string) (ownership.Report, error) {
	d := s.d
	env, err := d.Project.Env(envName)
	if err != nil {
		return ownership.Report{}, err
	}
	if len(d.Ownership) == 0 {
		return ownership.Report{}, missingPort("ownership source")
	}
	tctx, done := s.withToolOutput(ctx, "", StepOwnership)
	src, err := s.readOwnership(tctx, env, clusterAlways, func(f func() ([]ownership.ManagedObject, error)) ([]ownership.ManagedObject, error) { return f() })
	if err != nil {
		err = fmt.Errorf("environment %s: %w", env.Name, err)
		return ownership.Report{}, done(s.journalFailure(ctx, err, journal.OwnershipCheckFailed{Env: env.Name, Error: err.Error()}))
	}
	if err := done(nil); err != nil {
		return ownership.Report{}, err
	}
	objects := src.Objects()
	rep := ownership.Report{
		Env:      env.Name,
		Objects:  len(objects),
		Matrix:   ownership.Matrix(d.Project.Ownership, objects),
		Findings: ownership.CheckSources(d.Project.Ownership, src),
	}
	if !src.LiveRan {
		rep.Sources = src.Summary()
	}
	if err := d.Ledger.RecordFindings(ctx, ownershipScope(env.Name), d.Clock.Now(), rep.Findings); err != nil {
		return rep, fmt.Errorf("record ownership findings of %s: %w", env.Name, err)
	}
	counts := map[string]int{}
	for _, f := range rep.Findings {
		counts[f.Code]++
	}
	return rep, s.journal(ctx, journal.OwnershipCheckRecorded{Env: env.Name, Objects: len(objects), Rows: len(rep.Matrix), Findings: counts, Blockers: rep.Blockers()})
}

// OwnershipBlocked is nil when no environment's ownership report blocks,
// else an fault.ErrOwnershipConflict error counting the problems and naming the
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
	return fmt.Errorf("%w: %d ownership problem(s) in %s must be resolved first", fault.ErrOwnershipConflict, blockers, strings.Join(blocked, ", "))
}
