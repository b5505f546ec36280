// Package effort is the cockpit's effort screen: what releases cost in
// staff hours, with terminal charts of hours per release over time and
// effort by step, from the same report relcap report effort prints.
package effort

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/reportfmt"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow/report"
)

// Port is what the effort screen needs: the effort report relcap report
// effort prints with no flags, as of now. report.Reporter implements it.
type Port interface {
	Effort(ctx context.Context) (*report.Effort, error)
}

var _ Port = report.Reporter{}

// Model is the effort screen.
type Model struct {
	screen.Base[keys.Map]
	port Port

	gen     int
	loading bool
	report  *report.Effort
	err     error
	offset  int
}

// New returns the effort screen; it reads the report through port, and
// says reports are unavailable when port is nil.
func New(port Port, th theme.Theme, km keys.Map) Model {
	return Model{Base: screen.NewBase(th, km), port: port}
}

// reportLoadedMsg carries a freshly built report.
type reportLoadedMsg struct {
	gen    int
	report *report.Effort
	err    error
}

// Load asks for a fresh report; the root calls it when the screen opens.
func (m *Model) Load() tea.Cmd {
	if m.port == nil {
		return nil
	}
	m.gen++
	m.loading = true
	port, gen := m.port, m.gen
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rep, err := port.Effort(ctx)
		return reportLoadedMsg{gen: gen, report: rep, err: err}
	}
}

// Init does nothing until the screen is opened.
func (m Model) Init() tea.Cmd { return nil }

// Update handles messages.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	m.Observe(msg)
	switch msg := msg.(type) {
	case reportLoadedMsg:
		if msg.gen == m.gen {
			m.loading, m.report, m.err = false, msg.report, msg.err
		}
	case tea.KeyPressMsg:
		m.offset = screen.ScrollKeys(msg, m.Keys.List, m.offset, 0)
	}
	return m, nil
}

// ShortHelp is the one-line help of the screen.
func (m Model) ShortHelp() []key.Binding { return []key.Binding{m.Keys.List.Up, m.Keys.List.Down} }

// FullHelp is the full help of the screen.
func (m Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{{m.Keys.List.Up, m.Keys.List.Down, m.Keys.List.Top}}
}

// View renders the report and its charts.
func (m Model) View() string {
	if !m.Sized() {
		return ""
	}
	th := m.Theme
	lines := []string{th.Title.Render("Effort") + th.Muted.Render(" · relcap report effort, as of when this screen opened · staff time and machine wait are never added"),
		m.thisRelease()}
	switch {
	case m.loading && m.report == nil:
		lines = append(lines, th.Muted.Render("building the report…"))
	case m.err != nil:
		lines = append(lines, th.Err.Render("report: "+m.err.Error()))
	case m.report == nil:
	case m.report.Empty:
		lines = append(lines, reportfmt.EffortHeadline(m.report)...)
		lines = append(lines, th.Muted.Render(m.report.Message))
	default:
		lines = append(lines, m.body()...)
	}
	off := min(m.offset, max(0, len(lines)-m.Height))
	return m.Fit(strings.Join(lines[off:], "\n"))
}

// thisRelease is the open release's effort now: the figure the status bar
// shows in the same frame (screen.Base.Effort), which the report below
// held when the screen opened.
func (m Model) thisRelease() string {
	r := m.Release()
	if r == nil {
		return ""
	}
	f := m.Effort()
	return m.Theme.Accent.Render(fmt.Sprintf("%s now: active %s, off-tool %s · machine wait %s (not staff time)",
		r.ID, screen.Duration(f.Active), screen.Duration(f.OffTool), screen.Duration(f.Wait)))
}

func (m Model) body() []string {
	th, r := m.Theme, m.report
	// The report's own opening lines (period, releases, coverage,
	// before/after), so the screen and the command state a figure the
	// same way.
	lines := reportfmt.EffortHeadline(r)
	lines = append(lines, fmt.Sprintf("staff per measured release: median %s, p90 %s · machine wait median %s · elapsed median %s",
		screen.Duration(r.Staff.Median.D()), screen.Duration(r.Staff.P90.D()), screen.Duration(r.Wait.Median.D()), screen.Duration(r.Elapsed.Median.D())))

	barW := max(10, m.Width-34)
	lines = append(lines, "", th.Label.Render("Staff hours per release, oldest first"))
	items := r.Releases
	const shown = 20 // the most recent; the HTML report has them all
	if len(items) > shown {
		items = items[len(items)-shown:]
	}
	var top time.Duration
	for _, it := range items {
		if it.Staff != nil {
			top = maxDur(top, it.Staff.D())
		}
	}
	for _, it := range items {
		style := th.OK
		if it.Outcome != report.OutcomeSucceeded {
			style = th.Warn
		}
		if it.Staff == nil {
			what := "unmeasured"
			if it.OffTool > 0 {
				what += " (off-tool " + screen.Duration(it.OffTool.D()) + " logged)"
			}
			lines = append(lines, fmt.Sprintf("%s %-7s %s", it.CreatedAt.UTC().Format("01-02"), screen.Clip(it.Env, 7),
				th.Muted.Render(what+": "+unmeasuredWork(it.Unmeasured))))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %-7s %s %s", it.CreatedAt.UTC().Format("01-02"), screen.Clip(it.Env, 7),
			style.Render(bar(it.Staff.D(), top, barW)), screen.Duration(it.Staff.D())))
	}

	lines = append(lines, "", th.Label.Render("Active effort by step (total) · machine wait beside it"))
	top = 0
	for _, s := range r.ByStep {
		top = maxDur(top, s.Active.Total.D())
	}
	for _, s := range r.ByStep {
		lines = append(lines, fmt.Sprintf("%-12s %s %s · wait %s", screen.Clip(s.Step, 12),
			th.Accent.Render(bar(s.Active.Total.D(), top, barW-8)), screen.Duration(s.Active.Total.D()), screen.Duration(s.Wait.D())))
	}
	return lines
}

// bar is a horizontal bar of d against top in width cells, with eighth
// blocks for the fraction so small differences still show.
func bar(d, top time.Duration, width int) string {
	if top <= 0 || d <= 0 {
		return strings.Repeat(" ", width)
	}
	eighths := int(float64(d) / float64(top) * float64(width*8))
	full, part := eighths/8, eighths%8
	s := strings.Repeat("█", full)
	if part > 0 {
		s += string([]rune(" ▏▎▍▌▋▊▉")[part])
	}
	if pad := width - full - min(part, 1); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// unmeasuredWork says whose work on which step was not measured, and why.
func unmeasuredWork(ws []report.UnmeasuredWork) string {
	parts := make([]string, 0, len(ws))
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("%s on %s (%s)", w.Person, w.Step, w.Reason))
	}
	return strings.Join(parts, "; ")
}
