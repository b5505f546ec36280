package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
)

// promoteOptions are relcap promote's flags.
type promoteOptions struct {
	f                            Factory
	Env, Image, Force, ReleaseID string
}

func newCmdPromote(f Factory, runF func(context.Context, *promoteOptions) error) *cobra.Command {
	opts := &promoteOptions{f: f}
	cmd := &cobra.Command{
		Use:   "promote --env ENV --image REF [--release ID]",
		Short: "Promote one immutable digest into an environment and pin it in the environment repo",
		Long: `promote resolves REF (a tag or a digest) to one digest, once, and promotes
those exact bytes: only after the digest converged in the previous environment
(the first environment accepts any digest), copied from the previous
environment's repository with its signatures and attestations, verified in the
target, then pinned by digest on a relcap/<env>/<release> branch of the
environment repository and landed on the branch Argo CD follows once the
environment's promotion approvals are in. relcap converge --env ENV then
watches it converge. It joins the environment's open release (the one relcap
plan started, say) or the one named with --release, and says which; without
one it starts a promotion of its own.`,
		Example: `  relcap promote --env staging --image registry.example.com/ci/web:1.4.2
  relcap promote --env prod --image registry.example.com/ci/web@sha256:…`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Env == "" || opts.Image == "" {
				return UsageError{errors.New("promote wants --env ENV and --image REF")}
			}
			if cmd.Flags().Changed("force-unverified") && strings.TrimSpace(opts.Force) == "" {
				return UsageError{errors.New("--force-unverified wants the reason, which is journaled")}
			}
			return runOr(runF, runPromote)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Env, "env", "", "environment to promote into")
	cmd.Flags().StringVar(&opts.Image, "image", "", "image reference (tag or digest)")
	cmd.Flags().StringVar(&opts.ReleaseID, "release", "", "release to promote (default: the environment's open release, or a new promotion)")
	cmd.Flags().StringVar(&opts.Force, "force-unverified", "", "promote although the digest has not converged in the previous environment; the reason is journaled")
	return cmd
}

// runPromote joins or opens the environment's release and runs it up to
// the promotion.
func runPromote(ctx context.Context, opts *promoteOptions) error {
	a := opts.f
	svc, _, err := flowService(a, ctx, "promote", opts.ReleaseID, 0)
	if err != nil {
		return err
	}
	a.Measure(svc, workflow.StepPromotion.String(), effort.RoleCaptain)
	opened, err := svc.OpenRelease(ctx, workflow.OpenRequest{Env: opts.Env, ReleaseID: opts.ReleaseID, Image: opts.Image, PromoteOnly: true, ForceUnverified: strings.TrimSpace(opts.Force)})
	if err != nil {
		return err
	}
	r := opened.Release
	fmt.Fprintln(a.IO().Err, opened.Describe())
	printer := plain.New(a.IO().Err, false).WithToolOutput(a.IO().Err)
	if a.Flags().JSON {
		printer = plain.New(a.IO().Out, true)
	}
	final, err := svc.RunUntil(ctx, r.ID, printer.Event, workflow.StepPromotion)
	if final != nil && !a.Flags().JSON {
		plain.PrintPromotion(a.IO().Out, final)
	}
	return err
}
