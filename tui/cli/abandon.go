package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
)

// abandonOptions are relcap release abandon's argument and flags.
type abandonOptions struct {
	f         Factory
	ReleaseID string
	Reason    string
}

func newCmdReleaseAbandon(f Factory, runF func(context.Context, *abandonOptions) error) *cobra.Command {
	opts := &abandonOptions{f: f}
	cmd := &cobra.Command{
		Use:   "abandon RELEASE --reason TEXT",
		Short: "End a release that will not ship (journaled; not a change failure)",
		Long: `abandon ends a release that has not ended and will not ship: its status
becomes abandoned, the reason and who gave it are journaled, and its saved
plan, if it was not applied, is deleted (here and in the team store) so it
can never be applied. Reports count an abandoned release neither as a
deployment nor as a change failure. A release that ended (converged,
succeeded, rolled back, abandoned) cannot be abandoned.`,
		Example: `  relcap release abandon web-staging-20261202-1a2b3c --reason "superseded by the 1.4.3 fix"`,
		Args:    exactArgs(1, "one release ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ReleaseID = args[0]
			if strings.TrimSpace(opts.Reason) == "" {
				return UsageError{errors.New("release abandon wants --reason TEXT: say why the release will not ship (it is journaled)")}
			}
			return runOr(runF, runReleaseAbandon)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why the release will not ship (required; journaled)")
	return cmd
}

// runReleaseAbandon checks the release may be abandoned before anything is
// recorded, then abandons it in a session of its own.
func runReleaseAbandon(ctx context.Context, opts *abandonOptions) error {
	a := opts.f
	q, err := a.Records(ctx)
	if err != nil {
		return err
	}
	if _, err := q.MayAbandon(ctx, opts.ReleaseID, opts.Reason); err != nil {
		return err
	}
	if _, err := a.LoadProject(); err != nil {
		return err
	}
	// The applier deletes this machine's plan file; the vault, where
	// plans are shared, the team store's copy.
	svc, _, err := a.Service(ctx, ServiceRequest{Command: "release abandon", ReleaseID: opts.ReleaseID, Needs: NeedPlans | NeedPlanVault})
	if err != nil {
		return err
	}
	out, err := svc.Abandon(ctx, opts.ReleaseID, opts.Reason)
	if out.Release == nil {
		return err
	}
	if a.Flags().JSON {
		return errors.Join(err, plain.WriteJSON(a.IO().Out, out))
	}
	plain.PrintAbandoned(a.IO().Out, out.Release, out.PlanDeleted)
	return err
}
