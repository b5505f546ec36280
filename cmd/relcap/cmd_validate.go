package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/adapters/signing"
	"github.com/relcap/relcap/workflow/config"
)

func (a *app) validateCommand() *cobra.Command {
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
			p, err := a.loadProject()
			var cerr *config.Errors
			if errors.As(err, &cerr) {
				if a.flags.json {
					_ = a.printJSON(map[string]any{"valid": false, "problems": cerr.Problems})
				} else {
					for _, p := range cerr.Problems {
						fmt.Fprintln(a.io.Err, p.String())
					}
					fmt.Fprintf(a.io.Err, "%d problem(s): fix them and run relcap validate again\n", len(cerr.Problems))
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
					for _, msg := range problems {
						fmt.Fprintln(a.io.Err, msg)
					}
					fmt.Fprintf(a.io.Err, "%d problem(s): fix them and run relcap validate again\n", len(problems))
				}
				return errSilent{exitUsage}
			}
			if a.flags.json {
				out := map[string]any{"valid": true, "file": p.File, "app": p.App,
					"environments": len(p.Environments), "ownership_rules": len(p.Ownership.Rules), "handoffs": len(p.Ownership.Handoffs)}
				if p.People != "" {
					out["people"] = len(people)
				}
				return a.printJSON(out)
			}
			names := ""
			for i, e := range p.Environments {
				if i > 0 {
					names += " → "
				}
				names += e.Name
			}
			fmt.Fprintf(a.io.Out, "ok: %s: app %s, environments %s\n", rel(p.File), p.App, names)
			fmt.Fprintf(a.io.Out, "ok: %s: %d rule(s), %d hand-off(s)\n", rel(p.OwnershipFile), len(p.Ownership.Rules), len(p.Ownership.Handoffs))
			if p.People != "" {
				fmt.Fprintf(a.io.Out, "ok: %s: %d principal(s)\n", rel(p.People), len(people))
			}
			return nil
		},
	}
}

// rel shortens a path to the working directory when it is below it.
func rel(path string) string {
	if r, err := filepath.Rel(".", path); err == nil && !filepath.IsAbs(r) && len(r) < len(path) && r[0] != '.' {
		return r
	}
	return path
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
		return nil, []string{fmt.Sprintf("%s: cannot read the people file: %v", rel(path), err)}
	}
	for _, err := range signing.CheckAllowedSigners(rel(path), data) {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return nil, problems
	}
	people, err := signing.ParseAllowedSigners(rel(path), data)
	if err != nil {
		return nil, []string{err.Error()}
	}
	return people.Principals(), nil
}
