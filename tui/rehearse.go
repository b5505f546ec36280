package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"charm.land/bubbles/v2/help"
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

// RunRehearsal opens the rehearsal screen and returns when the captain
// leaves it. It waits for a running drill to save before it returns, and
// flushes the captain's effort on the drills' releases to the ledger; err
// is the program's own failure, not a drill's.
func RunRehearsal(ctx context.Context, opts RehearsalOptions) (RehearsalOutcome, error) {
	if opts.Service == nil || opts.Rehearsals == nil {
		return RehearsalOutcome{}, errors.New("tui: a service is required")
	}
	runCtx, cancelRuns := context.WithCancel(ctx)
	defer cancelRuns()
	root := newRehearsalModel(runCtx, opts.Service, opts.Rehearsals, opts.Request)
	progOpts, rec := terminalOptions(ctx, terminal{Input: opts.Input, Output: opts.Output, Env: opts.Env, Secrets: opts.Secrets,
		Record: opts.Record, Width: opts.Width, Height: opts.Height})
	final, err := tea.NewProgram(root, progOpts...).Run()
	// Whatever ended the program, a drill that was going has been
	// cancelled; wait for it to save so it resumes.
	cancelRuns()
	root.screen.Runs().CloseAndWait()
	var ferr error
	for _, id := range root.booked.ids {
		ferr = errors.Join(ferr, opts.Service.FlushEffort(context.WithoutCancel(ctx), id))
	}
	var rerr error
	if rec != nil {
		rerr = rec.Close()
	}
	m, _ := final.(rehearsalModel)
	var o RehearsalOutcome
	if m.svc != nil {
		o.Records, o.RunErr, o.NotRun = m.screen.Outcome()
	}
	if err != nil {
		return o, errors.Join(fmt.Errorf("rehearsal screen: %w", err), rerr)
	}
	return o, errors.Join(ferr, rerr)
}

// bookedReleases are the releases the captain's effort was booked to,
// shared by every copy of the model so RunRehearsal flushes them all.
type bookedReleases struct{ ids []string }

func (b *bookedReleases) add(id string) {
	for _, x := range b.ids {
		if x == id {
			return
		}
	}
	b.ids = append(b.ids, id)
}

// rehearsalModel is the root of the rehearsal session: the header, the
// screen, the help line, the clock and the captain's effort.
type rehearsalModel struct {
	svc    *workflow.Service
	th     theme.Theme
	help   help.Model
	helpK  key.Binding
	w, h   int
	screen rehearse.Model
	booked *bookedReleases
}

func newRehearsalModel(ctx context.Context, svc *workflow.Service, drills *rehearsal.Service, req rehearse.Request) rehearsalModel {
	th := theme.New(true)
	m := rehearsalModel{svc: svc, th: th, help: help.New(), screen: rehearse.New(ctx, drills, req, th, rehearse.DefaultKeys()), booked: &bookedReleases{},
		helpK: key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help"))}
	m.help.Styles = th.Help
	return m
}

func (m rehearsalModel) Init() tea.Cmd {
	return tea.Batch(tea.RequestBackgroundColor, m.screen.Init(), tick())
}

func (m rehearsalModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.BackgroundColorMsg:
		m.th = theme.New(msg.IsDark())
		m.help.Styles = m.th.Help
		m.screen.SetTheme(m.th)
		return m, nil
	case tickMsg:
		m.screen, cmd = m.screen.Update(screen.TickMsg{Now: msg.now})
		return m, tea.Batch(cmd, tick())
	case rehearse.QuitMsg:
		return m, tea.Quit
	case tea.KeyPressMsg:
		m.engaged(true)
		if key.Matches(msg, m.helpK) {
			m.help.ShowAll = !m.help.ShowAll
			m.layout()
			return m, nil
		}
	case tea.FocusMsg:
		m.engaged(false)
		return m, nil
	case tea.BlurMsg:
		if id, _, ok := m.screen.Effort(); ok {
			m.svc.Pause(id)
		}
		return m, nil
	}
	m.screen, cmd = m.screen.Update(msg)
	return m, cmd
}

// engaged books a sign of the captain's engagement to the release the
// drill works through now, on its step, as the cockpit does; before the
// drill has a release (the preview) there is nothing to book it to.
func (m rehearsalModel) engaged(input bool) {
	id, step, ok := m.screen.Effort()
	if !ok {
		return
	}
	m.booked.add(id)
	if input {
		m.svc.Input(id, effort.RoleCaptain, step)
	} else {
		m.svc.Touch(id, effort.RoleCaptain, step)
	}
}

func (m *rehearsalModel) layout() {
	m.help.SetWidth(m.w)
	m.screen.SetSize(m.w, max(1, m.h-2-m.helpHeight()))
}

func (m rehearsalModel) keys() keyMap {
	short := append(m.screen.ShortHelp(), m.helpK)
	return keyMap{short: short, full: [][]key.Binding{short}}
}

func (m rehearsalModel) helpHeight() int {
	return strings.Count(m.help.View(m.keys()), "\n") + 1
}

func (m rehearsalModel) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.ReportFocus = true
	v.WindowTitle = "relcap · rehearse"
	if m.screen.Running() {
		v.ProgressBar = tea.NewProgressBar(tea.ProgressBarIndeterminate, 0)
	}
	return v
}

func (m rehearsalModel) render() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	header := screen.Line(m.th.Header.Render("relcap · recovery rehearsal"), m.w)
	status := m.th.Status.Render(screen.Line(m.status(), m.w))
	return strings.Join([]string{header, m.screen.View(), status, m.help.View(m.keys())}, "\n")
}

// status is the effort line: the captain's time on the drill's release
// so far, as the Service's clock has it.
func (m rehearsalModel) status() string {
	id, _, ok := m.screen.Effort()
	if !ok {
		return " effort: counted once the drill has a release"
	}
	live := m.svc.LiveEffort(id)
	return fmt.Sprintf(" effort on %s: active %s · %d inputs", id, screen.Duration(live.Active), live.Inputs)
}
