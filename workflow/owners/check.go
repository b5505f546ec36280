// Package owners is the ownership commands beside a release: relcap
// ownership check, which reads an environment's sources and checks them
// against the project's ownership map outside any release. The check
// itself is workflow/ownership; the sources are read through the core's
// ports (workflow.Service.ReadOwnership), the same ones the release's
// ownership step reads.
package owners

import (
	"context"
	"fmt"
	"strings"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/ownership"
)

// Check runs the ownership check of one environment outside a release: it
// reads every ownership source of core, checks the objects against the
// project's ownership map, records the findings in the ledger and
// journals the outcome. Argo CD is asked whenever the environment has one;
// when it cannot be read, the check goes on offline (the environment
// repository rendered) and says so in a finding, as the plan step does.
// Blockers are in the report, not an error: the caller decides the exit
// code.
func Check(ctx context.Context, core *workflow.Service, envName string) (ownership.Report, error) {
	d := core.Deps()
	env, err := d.Project.Env(envName)
	if err != nil {
		return ownership.Report{}, err
	}
	tctx, done := core.ToolOutput(ctx, workflow.StepOwnership)
	src, err := core.ReadOwnership(tctx, env)
	if err != nil {
		err = fmt.Errorf("environment %s: %w", env.Name, err)
		return ownership.Report{}, done(core.JournalFailure(ctx, err, journal.OwnershipCheckFailed{Env: env.Name, Error: err.Error()}))
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
	if err := d.Ledger.RecordFindings(ctx, workflow.OwnershipScope(env.Name), d.Clock.Now(), rep.Findings); err != nil {
		return rep, fmt.Errorf("record ownership findings of %s: %w", env.Name, err)
	}
	counts := map[string]int{}
	for _, f := range rep.Findings {
		counts[f.Code]++
	}
	return rep, core.Journal(ctx, journal.OwnershipCheckRecorded{Env: env.Name, Objects: len(objects), Rows: len(rep.Matrix), Findings: counts, Blockers: rep.Blockers()})
}

// Blocked is nil when no environment's ownership report blocks, else an
// fault.ErrOwnershipConflict error counting the problems and naming the
// environments.
func Blocked(reports []ownership.Report) error {
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
