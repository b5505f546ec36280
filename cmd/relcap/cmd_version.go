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
		RunE:  func(*cobra.Command, []string) error { return a.printVersion() },
	}
}

// printVersion is relcap version and relcap --version: the same output.
func (a *app) printVersion() error {
	b := currentBuild()
	if a.flags.json {
		return a.printJSON(map[string]string{"version": b.Version, "commit": b.Commit, "date": b.Date, "go": runtime.Version()})
	}
	_, err := fmt.Fprintf(a.io.Out, "relcap %s (commit %s, built %s, %s %s/%s)\n", b.Version, b.Commit, b.Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}
