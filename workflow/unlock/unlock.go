// Package unlock is relcap unlock: the guided force-unlock of a Terraform
// state lock whose holder is gone (a crashed CI job, a closed laptop). It
// sits beside the release core (workflow) and acts through its Applier's
// StateUnlocker ability, journaling the request and its outcome. The
// operation locks relcap itself takes (workflow.OperationLocks) are never
// forced: they go with their holder's process.
package unlock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// StateUnlocker is the optional ability of a workflow.Applier to release
// a state lock whose holder is gone (terraform force-unlock). It does not
// check that the holder is gone: ForceUnlock demands that confirmation and
// journals it.
type StateUnlocker interface {
	ForceUnlock(ctx context.Context, env workflow.Environment, lockID string) error
}

// Request asks to release a Terraform state lock whose holder is gone.
type Request struct {
	Env    string
	LockID string
	// HolderGone is the person's confirmation that the lock's holder is
	// no longer running: unlocking a live writer's lock corrupts state.
	HolderGone bool
	Reason     string
}

// Validate refuses a request that is incomplete or unconfirmed.
func (req Request) Validate() error {
	switch {
	case req.Env == "" || req.LockID == "":
		return fmt.Errorf("%w: unlock wants --env ENV and --lock-id ID (the ID relcap or terraform printed for the held lock)", fault.ErrUsage)
	case !req.HolderGone:
		return fmt.Errorf("%w: refusing to force-unlock without --confirm-holder-gone: check that the lock's holder is no longer running", fault.ErrBlocked)
	case strings.TrimSpace(req.Reason) == "":
		return fmt.Errorf("%w: unlock wants --reason TEXT for the journal", fault.ErrUsage)
	}
	return nil
}

// ForceUnlock releases a state lock after the person confirmed its holder
// is gone and said why, journaling the request and its outcome, through
// the ports of core (its Project, Applier and Journal; Terraform's output
// goes where core sends tool output).
func ForceUnlock(ctx context.Context, core *workflow.Service, req Request) error {
	d := core.Deps()
	if err := req.Validate(); err != nil {
		return err
	}
	env, err := d.Project.Env(req.Env)
	if err != nil {
		return err
	}
	unlocker, ok := d.Applier.(StateUnlocker)
	if !ok || d.Applier == nil {
		return workflow.MissingPort("terraform state unlock")
	}
	if err := record(ctx, d, journal.UnlockRequested{Env: env.Name, LockID: req.LockID, Reason: req.Reason, HolderGone: true}); err != nil {
		return err
	}
	tctx, done := core.ToolOutput(ctx, workflow.StepApply)
	if err := done(unlocker.ForceUnlock(tctx, env, req.LockID)); err != nil {
		// The failure is returned joined with any failure to journal it,
		// so a lost record is never silent.
		jerr := record(context.WithoutCancel(ctx), d, journal.UnlockFailed{Env: env.Name, LockID: req.LockID, Error: err.Error()})
		if jerr != nil {
			jerr = fmt.Errorf("and the session journal could not record it: %w", jerr)
		}
		return errors.Join(err, jerr)
	}
	return record(ctx, d, journal.UnlockDone{Env: env.Name, LockID: req.LockID})
}

// record appends rec to the session's journal.
func record(ctx context.Context, d workflow.Deps, rec journal.Record) error {
	if _, err := d.Journal.Append(ctx, rec); err != nil {
		return fmt.Errorf("journal %s: %w", rec.JournalKind(), err)
	}
	return nil
}
