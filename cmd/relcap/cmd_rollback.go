package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/workflow"
)

func (a *app) rollbackCommand() *cobra.Command {
	var env, to string
	var timeout time.Duration
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
			ctx := cmd.Context()
			if env == "" || to == "" {
				return usageError{errors.New("rollback wants --env ENV and --to RELEASE")}
			}
			svc, _, err := a.flowService(ctx, "rollback", "", timeout)
			if err != nil {
				return err
			}
			a.measureRelease(svc)
			r, err := svc.StartRollback(ctx, workflow.RollbackRequest{Env: env, To: to})
			if err != nil {
				return err
			}
			if !a.flags.json {
				fmt.Fprintf(a.io.Out, "rollback %s: %s back to release %s (%s)\n", r.ID, env, to, r.Checkpoints.Digest)
			}
			return a.runRelease(ctx, svc, r.ID)
		},
	}
	cmd.Flags().StringVar(&env, "env", "", "environment to roll back")
	cmd.Flags().StringVar(&to, "to", "", "release to restore")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait for convergence")
	return cmd
}
