package main

import (
	"context"
	"path/filepath"

	"github.com/relcap/relcap/adapters/command"
	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/adapters/registry"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/terraform"
	"github.com/relcap/relcap/tui/cli"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/landing"
	"github.com/relcap/relcap/workflow/rehearsal"
)

// terraformAdapter wires the Terraform adapter: the private plan store under
// $XDG_STATE_HOME (the core reviews its plans with the project's rules). Terraform's
// own progress is the Service's tool output (Deps.ToolOutput, events),
// never the adapter's: under the cockpit nothing may write to the terminal.
func (a *app) terraformAdapter() (*terraform.Adapter, error) {
	state, err := a.stateHome()
	if err != nil {
		return nil, err
	}
	return terraform.New(terraform.Options{
		PlanDir:      state + "/plans",
		RehearsalDir: state + "/rehearsals",
		Clock:        a.clock,
		Secrets:      a.secrets,
	})
}

// cacheHome is $XDG_CACHE_HOME/relcap.
func (a *app) cacheHome() (string, error) {
	return a.xdgHome("XDG_CACHE_HOME", ".cache")
}

// decisionAdapters wires the registry (credentials from the Docker config)
// and the environment repository (clones cached under $XDG_CACHE_HOME).
func (a *app) decisionAdapters() (*registry.Adapter, *gitrepo.Adapter, error) {
	reg, err := registry.New(registry.Options{Secrets: a.secrets})
	if err != nil {
		return nil, nil, err
	}
	cache, err := a.cacheHome()
	if err != nil {
		return nil, nil, err
	}
	repo, err := gitrepo.New(gitrepo.Options{WorkDir: filepath.Join(cache, "envrepos"), Clock: a.clock, Credentials: a.gitPushCredentials()})
	if err != nil {
		return nil, nil, err
	}
	return reg, repo, nil
}

// Service wires the workflow Service for a command: ledger, a new session
// journal, the project, the clock, the actor and the stage ports req
// needs. A command with stage ports needs relcap.yaml; one without works
// with an empty project.
func (a *app) Service(ctx context.Context, req cli.ServiceRequest) (*workflow.Service, cli.Session, error) {
	var d workflow.Deps
	if req.Needs != 0 {
		p, err := a.LoadProject()
		if err != nil {
			return nil, nil, err
		}
		if d, err = a.stageDeps(ctx, p, req); err != nil {
			return nil, nil, err
		}
	}
	if req.Actor != "" {
		saved := a.flags.Actor
		a.flags.Actor = req.Actor
		defer func() { a.flags.Actor = saved }()
	}
	svc, j, err := a.serviceWith(ctx, req.Command, req.ReleaseID, d)
	if err != nil {
		return nil, nil, err
	}
	return svc, session{j}, nil
}

// stageDeps wires the stage adapters req needs: the one place a command's
// needs become adapters.
func (a *app) stageDeps(ctx context.Context, p *workflow.Project, req cli.ServiceRequest) (workflow.Deps, error) {
	d := workflow.Deps{ConvergeTimeout: req.ConvergeTimeout}
	var tf *terraform.Adapter
	if req.Needs&(cli.NeedPlans|cli.NeedPlanVault|cli.NeedOwnership) != 0 {
		var err error
		if tf, err = a.terraformAdapter(); err != nil {
			return d, err
		}
	}
	if req.Needs&(cli.NeedEnvRepo|cli.NeedRelease|cli.NeedOwnership) != 0 {
		reg, repo, err := a.decisionAdapters()
		if err != nil {
			return d, err
		}
		if req.Needs&(cli.NeedEnvRepo|cli.NeedRelease) != 0 {
			d.EnvRepo = repo
		}
		if req.Needs&cli.NeedOwnership != 0 {
			// Rendered, the environment repository stands in for Argo CD
			// when it cannot be read.
			d.Desired = a.desiredSource(p, repo)
		}
		if req.Needs&cli.NeedRelease != 0 {
			d.Registry, d.Lander = reg, landing.PullRequests{}
		}
	}
	if req.Needs&cli.NeedPlans != 0 {
		d.Planner, d.Applier, d.Custody = tf, tf, tf
	}
	if req.Needs&cli.NeedOwnership != 0 {
		d.Ownership = a.ownershipSources(p, tf)
	}
	if req.Needs&cli.NeedConvergence != 0 {
		d.Convergence = a.argoCD(p)
	}
	if req.Needs&cli.NeedForges != 0 {
		d.Forges = a.forges()
	}
	if req.Needs&cli.NeedPlanVault != 0 {
		var err error
		if d.PlanVault, err = a.planVault(ctx, p, tf.PlanDir(), req.Command); err != nil {
			return d, err
		}
	}
	return d, nil
}

// session is a session journal as the commands see it.
type session struct{ j *store.FileJournal }

func (s session) SessionID() string { return s.j.SessionID() }

func (s session) StartRecording() (cli.Recording, error) {
	rec, err := s.j.StartRecording()
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// Rehearsals wires the drills: the ledger keeps the rehearsals and the
// Terraform adapter makes the scratch roots (rehearsal.New finds both in
// svc); the interrupted-reconciliation drill pauses with break-glass.
func (a *app) Rehearsals(svc *workflow.Service) (*rehearsal.Service, error) {
	return rehearsal.New(rehearsal.Deps{Core: svc, Commands: command.Runner{}, Pauser: breakglass.New(svc.Deps())})
}
