package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/offtool"
)

func newCmdEffort(a Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "effort",
		Short: "Staff effort of releases",
	}
	cmd.AddCommand(newCmdEffortLog(a, nil))
	return cmd
}

// effortLogOptions are relcap effort log's flags.
type effortLogOptions struct {
	f   Factory
	Req offtool.Request
}

func newCmdEffortLog(f Factory, runF func(context.Context, *effortLogOptions) error) *cobra.Command {
	opts := &effortLogOptions{f: f}
	cmd := &cobra.Command{
		Use:   "log --release ID --minutes N --what TEXT",
		Short: "Record off-tool coordination time (meetings, chat) against a release",
		Long: `effort log records time spent coordinating a release outside relcap:
meetings, chat threads, calls. It is staff effort, reported beside the active
effort relcap measures, never mixed with machine wait.`,
		Example: `  relcap effort log --release web-prod-20261130-1a2b3c --minutes 30 --what "go/no-go call"`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("release") || !cmd.Flags().Changed("minutes") || !cmd.Flags().Changed("what") {
				return UsageError{fmt.Errorf("effort log needs --release ID, --minutes N and --what TEXT")}
			}
			return runOr(runF, runEffortLog)(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Req.ReleaseID, "release", "", "release ID the time was spent on")
	fl.Float64Var(&opts.Req.Minutes, "minutes", 0, "minutes spent")
	fl.StringVar(&opts.Req.What, "what", "", "what the time was spent on")
	fl.StringVar(&opts.Req.Person, "person", "", "who spent it (default: the actor)")
	return cmd
}

// runEffortLog records the off-tool time against the release.
func runEffortLog(ctx context.Context, opts *effortLogOptions) error {
	a, req := opts.f, opts.Req
	svc, journal, err := a.Service(ctx, ServiceRequest{Command: "effort log", ReleaseID: req.ReleaseID})
	if err != nil {
		return err
	}
	entry, err := offtool.Log(ctx, svc.Deps(), req)
	if err != nil {
		return err
	}
	if a.Flags().JSON {
		// release_known stays in the document scripts read; an unknown
		// release is refused now, so it is always true.
		return printJSON(a, map[string]any{"entry": entry, "release_known": true, "session": journal.SessionID()})
	}
	plain.PrintEffortLogged(a.IO().Out, entry, journal.SessionID())
	return nil
}
