package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/adapters/signing"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/config"
)

// validateOptions are relcap validate's (none but the global ones).
type validateOptions struct {
	f *app
}

func newCmdValidate(f *app, runF func(context.Context, *validateOptions) error) *cobra.Command {
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
	p, err := a.loadProject()
	var cerr *config.Errors
	if errors.As(err, &cerr) {
		return printInvalid(a, cerr.Problems)
	}
	if err != nil {
		return err
	}
	people, problems := signing.CheckPeopleFile(p.People, plain.Rel(p.People))
	if len(problems) > 0 {
		return printInvalid(a, problems)
	}
	if a.flags.json {
		return a.printJSON(plain.ValidDocument(p, len(people)))
	}
	plain.PrintValid(a.io.Out, p, len(people))
	return nil
}

// printInvalid prints the problems found (JSON or lines on stderr) and
// ends validate with exit 2.
func printInvalid[P any](a *app, problems []P) error {
	if a.flags.json {
		_ = a.printJSON(map[string]any{"valid": false, "problems": problems})
	} else {
		plain.PrintProblems(a.io.Err, problems, "relcap validate")
	}
	return errSilent{exitUsage}
}
