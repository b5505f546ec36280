package rehearsal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relcap/relcap/workflow"
)

// Store keeps rehearsals. SaveRehearsal is durable when it returns, and
// replaces the record with the same ID.
type Store interface {
	SaveRehearsal(ctx context.Context, r *Rehearsal) error
	// LoadRehearsal returns fault.ErrNotFound for an unknown ID.
	LoadRehearsal(ctx context.Context, id string) (*Rehearsal, error)
	ListRehearsals(ctx context.Context, f Filter) ([]*Rehearsal, error)
}

// Roots is the ability of a Terraform planner to run the failed-apply
// drill on a scratch copy of an environment's Terraform root, so that a
// failure injected on purpose never writes the real state. The scratch
// copy is planned and applied through the core's Planner and Applier like
// any root; only reading its state goes through workflow.StateReader.
type Roots interface {
	workflow.StateReader
	// PullState returns the state of env's workspace as terraform state
	// pull prints it. It writes nothing, and holds Terraform's state lock
	// (if the backend takes one) no longer than the pull. The bytes hold
	// sensitive values in clear: never log or store them.
	PullState(ctx context.Context, env workflow.Environment) ([]byte, error)
	// CreateScratch makes, or makes again from the start, the scratch
	// root of rehearsal id: a copy of env's Terraform root without its
	// working files and local state, plus files, whose backend is a
	// local state seeded with state. It returns the copy's target.
	CreateScratch(ctx context.Context, id string, env workflow.Environment, files []ScratchFile, state []byte) (workflow.TerraformTarget, error)
	// RemoveScratchFile deletes a file CreateScratch added to rehearsal
	// id's root; one already gone is not an error.
	RemoveScratchFile(ctx context.Context, id, name string) error
	// DeleteScratch removes rehearsal id's scratch directory; one already
	// gone is not an error.
	DeleteScratch(ctx context.Context, id string) error
	// CheckStateLock takes env's state lock without waiting and releases
	// it (a plan with -lock=true -lock-timeout=0s): a lock still held is
	// an error wrapping fault.ErrLocked that names its holder. It never
	// disables locking and never force-unlocks.
	CheckStateLock(ctx context.Context, env workflow.Environment) error
}

// ScratchFile is a file added to a scratch root.
type ScratchFile struct {
	Name    string // a file name in the root, no directory
	Content []byte
}

// CommandRunner runs a command the configuration names as an argv list
// (rehearsal.interrupt.stop and .start), directly, never through a shell.
// Its output goes to tooloutput.From(ctx) when there is one; a
// non-zero exit is an error naming the command.
type CommandRunner interface {
	RunCommand(ctx context.Context, argv []string) error
}

// Pauser pauses and resumes reconciliation of an environment's
// application: the interrupted-reconciliation drill's interruption when
// the environment names no rehearsal.interrupt commands (break-glass).
type Pauser interface {
	// Pause stops reconciliation of env's application for at most ttl,
	// saying why.
	Pause(ctx context.Context, env, reason string, ttl time.Duration) error
	// Resume undoes Pause.
	Resume(ctx context.Context, env string) error
	// Paused reports whether env's application is paused now.
	Paused(ctx context.Context, env string) (bool, error)
}

// Deps are what a rehearsal Service drives: the release core, through
// which every drill's release runs, and the ports only drills use.
type Deps struct {
	Core *workflow.Service
	// Store keeps the rehearsals; nil is the core's Ledger when it keeps
	// them (every relcap ledger does).
	Store Store
	// Roots makes the failed-apply drill's scratch copies; nil is the
	// core's Planner when it can (the Terraform adapter can).
	Roots Roots
	// Commands runs the environment's rehearsal.interrupt commands;
	// optional (without them the drill pauses with Pauser).
	Commands CommandRunner
	// Pauser pauses reconciliation (break-glass); optional where every
	// environment names rehearsal.interrupt commands.
	Pauser Pauser
}

// Service runs recovery drills through the release core.
type Service struct {
	core     *workflow.Service
	d        workflow.Deps // the core's ports, as it was wired
	store    Store
	roots    Roots
	commands CommandRunner
	pauser   Pauser
}

// New checks the ports every drill needs.
func New(deps Deps) (*Service, error) {
	if deps.Core == nil {
		return nil, errors.New("rehearsal: no release core")
	}
	d := deps.Core.Deps()
	s := &Service{core: deps.Core, d: d, store: deps.Store, roots: deps.Roots, commands: deps.Commands, pauser: deps.Pauser}
	if s.store == nil {
		s.store, _ = d.Ledger.(Store)
	}
	if s.store == nil {
		return nil, errors.New("rehearsal: no rehearsal store")
	}
	if s.roots == nil {
		s.roots, _ = d.Planner.(Roots)
	}
	return s, nil
}

func missingPort(name string) error {
	return &workflow.TerminalError{Err: fmt.Errorf("no %s adapter is wired for this command", name)}
}
