package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func newCmdVersion(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print relcap's version, commit and build date",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			if a.flags.json {
				return a.printJSON(map[string]string{"version": version, "commit": commit, "date": date, "go": runtime.Version()})
			}
			_, err := fmt.Fprintf(a.io.Out, "relcap %s (commit %s, built %s, %s %s/%s)\n", version, commit, date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
