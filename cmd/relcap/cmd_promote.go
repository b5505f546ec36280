package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/adapters/registry"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
)

// cacheHome is $XDG_CACHE_HOME/relcap.
func (a *app) cacheHome() (string, error) {
	return a.xdgHome("XDG_CACHE_HOME", ".cache")
}

// decisionAdapters wires the registry (credentials from the Docker config)
// and the environment repository (clones cached under $XDG_CACHE_HOME).
func (a *app) decisionAdapters() (*registry.Adapter, *gitrepo.Adapter, error) {
	reg, err := registry.New(registry.Options{})
	if err != nil {
		return nil, nil, err
	}
	cache, err := a.cacheHome()
	if err != nil {
		return nil, nil, err
	}
	repo, err := gitrepo.New(gitrepo.Options{WorkDir: filepath.Join(cache, "envrepos"), Clock: a.clock})
	if err != nil {
		return nil, nil, err
	}
	return reg, repo, nil
}

func (a *app) promoteCommand() *cobra.Command {
	var env, image, force string
	cmd := &cobra.Command{
		Use:   "promote --env ENV --image REF",
		Short: "Promote one immutable digest into an environment and pin it in the environment repo",
		Long: `promote resolves REF (a tag or a digest) to one digest, once, and promotes
those exact bytes: only after the digest converged in the previous environment
(the first environment accepts any digest), copied from the previous
environment's repository with its signatures and attestations, verified in the
target, then pinned by digest on a relcap/<env>/<release> branch of the
environment repository and landed on the branch Argo CD follows once the
environment's promotion approvals are in. relcap converge --env ENV then
watches it converge.`,
		Example: `  relcap promote --env staging --image registry.example.com/ci/web:1.4.2
  relcap promote --env prod --image registry.example.com/ci/web@sha256:…`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if env == "" || image == "" {
				return usageError{errors.New("promote wants --env ENV and --image REF")}
			}
			if cmd.Flags().Changed("force-unverified") && strings.TrimSpace(force) == "" {
				return usageError{errors.New("--force-unverified wants the reason, which is journaled")}
			}
			if _, err := a.loadProject(); err != nil {
				return err
			}
			reg, repo, err := a.decisionAdapters()
			if err != nil {
				return err
			}
			svc, _, err := a.serviceWith(ctx, "promote", "", workflow.Deps{Registry: reg, EnvRepo: repo})
			if err != nil {
				return err
			}
			r, err := svc.Start(ctx, workflow.StartRequest{Env: env, Image: image, PromoteOnly: true, ForceUnverified: strings.TrimSpace(force)})
			if err != nil {
				return err
			}
			printer := plain.New(a.io.Err, false)
			if a.flags.json {
				printer = plain.New(a.io.Out, true)
			}
			final, err := svc.RunUntil(ctx, r.ID, printer.Event, workflow.StepPromotion)
			if final != nil && !a.flags.json {
				printPromotion(a, final)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&env, "env", "", "environment to promote into")
	cmd.Flags().StringVar(&image, "image", "", "image reference (tag or digest)")
	cmd.Flags().StringVar(&force, "force-unverified", "", "promote although the digest has not converged in the previous environment; the reason is journaled")
	return cmd
}

// printPromotion summarises what a promotion established, for the captain.
func printPromotion(a *app, r *workflow.Release) {
	st := r.Step(workflow.StepPromotion)
	for _, e := range st.Evidence {
		switch d := e.Detail.(type) {
		case workflow.DigestResolved:
			fmt.Fprintf(a.io.Out, "digest     %s\n           %s, %d bytes, created %s", e.Subject, d.MediaType, d.Size, d.Created.UTC().Format(time.RFC3339))
			if len(d.Platforms) > 0 {
				fmt.Fprintf(a.io.Out, ", platforms %s", d.Platforms)
			}
			fmt.Fprintln(a.io.Out)
		case workflow.DigestVerified:
			fmt.Fprintf(a.io.Out, "copied     into %s: verified, signed %t, %d referrer(s), %d blob(s) uploaded\n", d.Repository, d.Signed, d.Referrers, d.BlobsUploaded)
		case workflow.EnvPinned:
			fmt.Fprintf(a.io.Out, "pinned     on branch %s at %s\n", d.Branch, e.Subject)
		case workflow.EnvLanded:
			fmt.Fprintf(a.io.Out, "landed     on %s at %s (the revision Argo CD must sync)\n", d.Branch, e.Subject)
		}
	}
	if diff := r.Checkpoints.EnvDiff; diff != "" {
		fmt.Fprintf(a.io.Out, "\n%s\n", strings.TrimRight(diff, "\n"))
	}
	fmt.Fprintf(a.io.Out, "\nrelease %s: promotion %s", r.ID, st.Status)
	if st.Message != "" {
		fmt.Fprintf(a.io.Out, ": %s", st.Message)
	}
	fmt.Fprintln(a.io.Out)
}
