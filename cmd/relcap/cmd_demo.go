package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/adapters/registry"
	"github.com/relcap/relcap/adapters/sandbox"
	"github.com/relcap/relcap/adapters/sandbox/demo"
	"github.com/relcap/relcap/adapters/terraform"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
)

// demoOptions are relcap demo's flags.
type demoOptions struct {
	f        *app
	Dir      string
	Headless bool
	Timeout  time.Duration
}

func newCmdDemo(f *app, runF func(context.Context, *demoOptions) error) *cobra.Command {
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

// runDemo builds the sandbox and releases its image to staging and prod
// through relcap's own flow.
func runDemo(ctx context.Context, opts *demoOptions) error {
	a, dir, headless, timeout := opts.f, opts.Dir, opts.Headless, opts.Timeout
	switch {
	case a.flags.config != "":
		return usageError{errors.New("demo writes and uses its own relcap.yaml in the sandbox; leave out -c/--config")}
	case a.flags.json:
		return usageError{errors.New("demo prints a narrated run; --json is not supported (relcap release --json streams NDJSON)")}
	case strings.TrimSpace(a.flags.actor) == sandbox.Approver:
		return usageError{fmt.Errorf("%s is the demo's second approver; act as someone else", sandbox.Approver)}
	}
	interactive := a.useCockpit() && !headless
	out := a.io.Out
	fmt.Fprintln(out, "Building the relcap sandbox: a local registry, an environment repo, Terraform roots and the Argo CD API simulator…")
	captainName, err := a.actor()
	if err != nil {
		return err
	}
	sb, err := sandbox.New(ctx, sandbox.Options{Dir: dir, People: []string{captainName}, Helper: a.argoHelper()})
	if errors.Is(err, sandbox.ErrDirNotEmpty) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	defer sb.Close()
	a.flags.config = sb.Config
	// The sandbox's people sign with the keys it made for them, whatever
	// the captain's own ssh-agent holds.
	a.demoKeys = sb.Keys
	if a.flags.ledger == "" {
		a.flags.ledger = filepath.Join(sb.Dir, sandbox.LedgerFile)
	}
	// relcap.yaml tells the Argo CD adapter to read the simulator's token
	// from sb.TokenEnv. Commands read the environment through a.io, so the
	// token goes there, for this process only, never into os.Environ.
	a.io.Env = append(a.io.Env, sb.TokenEnv+"="+sb.Token)
	demo.Describe(out, sb)

	p, err := a.loadProject()
	if err != nil {
		return err
	}
	deps, err := a.demoDeps(p, sb, timeout)
	if err != nil {
		return err
	}
	captain, journal, err := a.serviceWith(ctx, "demo", "", deps)
	if err != nil {
		return err
	}
	approver, err := a.serviceAs(ctx, sandbox.Approver, "demo (approver)")
	if err != nil {
		return err
	}
	o := demo.Options{Sandbox: sb, Project: p, Captain: captain, Approver: approver, Journal: journal, Out: out, Err: a.io.Err,
		Events: plain.New(out, false).Event, PrintPlan: plain.PrintPlan, Ledger: a.flags.ledger}
	if interactive {
		o.Cockpit = func(ctx context.Context, releaseID string, notices <-chan string) error {
			return a.cockpit(ctx, captain, releaseID, journal, notices)
		}
	}
	releases, err := demo.Run(ctx, o)
	demo.Hints(out, sb, a.flags.ledger)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nBoth releases converged: %s runs in staging and prod.\n", releases[len(releases)-1].Checkpoints.Digest.Short())
	return nil
}

// demoDeps wires every stage's adapter like flowDeps, with everything the
// run writes (saved plans, clones) inside the sandbox directory and no
// registry credentials: the sandbox registry needs none, and the captain's
// Docker credentials have no business there.
func (a *app) demoDeps(p *workflow.Project, sb *sandbox.Sandbox, timeout time.Duration) (workflow.Deps, error) {
	tf, err := terraform.New(terraform.Options{
		PlanDir: filepath.Join(sb.Dir, "state", "plans"), RehearsalDir: filepath.Join(sb.Dir, "state", "rehearsals"), Clock: a.clock, Secrets: a.secrets,
		// Terraform's own progress would bury the narration; the demo
		// prints relcap's review of the plan instead.
	})
	if err != nil {
		return workflow.Deps{}, err
	}
	reg, err := registry.New(registry.Options{Credentials: registry.Anonymous})
	if err != nil {
		return workflow.Deps{}, err
	}
	repo, err := gitrepo.New(gitrepo.Options{WorkDir: filepath.Join(sb.Dir, "cache", "envrepos"), Clock: a.clock})
	if err != nil {
		return workflow.Deps{}, err
	}
	argo := a.argoCD(p)
	return workflow.Deps{
		Ownership: a.ownershipSources(p, tf), Desired: desiredSource(repo), Planner: tf, Applier: tf,
		Registry: reg, EnvRepo: repo, Convergence: argo, ConvergeTimeout: timeout,
	}, nil
}

// serviceAs is a Service (and a session of its own) acting as actor, for
// the demo's second person: their approvals are journaled under their name.
func (a *app) serviceAs(ctx context.Context, actor, command string) (*workflow.Service, error) {
	saved := a.flags.actor
	a.flags.actor = actor
	defer func() { a.flags.actor = saved }()
	svc, _, err := a.serviceWith(ctx, command, "", workflow.Deps{})
	return svc, err
}
