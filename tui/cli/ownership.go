package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/owners"
	"github.com/relcap/relcap/workflow/ownership"
)

func newCmdOwnership(a Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ownership",
		Short: "Who owns each resource and desired-state field: Terraform, Argo CD or a named third",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return UsageError{errors.New("ownership wants a subcommand: relcap ownership check [--env ENV], or relcap ownership infer")}
		},
	}
	cmd.AddCommand(newCmdOwnershipCheck(a, nil), newCmdOwnershipInfer(a, nil))
	return cmd
}

// ownershipCheckOptions are relcap ownership check's flags.
type ownershipCheckOptions struct {
	f   Factory
	Env string
}

func newCmdOwnershipCheck(f Factory, runF func(context.Context, *ownershipCheckOptions) error) *cobra.Command {
	opts := &ownershipCheckOptions{f: f}
	cmd := &cobra.Command{
		Use:   "check [--env ENV]",
		Short: "Cross-check Terraform state and Argo CD applications against the ownership map",
		Long: `check reads what Terraform manages (terraform show -json of each environment's
state) and what each environment's Argo CD application manages (its managed
resources' desired manifests, sync policy, ignoreDifferences and sync
history), and checks them against the ownership map named in relcap.yaml.

It prints the ownership matrix (resource × owner × fields) and the findings,
conflicts first, each with the next safe action:
  conflict             one object or field written by two tools        (blocks)
  wrong-owner          written by a tool the map does not name for it  (blocks)
  unowned              managed but matched by no rule                  (blocks)
  third-owner-ignored  a field given to e.g. an HPA that Argo CD reverts
  drift-loop           repeated self-heal syncs of one revision
  handoff-pending      a declared hand-off still in Terraform state
  handoff-undeclared   a bootstrap resource owned by both, no hand-off
  stale-rule           a rule that matches nothing
Findings are recorded in the ledger (scope ownership/<env>) with the time
each was first seen. It exits 3 when anything blocks.`,
		Example: `  relcap ownership check
  relcap ownership check --env staging --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOr(runF, runOwnershipCheck)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Env, "env", "", "environment to check (default: every environment in relcap.yaml)")
	return cmd
}

// loadOwnershipProject loads the project for an ownership command. A
// malformed ownership map (or relcap.yaml) is reported the way relcap
// validate does: every problem as file:line:col.
func loadOwnershipProject(a Factory, command string) (*workflow.Project, error) {
	p, err := a.LoadProject()
	var cerr *config.Errors
	if errors.As(err, &cerr) {
		plain.PrintProblems(a.IO().Err, cerr.Problems, command)
		return nil, SilentError{ExitUsage}
	}
	return p, err
}

// runOwnershipCheck runs the check for one environment, or every one.
func runOwnershipCheck(ctx context.Context, opts *ownershipCheckOptions) error {
	a, env := opts.f, opts.Env
	p, err := loadOwnershipProject(a, "relcap ownership check")
	if err != nil {
		return err
	}
	envs := p.Environments
	if env != "" {
		e, err := p.Env(env)
		if err != nil {
			return err
		}
		envs = []workflow.Environment{e}
	}
	svc, _, err := a.Service(ctx, ServiceRequest{Command: "ownership check", Needs: NeedOwnership})
	if err != nil {
		return err
	}
	var reports []ownership.Report
	for _, e := range envs {
		rep, err := owners.Check(ctx, svc, e.Name)
		if err != nil {
			return err
		}
		reports = append(reports, rep)
	}

	if a.Flags().JSON {
		if err := printJSON(a, plain.OwnershipDocument(reports)); err != nil {
			return err
		}
	} else {
		plain.PrintOwnerships(a.IO().Out, reports)
	}
	return owners.Blocked(reports)
}
