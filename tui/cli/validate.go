package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/config"
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
anything is wrong.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOr(runF, runValidate)(cmd.Context(), opts)
		},
	})
}

// runValidate loads the configuration, the ownership map and the people
// file, and reports every problem.
func runValidate(_ context.Context, opts *validateOptions) error {
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
	if a.Flags().JSON {
		return printJSON(a, plain.ValidDocument(p, len(people)))
	}
	plain.PrintValid(a.IO().Out, p, len(people))
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
