package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/workflow/config"
)

func (a *app) validateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check relcap.yaml and the ownership map; every problem as file:line:col",
		Long: `validate loads relcap.yaml (from -c, or the nearest one up from the working
directory) and the ownership map it names, and reports every problem it finds
as file:line:col: field: message. It exits 2 when anything is wrong.`,
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
			if a.flags.json {
				return a.printJSON(map[string]any{"valid": true, "file": p.File, "app": p.App,
					"environments": len(p.Environments), "ownership_rules": len(p.Ownership.Rules), "handoffs": len(p.Ownership.Handoffs)})
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
