package cli

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
)

// rollbackOptions are relcap rollback's flags.
type rollbackOptions struct {
	f       Factory
	Req     workflow.RollbackRequest
	Timeout time.Duration
}

func newCmdRollback(f Factory, runF func(context.Context, *rollbackOptions) error) *cobra.Command {
	opts := &rollbackOptions{f: f}
	cmd := &cobra.Command{
		Use:   "rollback --env ENV --to RELEASE",
		Short: "Restore a previous compatible release as a new environment-repo change, then converge",
		Long: `rollback pins again the digest a previous release ran, as a new reviewed
change in the environment repository, and watches it converge. It never uses
Argo CD's history rollback, which automated sync would undo. It is refused
(exit 3) when that release cannot run against the data schema the current
release left (see relcap release --schema).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Req.Env == "" || opts.Req.To == "" {
				return UsageError{errors.New("rollback wants --env ENV and --to RELEASE")}
			}
			return runOr(runF, runRollback)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Req.Env, "env", "", "environment to roll back")
	cmd.Flags().StringVar(&opts.Req.To, "to", "", "release to restore")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 10*time.Minute, "how long to wait for convergence")
	return cmd
}

// runRollback starts the rollback release and drives it.
func runRollback(ctx context.Context, opts *rollbackOptions) error {
	a := opts.f
	svc, session, err := flowService(a, ctx, "rollback", "", opts.Timeout)
	if err != nil {
		return err
	}
	measureRelease(a, svc)
	r, err := svc.StartRollback(ctx, opts.Req)
	if err != nil {
		return err
	}
	if !a.Flags().JSON {
		plain.PrintRollbackStarted(a.IO().Out, r, opts.Req.Env, opts.Req.To)
	}
	return driveRelease(a, ctx, svc, session, r.ID)
}
