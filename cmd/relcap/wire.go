package main

import (
	"context"
	"os"

	"github.com/relcap/relcap/adapters/argocd/remote"
	"github.com/relcap/relcap/adapters/signing"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/terraform"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/sharedplan"
)

// ProjectIfAny loads relcap.yaml when -c names one or one is found; commands
// that work without one (effort log) get an empty project otherwise.
func (a *app) ProjectIfAny() (*workflow.Project, error) {
	if a.flags.Config == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if _, err := config.Find(wd); err != nil {
			return &workflow.Project{}, nil
		}
	}
	return a.LoadProject()
}

// serviceWith wires the workflow Service for a state-changing command:
// ledger, a new session journal, the project, the clock, the actor, and
// the stage adapters in d.
func (a *app) serviceWith(ctx context.Context, command, releaseID string, d workflow.Deps) (*workflow.Service, *store.FileJournal, error) {
	project, err := a.ProjectIfAny()
	if err != nil {
		return nil, nil, err
	}
	actor, err := a.actor()
	if err != nil {
		return nil, nil, err
	}
	journal, err := a.openSession(ctx, command, releaseID)
	if err != nil {
		return nil, nil, err
	}
	d.Project, d.Ledger, d.Journal, d.Clock, d.Actor = project, a.ledger, journal, a.clock, actor
	// Tools print to stderr as they go, so stdout stays the command's
	// own output; the cockpit turns this off (its log pane shows them).
	d.ToolOutput = a.io.Err
	d.Secrets = a.secrets
	a.wireSigning(ctx, &d)
	if d.PlanVault != nil {
		d.SharedPlans = sharedplan.New(d)
	}
	svc, err := workflow.NewService(d)
	if err != nil {
		return nil, nil, err
	}
	a.warnExpiredBreakGlass(ctx, svc)
	return svc, journal, nil
}

// ownershipSources lists what each manager writes, for the ownership step:
// Terraform's state and the environment's Argo CD application.
func (a *app) ownershipSources(p *workflow.Project, tf *terraform.Adapter) []workflow.OwnershipSource {
	return []workflow.OwnershipSource{tf, a.argoCD(p)}
}

// Records wires the read-only queries over the ledger: what commands ask
// before acting. It opens no session. Journal verification is auditor's.
func (a *app) Records(ctx context.Context) (*workflow.Records, error) {
	project, err := a.ProjectIfAny()
	if err != nil {
		return nil, err
	}
	l, err := a.openLedger(ctx)
	if err != nil {
		return nil, err
	}
	d := workflow.Deps{Project: project, Ledger: l, Clock: a.clock}
	if project.People != "" {
		d.Verifier = signing.NewProtectedVerifier(project.People)
	}
	return workflow.NewRecords(d)
}

// argoCD is the Argo CD pool of this invocation, one connection per
// environment, served by a relcap-argocd helper started on first use.
func (a *app) argoCD(p *workflow.Project) *remote.Pool {
	if a.argo == nil {
		a.argo = remote.NewPool(p, a.argoHelper())
	}
	return a.argo
}

// Reports is the effort screen's report source over this invocation's
// ledger.
func (a *app) Reports(p *workflow.Project) report.Reporter {
	return report.Reporter{Project: p, Source: a.ledger, Clock: a.clock}
}

// warnExpiredBreakGlass makes an expired break-glass loud, once, in every
// command that records a session (its ledger is open already), until it
// is ended.
func (a *app) warnExpiredBreakGlass(ctx context.Context, svc *workflow.Service) {
	if a.warnedBreakGlass {
		return
	}
	a.warnedBreakGlass = true
	if expired, err := breakglass.New(svc.Deps()).Expired(ctx); err == nil {
		plain.WarnExpiredBreakGlass(a.io.Err, expired, a.clock.Now())
	}
}
