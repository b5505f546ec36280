package cli

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/input"
)

// EnvLedger names the environment variable that says where the ledger
// is, as --ledger does.
const EnvLedger = "RELCAP_LEDGER"

// NewCmdRoot is relcap's command tree over f; args are the command line,
// for naming a misspelt command.
func NewCmdRoot(f Factory, args []string) *cobra.Command {
	flags := f.Flags()
	root := &cobra.Command{
		Use:   "relcap",
		Short: "The release captain's cockpit for Terraform + Argo CD",
		Long: `relcap takes a release from "who owns what" to "production has converged":
ownership check → plan review → digest promotion → convergence watch,
with every decision journaled and the staff time it cost measured.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return unknownCommand(cmd, args[0])
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if flags.Version {
				return printVersion(f)
			}
			return openCockpit(f, cmd)
		},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			// Before anything is opened or recorded.
			if err := checkTypedInput(cmd, args); err != nil {
				return err
			}
			if flags.NoColor || f.IO().Getenv("NO_COLOR") != "" {
				// One switch for every screen: the cockpit's colour
				// profile, the review and the rehearsal screens read the
				// environment, as they read NO_COLOR.
				flags.NoColor = true
				f.IO().Env = append(f.IO().Env, "NO_COLOR=1")
			}
			readOnly := isReadOnly(cmd)
			f.SetReadOnly(readOnly)
			return checkReferences(f, cmd.Context(), cmd, args, readOnly)
		},
	}
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return flagError(cmd, args, err) })
	root.Flags().BoolVar(&flags.Version, "version", false, "print relcap's version (as relcap version)")
	pf := root.PersistentFlags()
	pf.StringVarP(&flags.Config, "config", "c", "", "relcap.yaml to use (default: found in the current directory or a parent)")
	pf.StringVar(&flags.Ledger, "ledger", "", "the ledger: an SQLite file's path or a team's postgres:// URL (default $"+EnvLedger+", relcap.yaml's ledger:, else $XDG_DATA_HOME/relcap/ledger.db)")
	pf.StringVar(&flags.Actor, "actor", "", "who is acting (default $USER)")
	pf.BoolVar(&flags.JSON, "json", false, "machine output on stdout (one JSON document or NDJSON events)")
	pf.BoolVar(&flags.NoTUI, "no-tui", false, "plain line output instead of the cockpit")
	pf.BoolVar(&flags.NoColor, "no-color", false, "no colour (also NO_COLOR)")

	root.AddCommand(
		newCmdVersion(f),
		newCmdValidate(f, nil),
		newCmdInit(f, nil),
		newCmdOwnership(f),
		newCmdEffort(f),
		newCmdReport(f),
		newCmdJournal(f),
		newCmdPlan(f, nil),
		newCmdApprove(f, nil),
		newCmdReview(f, nil),
		newCmdApply(f, nil),
		newCmdUnlock(f, nil),
		newCmdPromote(f, nil),
		newCmdConverge(f, nil),
		newCmdRelease(f, nil),
		newCmdResume(f, nil),
		newCmdRollback(f, nil),
		newCmdRehearse(f, nil),
		newCmdBreakGlass(f),
		newCmdDemo(f, nil),
		newCmdLedger(f),
	)
	return root
}

func newCmdVersion(f Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print relcap's version, commit and build date",
		Args:  noArgs,
		RunE:  func(*cobra.Command, []string) error { return printVersion(f) },
	}
}

// printVersion is relcap version and relcap --version: the same output.
func printVersion(f Factory) error {
	b := f.Build()
	if f.Flags().JSON {
		return printJSON(f, map[string]string{"version": b.Version, "commit": b.Commit, "date": b.Date, "go": runtime.Version()})
	}
	_, err := fmt.Fprintf(f.IO().Out, "relcap %s (commit %s, built %s, %s %s/%s)\n", b.Version, b.Commit, b.Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}

func printJSON(f Factory, v any) error {
	return plain.WriteJSON(f.IO().Out, v)
}

// noArgs rejects positional arguments as a usage error (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return UsageError{fmt.Errorf("%s takes no arguments, got %s", cmd.CommandPath(), input.QuoteInput(strings.Join(args, " ")))}
	}
	return nil
}

// exactArgs wants n positional arguments, named in the message.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return UsageError{fmt.Errorf("%s wants %s", cmd.CommandPath(), what)}
		}
		return nil
	}
}

// runOr is runF when a test gave one (to see the options a command line
// makes), else the command's own run function.
func runOr[O any](runF, run func(context.Context, *O) error) func(context.Context, *O) error {
	if runF != nil {
		return runF
	}
	return run
}

// exactlyOne is whether exactly one of a command's mutually exclusive
// modes was asked for.
func exactlyOne(modes ...bool) bool {
	n := 0
	for _, set := range modes {
		if set {
			n++
		}
	}
	return n == 1
}
