// Package cli is relcap's command line: one cobra command per use, each
// with its options struct, a newCmdX(f, runF) constructor and a runX
// function, as cli/cli's pkg/cmd is laid out. The commands reach
// everything outside the process through the Factory, which cmd/relcap
// implements with adapters; this package sees only workflow's ports and
// values, so which adapter serves a command is decided in one place.
package cli

import (
	"context"
	"io"
	"time"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/setup"
	"github.com/relcap/relcap/workflow/tfplan"
)

// Factory is what the commands need from the process: its streams, the
// global flags, the configuration, the ledger and the Services wired with
// the ports a command asks for. cmd/relcap implements it.
type Factory interface {
	IO() *IO
	// Screen is standard output for what draws a terminal screen (the
	// cockpit, a replayed recording): masked, not escaped.
	Screen() io.Writer
	Flags() *GlobalFlags
	Clock() workflow.Clock
	// Secrets are masked in everything the process prints and records.
	Secrets() *secret.Set
	Build() Build

	// StateCustody reads where each root keeps its state, without running
	// Terraform (relcap validate).
	StateCustody() custody.Reader

	// LoadProject loads relcap.yaml from -c or the nearest one up.
	LoadProject() (*workflow.Project, error)
	// ProjectIfAny is LoadProject, or an empty project when there is no
	// relcap.yaml to find.
	ProjectIfAny() (*workflow.Project, error)
	// OptionalProject is LoadProject when there is a relcap.yaml, nil when
	// there is none; one that does not load is an error.
	OptionalProject() (*workflow.Project, error)

	// SetReadOnly says the command only reads the ledger: it never
	// creates one.
	SetReadOnly(bool)
	// LedgerAbsent: the ledger is an SQLite file that does not exist.
	LedgerAbsent() (bool, error)
	// Records are the read-only queries over the ledger.
	Records(ctx context.Context) (*workflow.Records, error)
	// Auditor verifies the ledger's session journals.
	Auditor(ctx context.Context) (*audit.Auditor, error)
	// Ledger is the ledger, for the reports and the rehearsal list.
	Ledger(ctx context.Context) (Ledger, error)
	// SessionFiles is where the ledger's session journals are.
	SessionFiles() (SessionFiles, error)
	// Reports is the cockpit's effort-report source over the ledger.
	Reports(p *workflow.Project) report.Reporter

	// Service wires a Service with a session journal and the ports req
	// asks for.
	Service(ctx context.Context, req ServiceRequest) (*workflow.Service, Session, error)
	// Measure books this command's time to step in role when the
	// command ends (workflow.Service.RecordCommandEffort).
	Measure(svc *workflow.Service, step string, role effort.Role)
	// Rehearsals wires the drills over svc.
	Rehearsals(svc *workflow.Service) (*rehearsal.Service, error)

	// PurgeExpiredPlans deletes this machine's expired saved plans and
	// returns how many.
	PurgeExpiredPlans(p *workflow.Project) (int, error)
	// SharedPlans is the team store's plan vault, nil when plans are not
	// shared; notShared says plans stay here although the ledger is a
	// team store (no people file to encrypt them to).
	SharedPlans(ctx context.Context, p *workflow.Project, command string) (v workflow.PlanVault, notShared bool, err error)
	// ReadPlanDocument reads a "terraform show -json" document.
	ReadPlanDocument(r io.Reader, env string) (tfplan.Facts, error)
	// CheckPeopleFile reads the people file as approvals are verified:
	// its principals and its problems (file:line: message).
	CheckPeopleFile(path, shown string) (principals, problems []string)
	// CheckArgoCD checks that env's Argo CD server and token are given.
	CheckArgoCD(env workflow.Environment) error
	// SetupFinders are relcap init's finders; close releases them.
	SetupFinders(ctx context.Context, argo ArgoServer) (finders setup.Finders, close func() error, err error)
	// MigrateLedger copies one ledger's history into another and
	// verifies it there (relcap ledger migrate).
	MigrateLedger(ctx context.Context, req MigrateRequest) (MigrateOutcome, error)
	// RunDemo builds the demo's sandbox and runs its releases.
	RunDemo(ctx context.Context, req DemoRequest) error
}

// GlobalFlags are the flags every command takes (DESIGN.md).
type GlobalFlags struct {
	Config, Ledger, Actor         string
	JSON, NoTUI, NoColor, Version bool
}

// Build is this binary's version.
type Build struct{ Version, Commit, Date string }

// Needs names the stage ports a Service is wired with.
type Needs uint

const (
	// NeedPlans: Terraform as planner and applier.
	NeedPlans Needs = 1 << iota
	// NeedPlanVault: the team store's plan vault, where plans are shared.
	NeedPlanVault
	// NeedOwnership: what Terraform and Argo CD manage, and what the
	// environment repository renders to when Argo CD cannot be read.
	NeedOwnership
	// NeedEnvRepo: the environment repository.
	NeedEnvRepo
	// NeedConvergence: Argo CD's convergence and break-glass ports.
	NeedConvergence
	// NeedForges: the forges pull requests are opened on.
	NeedForges
	// NeedRelease: the registry and the lander, which only a whole
	// release's stages use.
	NeedRelease
	// NeedFlow: every stage of a release.
	NeedFlow = NeedPlans | NeedPlanVault | NeedOwnership | NeedEnvRepo | NeedConvergence | NeedForges | NeedRelease
)

// ServiceRequest is what a command's Service is for. With any Needs it
// needs relcap.yaml; without, an empty project stands in when there is
// none (effort log, approve).
type ServiceRequest struct {
	Command, ReleaseID string
	Needs              Needs
	ConvergeTimeout    time.Duration
	// Actor acts instead of the command line's actor (the demo's second
	// person).
	Actor string
}

// Session is a command's session journal.
type Session interface {
	SessionID() string
	// StartRecording records a screen beside the journal.
	StartRecording() (Recording, error)
}

// Recording is a screen recording; Finish journals its hash.
type Recording interface {
	io.Writer
	Finish(ctx context.Context, releaseID string) error
}

// Ledger is what the reports and the rehearsal list read.
type Ledger interface {
	report.Source
	ListRehearsals(ctx context.Context, f rehearsal.Filter) ([]*rehearsal.Rehearsal, error)
}

// SessionFiles is where a ledger's session journals and recordings are.
type SessionFiles struct {
	Dir         string
	JournalPath func(session string) string
	Recordings  func(session string) ([]string, error)
}

// ArgoServer is where relcap init lists applications from.
type ArgoServer struct {
	Server, TokenEnv string
	PlainText        bool
}

// MigrateRequest is relcap ledger migrate's: two ledgers as given.
type MigrateRequest struct {
	From, To string
	DryRun   bool
}

// MigrateOutcome is what ledger migrate found and did.
type MigrateOutcome struct {
	// Document is --json's.
	Document any
	View     plain.Migration
	// Problems are what differs between the two ledgers afterwards.
	Problems []string
	// SessionsDir and TargetSessionsDir are where the migrated sessions'
	// journals are and where the target's would be; To names the target.
	SessionsDir, TargetSessionsDir, To string
	// MovedSessions is how many sessions were copied.
	MovedSessions int
}

// DemoRequest is relcap demo's.
type DemoRequest struct {
	Dir         string
	Interactive bool
	Timeout     time.Duration
	// Cockpit runs the cockpit on the demo's release; set when
	// Interactive.
	Cockpit func(ctx context.Context, svc *workflow.Service, releaseID string, s Session, notices <-chan string) error
}
