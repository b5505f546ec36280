package main

import (
	"context"
	"errors"
	"fmt"
	"os"

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
	return &cobra.Command{
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
	}
}

// runValidate loads the configuration, the ownership map and the people
// file, and reports every problem.
func runValidate(_ context.Context, opts *validateOptions) error {
	a := opts.f
	p, err := a.loadProject()
	var cerr *config.Errors
	if errors.As(err, &cerr) {
		if a.flags.json {
			_ = a.printJSON(map[string]any{"valid": false, "problems": cerr.Problems})
		} else {
			plain.PrintProblems(a.io.Err, cerr.Problems, "relcap validate")
		}
		return errSilent{exitUsage}
	}
	if err != nil {
		return err
	}
	people, problems := peopleFileProblems(p.People)
	if len(problems) > 0 {
		if a.flags.json {
			_ = a.printJSON(map[string]any{"valid": false, "problems": problems})
		} else {
			plain.PrintProblems(a.io.Err, problems, "relcap validate")
		}
		return errSilent{exitUsage}
	}
	if a.flags.json {
		return a.printJSON(plain.ValidDocument(p, len(people)))
	}
	plain.PrintValid(a.io.Out, p, len(people))
	return nil
}

// peopleFileProblems reads the people file at path, when the project names
// one, with the parser that verifies approvals, and returns its principals
// or every problem it has as file:line: message.
func peopleFileProblems(path string) (principals []string, problems []string) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: cannot read the people file: %v", plain.Rel(path), err)}
	}
	for _, err := range signing.CheckAllowedSigners(plain.Rel(path), data) {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return nil, problems
	}
	people, err := signing.ParseAllowedSigners(plain.Rel(path), data)
	if err != nil {
		return nil, []string{err.Error()}
	}
	return people.Principals(), nil
}
