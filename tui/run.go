package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	xterm "github.com/charmbracelet/x/term"

	"github.com/relcap/relcap/tui/asciicast"
	"github.com/relcap/relcap/tui/screen"
	effortscreen "github.com/relcap/relcap/tui/screen/effort"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/secret"
)

// Options configure a cockpit session.
type Options struct {
	// Service drives the release; required.
	Service *workflow.Service
	// Reports feeds the effort screen (e); nil says reports are unavailable.
	Reports effortscreen.Port
	// ReleaseID is the release to open (started or resumed); required.
	ReleaseID string
	// Input and Output are the terminal; nil means stdin and stdout.
	Input  io.Reader
	Output io.Writer
	// Env is the environment (os.Environ()); it decides the colour profile,
	// so NO_COLOR is honoured.
	Env []string
	// Secrets, when set, are masked in everything written to Output and
	// the recording.
	Secrets *secret.Set
	// Record, when set, receives an asciicast v2 recording of exactly what
	// was written to the terminal.
	Record io.Writer
	// Notices, when set, are shown in the status bar as they arrive: what
	// happened outside the cockpit that the captain should know (the demo's
	// second approver acting, say).
	Notices <-chan string
	// Review, when set, opens an approver's review of the release instead
	// of the cockpit: the plan or the pinned change, read-only but for
	// approving (which signs); its time is the approver's effort.
	Review ReviewTarget
	// Width and Height are the initial size when Output is not a terminal
	// (tests, recordings made without a TTY); ignored otherwise.
	Width, Height int
	// Hold opens the cockpit on the decision map and runs nothing until
	// the captain presses the resume key (plain relcap).
	Hold bool
}

// terminal is where a program of relcap's draws, and what it records.
type terminal struct {
	Input   io.Reader
	Output  io.Writer
	Env     []string
	Secrets *secret.Set
	Record  io.Writer
	// Width and Height are the size when Output is not a terminal.
	Width, Height int
}

// terminalOptions are the program options for term: its input, its
// output with secrets masked, its size, and, when Record is set, an
// asciicast recording of exactly what was written (rec, to be closed once
// the program ends; nil without Record).
func terminalOptions(ctx context.Context, term terminal) ([]tea.ProgramOption, *asciicast.Writer) {
	progOpts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithEnvironment(term.Env)}
	if term.Input != nil {
		progOpts = append(progOpts, tea.WithInput(term.Input))
	}
	out := term.Output
	if out == nil {
		out = os.Stdout
	}
	w, h := term.Width, term.Height
	if f, ok := out.(xterm.File); ok && xterm.IsTerminal(f.Fd()) {
		if tw, th, err := xterm.GetSize(f.Fd()); err == nil {
			w, h = tw, th
		}
	} else if w == 0 || h == 0 {
		w, h = 80, 24
	}
	var rec *asciicast.Writer
	if term.Record != nil {
		rec = asciicast.NewWriter(term.Record, w, h, time.Now)
		out = asciicast.Tee(out, rec)
		// The recording follows resizes; a filter sees them before Update
		// and does no more than note the size.
		progOpts = append(progOpts, tea.WithFilter(func(_ tea.Model, msg tea.Msg) tea.Msg {
			if ws, ok := msg.(tea.WindowSizeMsg); ok {
				rec.Resize(ws.Width, ws.Height)
			}
			return msg
		}))
	}
	// Secrets are masked at their source; this is the last line of defence,
	// before the terminal and the recording alike: the tee sits behind it,
	// so the recording gets the very bytes the terminal does.
	out = term.Secrets.Writer(out)
	return append(progOpts, tea.WithOutput(out), tea.WithWindowSize(w, h)), rec
}

// runProgram runs the cockpit's one program over m at term and returns
// the final model and the recording to close (nil without one). Whatever
// ended the program (quit, ctx, an error), it cancels the runs m
// started through cancelRuns (a release run, a drill) and waits for them
// to save, so they resume. notices, when set, reach the status bar as
// they arrive.
func (m Model) runProgram(ctx context.Context, cancelRuns context.CancelFunc, term terminal, notices <-chan string) (Model, *asciicast.Writer, error) {
	progOpts, rec := terminalOptions(ctx, term)
	prog := tea.NewProgram(m, progOpts...)
	if notices != nil {
		go func() {
			for {
				select {
				case n, ok := <-notices:
					if !ok {
						return
					}
					prog.Send(screen.NoticeMsg{Text: n})
				case <-m.ctx.Done():
					return
				}
			}
		}()
	}
	final, err := prog.Run()
	cancelRuns()
	m.runs.CloseAndWait()
	if m.active == scrRehearse {
		m.rehearsal.Runs().CloseAndWait()
	}
	fm, _ := final.(Model)
	return fm, rec, err
}

// ErrQuit is returned by Run when the captain closed the cockpit before
// the release finished and nothing blocked it; the release is saved and
// `relcap resume ID` continues it.
var ErrQuit = errors.New("cockpit closed before the release finished")

// Run opens the cockpit on a release and returns when the captain quits
// or ctx ends. It returns nil when the release converged; the last run's
// error when it stopped on one (wrapping fault.ErrBlocked when a person
// must act, so callers map it to exit 3); ErrQuit when the captain left a
// resumable release; or the program's error (wrapping ctx.Err() when ctx
// was cancelled). It waits for a running step to save its state before it
// returns, and flushes the captain's effort to the ledger.
func Run(ctx context.Context, opts Options) error {
	if opts.Service == nil || opts.ReleaseID == "" {
		return errors.New("tui: a service and a release ID are required")
	}
	// Runs get their own cancel, so a program that ends for any reason
	// (quit, error, panic) stops the run it leaves behind.
	runCtx, cancelRuns := context.WithCancel(ctx)
	defer cancelRuns()
	root := New(runCtx, opts.Service, opts.Reports, opts.ReleaseID)
	if opts.Review != NoReview {
		root = root.asReview(opts.Review)
	}
	root.hold = opts.Hold
	m, rec, err := root.runProgram(ctx, cancelRuns, terminal{Input: opts.Input, Output: opts.Output, Env: opts.Env, Secrets: opts.Secrets,
		Record: opts.Record, Width: opts.Width, Height: opts.Height}, opts.Notices)
	ferr := opts.Service.FlushEffort(context.WithoutCancel(ctx), opts.ReleaseID)
	var rerr error
	if rec != nil {
		rerr = rec.Close()
	}
	if err != nil {
		return errors.Join(fmt.Errorf("cockpit: %w", err), rerr)
	}
	if err := errors.Join(ferr, rerr); err != nil {
		return err
	}
	if opts.Review != NoReview {
		return m.loadErr // closing a review is its normal end
	}
	switch {
	case m.Err() != nil:
		return m.Err()
	case m.Release() != nil && m.Release().Status == workflow.ReleaseConverged:
		return nil
	}
	return fmt.Errorf("%w: release %s is saved; continue with relcap resume %s", ErrQuit, opts.ReleaseID, opts.ReleaseID)
}
