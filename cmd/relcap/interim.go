package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/cli"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/input"
)

// What the ownership and effort commands use until they move to tui/cli.

type errSilent = cli.SilentError

func (a *app) printJSON(v any) error { return plain.WriteJSON(a.io.Out, v) }

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return cli.UsageError{Err: fmt.Errorf("%s takes no arguments, got %s", cmd.CommandPath(), input.QuoteInput(strings.Join(args, " ")))}
	}
	return nil
}

func runOr[O any](runF, run func(context.Context, *O) error) func(context.Context, *O) error {
	if runF != nil {
		return runF
	}
	return run
}
