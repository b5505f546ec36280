package cli

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/workflow"
)

// demoOptions are relcap demo's flags.
type demoOptions struct {
	f        Factory
	Dir      string
	Headless bool
	Timeout  time.Duration
}

func newCmdDemo(f Factory, runF func(context.Context, *demoOptions) error) *cobra.Command {
	opts := &demoOptions{f: f}
	cmd := &cobra.Command{
		Use:   "demo [--headless] [--dir DIR]",
		Short: "A complete release, staging then prod, on an embedded sandbox (no setup)",
		Long: `demo builds a sandbox in a temporary directory (or --dir): an OCI registry
on 127.0.0.1 holding a signed multi-platform image, an environment Git
repository with staging and prod, a Terraform root per environment of
built-in terraform_data resources, the Argo CD API simulator, and the
relcap.yaml and ownership.yaml that name them. It then releases the image
through relcap's own flow, staging then prod:

  ownership check   stops on the sandbox's one ownership conflict, which
                    the demo resolves by correcting ownership.yaml
  plan review       a plan with a replacement, approved by a second
                    person, "demo-approver"; then applied
  promotion         the digest with its signature and attestation, pinned
                    in the environment repo (prod: approved by demo-approver)
  convergence       the simulator syncs the pinned digest and turns healthy

and ends with the effort of both releases. The ledger and the session
journals stay in the sandbox directory (unless --ledger is given), so a demo
never touches your own ledger. It exits 0 only if both releases converged.

At a terminal the release runs in the cockpit: the captain reviews and
approves the staging plan and continues with the keyboard (? shows the keys
of each screen), and a demo assistant plays the second person, announcing
in the status bar what it did (correcting the ownership map, approving for
demo-approver) so the captain can resume with r. --headless runs the
scripted path with plain line output; so does a run without a terminal.`,
		Example: `  relcap demo --headless
  relcap demo --headless --dir /tmp/relcap-demo`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOr(runF, runDemo)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "empty or new directory for the sandbox (default: a new temporary directory)")
	cmd.Flags().BoolVar(&opts.Headless, "headless", false, "run the scripted path with plain line output")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 2*time.Minute, "how long each convergence may take")
	return cmd
}

// runDemo checks the command line and runs the demo: the sandbox and its
// releases are the Factory's; at a terminal the captain's release runs in
// the cockpit.
func runDemo(ctx context.Context, opts *demoOptions) error {
	a := opts.f
	switch {
	case a.Flags().Config != "":
		return UsageError{errors.New("demo writes and uses its own relcap.yaml in the sandbox; leave out -c/--config")}
	case a.Flags().JSON:
		return UsageError{errors.New("demo prints a narrated run; --json is not supported (relcap release --json streams NDJSON)")}
	}
	req := DemoRequest{Dir: opts.Dir, Interactive: useCockpit(a) && !opts.Headless, Timeout: opts.Timeout}
	if req.Interactive {
		req.Cockpit = func(ctx context.Context, svc *workflow.Service, releaseID string, s Session, notices <-chan string) error {
			return runCockpit(a, ctx, cockpitRun{svc: svc, id: releaseID, session: s, notices: notices})
		}
	}
	return a.RunDemo(ctx, req)
}
