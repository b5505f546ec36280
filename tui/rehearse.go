package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/screen/rehearse"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/secret"
)

// RehearsalOptions configure a rehearsal session (relcap rehearse at a
// terminal).
type RehearsalOptions struct {
	Service *workflow.Service
	// Rehearsals runs the drills through Service.
	Rehearsals *rehearsal.Service
	Request    rehearse.Request
	// Input, Output, Env, Secrets, Record, Width and Height are as in
	// Options.
	Input         io.Reader
	Output        io.Writer
	Env           []string
	Secrets       *secret.Set
	Record        io.Writer
	Width, Height int
}

// RehearsalOutcome is what a rehearsal session did, for the caller's
// summary and exit code (the same as headless).
type RehearsalOutcome struct {
	// Records are the drills that ran, as they ended.
	Records []*rehearsal.Rehearsal
	// RunErr stopped a drill (refused, blocked, stopped with q).
	RunErr error
	// NotRun are the drills of --all that cannot run here.
	NotRun error
}

// RunRehearsal opens the cockpit on its rehearsal route and returns when
// the captain leaves it. It waits for a running drill to save before it
// returns, and flushes the captain's effort on the drills' releases to
// the ledger; err is the program's own failure, not a drill's.
func RunRehearsal(ctx context.Context, opts RehearsalOptions) (RehearsalOutcome, error) {
	if opts.Service == nil || opts.Rehearsals == nil {
		return RehearsalOutcome{}, errors.New("tui: a service is required")
	}
	runCtx, cancelRuns := context.WithCancel(ctx)
	defer cancelRuns()
	root := New(runCtx, opts.Service, nil, "").asRehearsal(opts.Rehearsals, opts.Request)
	final, rec, err := root.runProgram(ctx, cancelRuns, terminal{Input: opts.Input, Output: opts.Output, Env: opts.Env, Secrets: opts.Secrets,
		Record: opts.Record, Width: opts.Width, Height: opts.Height}, nil)
	var ferr error
	for _, id := range root.booked.ids {
		ferr = errors.Join(ferr, opts.Service.FlushEffort(context.WithoutCancel(ctx), id))
	}
	var rerr error
	if rec != nil {
		rerr = rec.Close()
	}
	var o RehearsalOutcome
	if final.svc != nil {
		o.Records, o.RunErr, o.NotRun = final.rehearsal.Outcome()
	}
	if err != nil {
		return o, errors.Join(fmt.Errorf("rehearsal screen: %w", err), rerr)
	}
	return o, errors.Join(ferr, rerr)
}

// asRehearsal opens the cockpit on the rehearsal route for req: the
// rehearsal screen guides the captain through the drills, which run the
// releases themselves; the cockpit loads and runs none, offers only the
// screen's keys and help, and books the captain's time to the release
// the drill works through.
func (m Model) asRehearsal(drills *rehearsal.Service, req rehearse.Request) Model {
	m.active = scrRehearse
	m.rehearsal = rehearse.New(m.ctx, drills, req, m.th, rehearse.DefaultKeys())
	m.booked = &bookedReleases{}
	return m
}

// bookedReleases are the releases the captain's effort was booked to,
// shared by every copy of the model so RunRehearsal flushes them all.
type bookedReleases struct{ ids []string }

func (b *bookedReleases) add(id string) {
	if !slices.Contains(b.ids, id) {
		b.ids = append(b.ids, id)
	}
}

// updateRehearsal is Update on the rehearsal route: the clock, the help
// key and the captain's engagement here, everything else (q included: it
// stops a running drill safely) to the rehearsal screen.
func (m Model) updateRehearsal(msg tea.Msg) (Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.BackgroundColorMsg:
		m.setTheme(theme.New(msg.IsDark()))
		return m, nil
	case tickMsg:
		m.expireNotice(msg.now)
		if id, _, ok := m.rehearsal.Effort(); ok {
			m.live = m.svc.Tracker().Figure(id)
		}
		m.rehearsal, cmd = m.rehearsal.Update(screen.TickMsg{Now: msg.now, Effort: m.live})
		return m, tea.Batch(cmd, tick())
	case rehearse.QuitMsg:
		return m, tea.Quit
	case tea.KeyPressMsg:
		m.engagedInDrill(true)
		if key.Matches(msg, m.km.Global.Help) {
			m.help.ShowAll = !m.help.ShowAll
			return m, nil // Update lays the screen out again
		}
		if m.answeredDeadKey(msg) {
			return m, nil
		}
	case tea.FocusMsg:
		m.engagedInDrill(false)
		return m, nil
	case tea.BlurMsg:
		if id, _, ok := m.rehearsal.Effort(); ok {
			m.svc.Tracker().Pause(id)
		}
		return m, nil
	}
	return m.updateActive(msg)
}

// engagedInDrill books a sign of the captain's engagement to the release
// the drill works through now, on its step, as the cockpit does on its
// release; before the drill has a release (the preview) there is nothing
// to book it to.
func (m Model) engagedInDrill(input bool) {
	id, step, ok := m.rehearsal.Effort()
	if !ok {
		return
	}
	m.booked.add(id)
	if input {
		m.svc.Tracker().Input(id, effort.RoleCaptain, step.String())
	} else {
		m.svc.Tracker().Touch(id, effort.RoleCaptain, step.String())
	}
}

// rehearsalView is View on the rehearsal route: no mouse (nothing to
// click; the terminal keeps its own selection), and the terminal's
// progress indicator while a drill runs.
func (m Model) rehearsalView() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.ReportFocus = true
	v.WindowTitle = "relcap · rehearse"
	if m.rehearsal.Running() {
		v.ProgressBar = tea.NewProgressBar(tea.ProgressBarIndeterminate, 0)
	}
	return v
}

// renderRehearsal is the rehearsal route's header, screen, effort line
// and help.
func (m Model) renderRehearsal() string {
	header := screen.Line(m.th.Header.Render("relcap · recovery rehearsal"), m.w)
	status := m.th.Status.Render(screen.Line(m.drillEffort(), m.w))
	return strings.Join([]string{header, m.rehearsal.View(), status, m.noticeLine(), m.help.View(m.activeKeys())}, "\n")
}

// drillEffort is the effort line: the drill release's effort figure as of
// the last tick (effort.Tracker.Figure), as every view shows it.
func (m Model) drillEffort() string {
	id, _, ok := m.rehearsal.Effort()
	if !ok {
		return " effort: counted once the drill has a release"
	}
	return fmt.Sprintf(" effort on %s: active %s · %d inputs", id, screen.Duration(m.live.Active), m.live.Inputs)
}
