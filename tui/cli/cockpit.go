package cli

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/fault"
)

// useCockpit is true when relcap talks to a person at a terminal: both
// stdin and stdout are TTYs, and neither --no-tui nor --json was given.
func useCockpit(f Factory) bool {
	return f.IO().IsTTY && !f.Flags().NoTUI && !f.Flags().JSON
}

// cockpitRun is one cockpit: on which release, recorded in which session.
type cockpitRun struct {
	svc     *workflow.Service
	id      string
	session Session
	notices <-chan string
	// hold: the cockpit opens on the decision map and runs nothing until
	// the captain asks (plain relcap).
	hold bool
}

// runCockpit runs the cockpit on one release and records what the captain
// saw beside the session's journal; the recording's SHA-256 is journaled
// when the cockpit closes, so journal verify covers it. It records the
// rendered screen, in which secrets are already masked.
func runCockpit(f Factory, ctx context.Context, c cockpitRun) error {
	if c.session == nil {
		return errors.New("cockpit: no session to record into")
	}
	rec, err := c.session.StartRecording()
	if err != nil {
		return err
	}
	// Under the cockpit no child process writes to the terminal: a run's
	// tools reach the log pane as events, and anything else they print
	// is journaled only.
	c.svc.SetToolOutput(nil)
	io := f.IO()
	runErr := tui.Run(ctx, tui.Options{Service: c.svc, Reports: f.Reports(c.svc.Records().Project()), ReleaseID: c.id, Input: io.In, Output: f.Screen(), Env: io.Env, Secrets: f.Secrets(),
		Record: rec, Notices: c.notices, Hold: c.hold})
	if err := rec.Finish(ctx, c.id); err != nil {
		return errors.Join(runErr, err)
	}
	// What the ledger holds now, everything measured stored: the exit
	// summary and the ledger are one figure.
	entries, err := c.svc.Effort(context.WithoutCancel(ctx), c.id)
	if err != nil {
		return errors.Join(runErr, err)
	}
	plain.PrintEffortAtExit(io.Err, c.id, effort.Tally(entries))
	if errors.Is(runErr, tui.ErrQuit) {
		plain.PrintPaused(io.Err, c.id)
		return nil
	}
	return runErr
}

// driveRelease drives a release in the cockpit at a terminal, otherwise
// headless: one line per event on stdout (NDJSON with --json), and when it
// stops for a person, what they must do.
func driveRelease(f Factory, ctx context.Context, svc *workflow.Service, s Session, id string) error {
	if useCockpit(f) {
		return runCockpit(f, ctx, cockpitRun{svc: svc, id: id, session: s})
	}
	io := f.IO()
	printer := plain.New(io.Out, f.Flags().JSON).WithToolOutput(io.Err)
	final, err := svc.Run(ctx, id, printer.Event)
	if final == nil || f.Flags().JSON {
		return err
	}
	plain.PrintReleaseOutcome(io.Out, io.Err, final, err)
	return err
}

// measureRelease books a command that drives a whole release headless
// (release --no-tui, resume, rollback) to the release as a whole. The
// cockpit measures itself (input and focus) and is not booked here.
func measureRelease(f Factory, svc *workflow.Service) {
	if !useCockpit(f) {
		f.Measure(svc, effort.WholeRelease, effort.RoleCaptain)
	}
}

// commandEvents prints a command's release events to stderr (NDJSON on
// stdout with --json is the plan or result document, so events stay off
// it), Terraform's lines as they come.
func commandEvents(f Factory) workflow.EventSink {
	return plain.New(f.IO().Err, false).WithToolOutput(f.IO().Err).Event
}

// flowService is a Service with every stage's port, for command.
func flowService(f Factory, ctx context.Context, command, releaseID string, timeout time.Duration) (*workflow.Service, Session, error) {
	return f.Service(ctx, ServiceRequest{Command: command, ReleaseID: releaseID, Needs: NeedFlow, ConvergeTimeout: timeout})
}

// openCockpit is plain `relcap`: at a terminal, the cockpit on the release
// in progress in this release repository (the newest one not finished);
// otherwise, or when there is none, what to run.
func openCockpit(f Factory, cmd *cobra.Command) error {
	ctx := cmd.Context()
	if !useCockpit(f) {
		return cmd.Help()
	}
	p, err := f.LoadProject()
	if err != nil {
		return err
	}
	r, err := inProgress(f, ctx)
	if errors.Is(err, fault.ErrNotFound) {
		envs := ""
		if len(p.Environments) > 0 {
			envs = p.Environments[0].Name
		}
		plain.PrintNothingInProgress(f.IO().Out, p.App, envs)
		return nil
	}
	if err != nil {
		return err
	}
	svc, s, err := flowService(f, ctx, "cockpit", r.ID, 10*time.Minute)
	if err != nil {
		return err
	}
	// Opening the cockpit decides nothing: the captain resumes with a key.
	return runCockpit(f, ctx, cockpitRun{svc: svc, id: r.ID, session: s, hold: true})
}

// inProgress is the release the cockpit opens on. A ledger file that does
// not exist holds none, and opening the cockpit does not create it.
func inProgress(f Factory, ctx context.Context) (*workflow.Release, error) {
	if absent, err := f.LedgerAbsent(); err != nil {
		return nil, err
	} else if absent {
		return nil, fault.ErrNotFound
	}
	q, err := f.Records(ctx)
	if err != nil {
		return nil, err
	}
	return q.InProgress(ctx)
}
