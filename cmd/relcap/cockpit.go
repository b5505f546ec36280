package main

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/tui"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// useCockpit is true when relcap talks to a person at a terminal: both
// stdin and stdout are TTYs, and neither --no-tui nor --json was given.
func (a *app) useCockpit() bool {
	return a.io.IsTTY && !a.flags.noTUI && !a.flags.json
}

// runCockpit drives the release in the Bubble Tea cockpit, recording the
// screen beside the session's journal.
func (a *app) runCockpit(ctx context.Context, svc *workflow.Service, id string) error {
	if len(a.sessions) == 0 {
		return errors.New("cockpit: no session to record into")
	}
	return a.cockpit(ctx, svc, id, a.sessions[len(a.sessions)-1], nil)
}

// cockpit runs the cockpit on one release and records what the captain saw
// beside journal's file; the recording's SHA-256 is journaled when the
// cockpit closes, so journal verify covers it. It records the rendered
// screen, in which secrets are already masked.
func (a *app) cockpit(ctx context.Context, svc *workflow.Service, id string, journal *store.FileJournal, notices <-chan string) error {
	rec, err := journal.StartRecording()
	if err != nil {
		return err
	}
	// Under the cockpit no child process writes to the terminal: a run's
	// tools reach the log pane as events, and anything else they print
	// is journaled only.
	svc.SetToolOutput(nil)
	runErr := tui.Run(ctx, tui.Options{Service: svc, Reports: a.reports(svc.Project()), ReleaseID: id, Input: a.io.In, Output: a.screen, Env: a.io.Env, Secrets: a.secrets,
		Record: rec, Notices: notices, Hold: a.holdCockpit})
	if err := rec.Finish(ctx, id); err != nil {
		return errors.Join(runErr, err)
	}
	if errors.Is(runErr, tui.ErrQuit) {
		plain.PrintPaused(a.io.Err, id)
		return nil
	}
	return runErr
}

// openCockpit is plain `relcap`: at a terminal, the cockpit on the release
// in progress in this release repository (the newest one not finished);
// otherwise, or when there is none, what to run.
func (a *app) openCockpit(cmd *cobra.Command) error {
	ctx := cmd.Context()
	if !a.useCockpit() {
		return cmd.Help()
	}
	p, err := a.loadProject()
	if err != nil {
		return err
	}
	r, err := a.inProgress(ctx)
	if errors.Is(err, fault.ErrNotFound) {
		envs := ""
		if len(p.Environments) > 0 {
			envs = p.Environments[0].Name
		}
		plain.PrintNothingInProgress(a.io.Out, p.App, envs)
		return nil
	}
	if err != nil {
		return err
	}
	svc, _, err := a.flowService(ctx, "cockpit", r.ID, 10*time.Minute)
	if err != nil {
		return err
	}
	// Opening the cockpit decides nothing: the captain resumes with a key.
	a.holdCockpit = true
	return a.runCockpit(ctx, svc, r.ID)
}

// inProgress is the release the cockpit opens on. A ledger file that does
// not exist holds none, and opening the cockpit does not create it.
func (a *app) inProgress(ctx context.Context) (*workflow.Release, error) {
	loc, err := a.ledgerLocation()
	if err != nil {
		return nil, err
	}
	if loc.absent() {
		return nil, fault.ErrNotFound
	}
	q, err := a.records(ctx)
	if err != nil {
		return nil, err
	}
	return q.InProgress(ctx)
}
