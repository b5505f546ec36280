package main

import (
	"context"
	"io"
	"os"

	"github.com/relcap/relcap/adapters/signing"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/terraform"
	"github.com/relcap/relcap/tui/cli"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// app is tui/cli's Factory: the commands reach adapters only through it.
var _ cli.Factory = (*app)(nil)

func (a *app) IO() *IO                   { return a.io }
func (a *app) Screen() io.Writer         { return a.screen }
func (a *app) Flags() *cli.GlobalFlags   { return &a.flags }
func (a *app) Clock() workflow.Clock     { return a.clock }
func (a *app) Secrets() *secret.Set      { return a.secrets }
func (a *app) SetReadOnly(readOnly bool) { a.readOnly = readOnly }

// Build is this binary's version.
func (a *app) Build() cli.Build {
	b := currentBuild()
	return cli.Build{Version: b.Version, Commit: b.Commit, Date: b.Date}
}

// OptionalProject loads relcap.yaml when there is one: reports read the
// app, the promotion order and the baseline from it, but a ledger can be
// reported on without a project (with --baseline). A relcap.yaml that
// exists but does not load is an error, never silently skipped.
func (a *app) OptionalProject() (*workflow.Project, error) {
	if a.flags.Config != "" {
		return a.LoadProject()
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, nil //nolint:nilerr // no working directory means no project to find
	}
	path, err := config.Find(wd)
	if err != nil {
		return nil, nil //nolint:nilerr // no relcap.yaml: report on the whole ledger
	}
	p, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	a.project = p
	return p, nil
}

// LedgerAbsent: the ledger is an SQLite file that does not exist.
func (a *app) LedgerAbsent() (bool, error) {
	loc, err := a.ledgerLocation()
	return err == nil && loc.absent(), err
}

// Ledger is this invocation's ledger, for the reports and the rehearsals.
func (a *app) Ledger(ctx context.Context) (cli.Ledger, error) {
	l, err := a.openLedger(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// SessionFiles is where this invocation's ledger keeps its journals.
func (a *app) SessionFiles() (cli.SessionFiles, error) {
	dir, err := a.sessionsDir()
	if err != nil {
		return cli.SessionFiles{}, err
	}
	files := store.SessionFiles{Dir: dir}
	return cli.SessionFiles{Dir: dir, JournalPath: files.JournalPath, Recordings: files.Recordings}, nil
}

// PurgeExpiredPlans deletes this machine's saved plans older than the
// project's plans.expiry.
func (a *app) PurgeExpiredPlans(p *workflow.Project) (int, error) {
	tf, err := a.terraformAdapter()
	if err != nil {
		return 0, err
	}
	removed, err := tf.PurgeExpired(a.clock.Now(), p.Plans.Expiry)
	return len(removed), err
}

// SharedPlans is the team store's plan vault (planVault), or why plans
// are not shared.
func (a *app) SharedPlans(ctx context.Context, p *workflow.Project, command string) (workflow.PlanVault, bool, error) {
	if a.teamStoreWithoutPeople(p) {
		return nil, true, nil
	}
	tf, err := a.terraformAdapter()
	if err != nil {
		return nil, false, err
	}
	v, err := a.planVault(ctx, p, tf.PlanDir(), command)
	return v, false, err
}

// ReadPlanDocument reads a "terraform show -json" document.
func (a *app) ReadPlanDocument(r io.Reader, env string) (tfplan.Facts, error) {
	return terraform.ReadPlanJSON(r, env, a.secrets)
}

// StateCustody reads the roots' state custody without running Terraform.
func (a *app) StateCustody() custody.Reader { return terraform.StateCustody{} }

// CheckPeopleFile reads the people file with the parser that verifies
// approvals.
func (a *app) CheckPeopleFile(path, shown string) ([]string, []string) {
	return signing.CheckPeopleFile(path, shown)
}
