package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/ownership"
)

func (a *app) ownershipCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ownership",
		Short: "Who owns each resource and desired-state field: Terraform, Argo CD or a named third",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{errors.New("ownership wants a subcommand: relcap ownership check [--env ENV]")}
		},
	}
	cmd.AddCommand(a.ownershipCheckCommand())
	return cmd
}

func (a *app) ownershipCheckCommand() *cobra.Command {
	var env string
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
			return a.ownershipCheck(cmd.Context(), env)
		},
	}
	cmd.Flags().StringVar(&env, "env", "", "environment to check (default: every environment in relcap.yaml)")
	return cmd
}

// ownershipCheck runs the check for env, or every environment.
func (a *app) ownershipCheck(ctx context.Context, env string) error {
	p, err := a.loadProject()
	var cerr *config.Errors
	if errors.As(err, &cerr) {
		// A malformed ownership map (or relcap.yaml) is reported the way
		// relcap validate does: every problem as file:line:col.
		for _, pr := range cerr.Problems {
			fmt.Fprintln(a.io.Err, pr.String())
		}
		fmt.Fprintf(a.io.Err, "%d problem(s): fix them and run relcap ownership check again\n", len(cerr.Problems))
		return errSilent{exitUsage}
	}
	if err != nil {
		return err
	}
	if r, err := filepath.Rel(p.Dir, p.Ownership.File); err == nil && p.Dir != "" && !strings.HasPrefix(r, "..") {
		// Findings name rules as file:line; relative to the release
		// repository, they read as the captain wrote them and keep their
		// ledger identity when the repository is checked out elsewhere.
		p.Ownership.File = filepath.ToSlash(r)
	}
	envs := p.Environments
	if env != "" {
		e, err := p.Env(env)
		if err != nil {
			return err
		}
		envs = []workflow.Environment{e}
	}
	tf, err := a.terraformAdapter(p)
	if err != nil {
		return err
	}
	svc, _, err := a.serviceWith(ctx, "ownership check", "", workflow.Deps{
		Ownership: a.ownershipSources(p, tf),
	})
	if err != nil {
		return err
	}
	var reports []ownership.Report
	for _, e := range envs {
		rep, err := svc.CheckOwnershipEnv(ctx, e.Name)
		if err != nil {
			return err
		}
		reports = append(reports, rep)
	}

	blockers := 0
	var blocked []string
	for _, r := range reports {
		if n := r.Blockers(); n > 0 {
			blockers += n
			blocked = append(blocked, r.Env)
		}
	}
	if a.flags.json {
		if err := a.printJSON(ownershipDocument(reports, blockers)); err != nil {
			return err
		}
	} else {
		for i, r := range reports {
			if i > 0 {
				fmt.Fprintln(a.io.Out)
			}
			printOwnership(a.io.Out, r)
		}
	}
	if blockers > 0 {
		return fmt.Errorf("%w: %d ownership problem(s) in %s must be resolved first", workflow.ErrOwnershipConflict, blockers, strings.Join(blocked, ", "))
	}
	return nil
}

// envRow and envFinding tag the matrix rows and findings of several
// environments in one JSON document.
type envRow struct {
	Env string `json:"env"`
	ownership.MatrixRow
}

type envFinding struct {
	Env string `json:"env"`
	finding.Finding
}

// ownershipDocument is the --json output: {matrix, findings} over every
// environment checked, each entry naming its environment.
func ownershipDocument(reports []ownership.Report, blockers int) map[string]any {
	matrix, findings := []envRow{}, []envFinding{}
	var envs []map[string]any
	for _, r := range reports {
		for _, row := range r.Matrix {
			matrix = append(matrix, envRow{r.Env, row})
		}
		for _, f := range r.Findings {
			findings = append(findings, envFinding{r.Env, f})
		}
		envs = append(envs, map[string]any{"env": r.Env, "objects": r.Objects, "findings": len(r.Findings), "blockers": r.Blockers()})
	}
	return map[string]any{"environments": envs, "matrix": matrix, "findings": findings, "blockers": blockers}
}

// printOwnership prints one environment's matrix as a table, then its
// findings, most serious first.
func printOwnership(w io.Writer, r ownership.Report) {
	fmt.Fprintf(w, "%s: %d managed object(s), %d resource(s)\n\n", r.Env, r.Objects, len(r.Matrix))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tRULE\tOWNER\tFIELD OWNERS\tWRITTEN BY")
	for _, row := range r.Matrix {
		rule, owner := row.Rule, string(row.Owner)
		if rule == "" {
			rule, owner = "-", "(none)"
		}
		fo := "-"
		if len(row.FieldOwners) > 0 {
			var parts []string
			for _, f := range slices.Sorted(maps.Keys(row.FieldOwners)) {
				parts = append(parts, f+"="+string(row.FieldOwners[f]))
			}
			fo = strings.Join(parts, ", ")
		}
		var writers []string
		for _, wr := range row.Writers {
			s := wr.Via
			if len(wr.Fields) > 0 {
				s += fmt.Sprintf(" (%d field(s)", len(wr.Fields))
				if len(wr.IgnoredFields) > 0 {
					s += fmt.Sprintf(", %d ignored", len(wr.IgnoredFields))
				}
				s += ")"
			}
			writers = append(writers, s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", row.Subject, rule, owner, fo, strings.Join(writers, "; "))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	if len(r.Findings) == 0 {
		fmt.Fprintf(w, "%s: every managed object and field has one owner\n", r.Env)
		return
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "%s %s %s\n", strings.ToUpper(f.Severity.String()), f.Code, f.Subject)
		fmt.Fprintf(w, "  %s\n", f.Message)
		if len(f.Facts) > 0 {
			fmt.Fprintf(w, "  evidence: %s\n", f.Facts)
		}
		if f.NextAction != "" {
			fmt.Fprintf(w, "  next: %s\n", f.NextAction)
		}
	}
	var warnings, notes int
	for _, f := range r.Findings {
		switch f.Severity {
		case finding.Warning:
			warnings++
		case finding.Info:
			notes++
		}
	}
	fmt.Fprintf(w, "\n%s: %d blocker(s), %d warning(s)", r.Env, r.Blockers(), warnings)
	if notes > 0 {
		fmt.Fprintf(w, ", %d note(s)", notes)
	}
	fmt.Fprintln(w)
}
