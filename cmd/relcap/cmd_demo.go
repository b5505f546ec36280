package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/adapters/registry"
	"github.com/relcap/relcap/adapters/sandbox"
	"github.com/relcap/relcap/adapters/sandbox/demo"
	"github.com/relcap/relcap/adapters/terraform"
	"github.com/relcap/relcap/tui/cli"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
)

// RunDemo builds the sandbox and releases its image to staging and prod
// through relcap's own flow (relcap demo).
func (a *app) RunDemo(ctx context.Context, req cli.DemoRequest) error {
	dir, timeout := req.Dir, req.Timeout
	if strings.TrimSpace(a.flags.Actor) == sandbox.Approver {
		return cli.UsageError{Err: fmt.Errorf("%s is the demo's second approver; act as someone else", sandbox.Approver)}
	}
	out := a.io.Out
	fmt.Fprintln(out, "Building the relcap sandbox: a local registry, an environment repo, Terraform roots and the Argo CD API simulator…")
	captainName, err := a.actor()
	if err != nil {
		return err
	}
	sb, err := sandbox.New(ctx, sandbox.Options{Dir: dir, People: []string{captainName}, Helper: a.argoHelper()})
	if errors.Is(err, sandbox.ErrDirNotEmpty) {
		return cli.UsageError{Err: err}
	}
	if err != nil {
		return err
	}
	defer sb.Close()
	a.flags.Config = sb.Config
	// The sandbox's people sign with the keys it made for them, whatever
	// the captain's own ssh-agent holds.
	a.demoKeys = sb.Keys
	if a.flags.Ledger == "" {
		a.flags.Ledger = filepath.Join(sb.Dir, sandbox.LedgerFile)
	}
	// relcap.yaml tells the Argo CD adapter to read the simulator's token
	// from sb.TokenEnv. Commands read the environment through a.io, so the
	// token goes there, for this process only, never into os.Environ.
	a.io.Env = append(a.io.Env, sb.TokenEnv+"="+sb.Token)
	demo.Describe(out, sb)

	p, err := a.LoadProject()
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
	approver, _, err := a.Service(ctx, cli.ServiceRequest{Command: "demo (approver)", Actor: sandbox.Approver})
	if err != nil {
		return err
	}
	o := demo.Options{Sandbox: sb, Project: p, Captain: captain, Approver: approver, Journal: journal, Out: out, Err: a.io.Err,
		Events: plain.New(out, false).Event, PrintPlan: plain.PrintPlan, Ledger: a.flags.Ledger}
	if req.Interactive {
		o.Cockpit = func(ctx context.Context, releaseID string, notices <-chan string) error {
			return req.Cockpit(ctx, captain, releaseID, session{journal}, notices)
		}
	}
	releases, err := demo.Run(ctx, o)
	demo.Hints(out, sb, a.flags.Ledger)
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
		Ownership: a.ownershipSources(p, tf), Desired: a.desiredSource(p, repo), Planner: tf, Applier: tf, Custody: tf,
		Registry: reg, EnvRepo: repo, Convergence: argo, ConvergeTimeout: timeout,
	}, nil
}
