package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/custody"
)

// validateOptions are relcap validate's (none but the global ones).
type validateOptions struct {
	f Factory
}

func newCmdValidate(f Factory, runF func(context.Context, *validateOptions) error) *cobra.Command {
	opts := &validateOptions{f: f}
	return readOnlyCommand(&cobra.Command{
		Use:   "validate",
		Short: "Check relcap.yaml, the ownership map and the people file; every problem as file:line",
		Long: `validate loads relcap.yaml (from -c, or the nearest one up from the working
directory), the ownership map and the people file it names, and reports every
problem it finds as file:line:col: field: message (file:line: message for the
people file, read by the parser that verifies approvals). It exits 2 when
anything is wrong. It also says, for each environment, what the state custody
check will find at plan time (where the state lives, and any blocker or
warning: docs/CUSTODY.md); those are policy, not problems of the files, and do
not change the exit code.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOr(runF, runValidate)(cmd.Context(), opts)
		},
	})
}

// runValidate loads the configuration, the ownership map and the people
// file, and reports every problem; then what the state custody check will
// find at plan time (a policy finding, not a problem of the files: it
// does not fail validate).
func runValidate(ctx context.Context, opts *validateOptions) error {
	a := opts.f
	p, err := a.LoadProject()
	var cerr *config.Errors
	if errors.As(err, &cerr) {
		return printInvalid(a, cerr.Problems)
	}
	if err != nil {
		return err
	}
	people, problems := a.CheckPeopleFile(p.People, plain.Rel(p.People))
	if len(problems) > 0 {
		return printInvalid(a, problems)
	}
	held := make([]custody.Result, 0, len(p.Environments))
	for _, e := range p.Environments {
		res, err := custody.Check(ctx, a.StateCustody(), p.CustodyEnvs(), e.Name)
		if err != nil {
			return err
		}
		held = append(held, res)
	}
	if a.Flags().JSON {
		doc := plain.ValidDocument(p, len(people))
		doc["custody"] = held
		return printJSON(a, doc)
	}
	plain.PrintValid(a.IO().Out, p, len(people))
	plain.PrintCustody(a.IO().Out, held)
	return nil
}

// printInvalid prints the problems found (JSON or lines on stderr) and
// ends validate with exit 2.
func printInvalid[P any](a Factory, problems []P) error {
	if a.Flags().JSON {
		_ = printJSON(a, map[string]any{"valid": false, "problems": problems})
	} else {
		plain.PrintProblems(a.IO().Err, problems, "relcap validate")
	}
	return SilentError{ExitUsage}
}
