package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
)

// keyMap joins the global help with the active screen's (soft-serve).
type keyMap struct {
	short []key.Binding
	full  [][]key.Binding
}

func (k keyMap) ShortHelp() []key.Binding  { return k.short }
func (k keyMap) FullHelp() [][]key.Binding { return k.full }

func (m Model) activeKeys() keyMap {
	g := m.km.Global
	if m.active == scrRehearse {
		// The drill's keys, q among them (it stops a drill safely), and ?.
		short := append(m.rehearsal.ShortHelp(), g.Help)
		return keyMap{short: short, full: [][]key.Binding{short}}
	}
	resume := g.Resume
	resume.SetEnabled(m.resumable())
	var short []key.Binding
	var full [][]key.Binding
	switch m.active {
	case scrHome:
		short, full = m.home.ShortHelp(), m.home.FullHelp()
	case scrOwnership:
		short, full = m.ownership.ShortHelp(), m.ownership.FullHelp()
	case scrPlan:
		short, full = m.plan.ShortHelp(), m.plan.FullHelp()
	case scrPromote:
		short, full = m.promote.ShortHelp(), m.promote.FullHelp()
	case scrConverge:
		short, full = m.converge.ShortHelp(), m.converge.FullHelp()
	case scrEffort:
		short, full = m.report.ShortHelp(), m.report.FullHelp()
	}
	if m.capturing() {
		return keyMap{short: short, full: full}
	}
	short = append(short, resume, g.Map, g.Help, g.Quit)
	full = append(full, []key.Binding{resume, g.Map, g.NextScreen, g.PrevScreen},
		[]key.Binding{g.Ownership, g.Plan, g.Promotion, g.Converge, g.Effort}, []key.Binding{g.Help, g.Quit})
	return keyMap{short: short, full: full}
}

// View renders the header, the active screen, the status bar and help.
func (m Model) View() tea.View {
	if m.active == scrRehearse {
		return m.rehearsalView()
	}
	v := tea.NewView(m.render())
	v.AltScreen = true
	// Focus and mouse events are signs of engagement for the effort
	// clock (and the wheel scrolls); Shift+drag still selects text in
	// most terminals.
	v.ReportFocus = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "relcap · " + m.releaseID
	if m.running {
		if k, _ := m.currentStep(); k == workflow.StepConvergence {
			// The terminal's own progress indicator while Argo CD works.
			v.ProgressBar = tea.NewProgressBar(tea.ProgressBarIndeterminate, 0)
		}
	}
	return v
}

// render is the screen as a string, for View and for tests.
func (m Model) render() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	if m.active == scrRehearse {
		return m.renderRehearsal()
	}
	if m.loadErr != nil {
		return screen.Fit(m.th.Err.Render("cannot open release "+m.releaseID)+"\n"+m.loadErr.Error()+"\n\n"+m.th.Muted.Render("press q to quit"), m.w, m.h)
	}
	var body string
	switch m.active {
	case scrHome:
		body = m.home.View()
	case scrOwnership:
		body = m.ownership.View()
	case scrPlan:
		body = m.plan.View()
	case scrPromote:
		body = m.promote.View()
	case scrConverge:
		body = m.converge.View()
	case scrEffort:
		body = m.report.View()
	}
	hv := m.help.View(m.activeKeys())
	bh := max(1, m.h-3-(strings.Count(hv, "\n")+1))
	return strings.Join([]string{m.header(), screen.Fit(body, m.w, bh), m.statusBar(), m.noticeLine(),
		screen.Fit(hv, m.w, strings.Count(hv, "\n")+1)}, "\n")
}

// noticeLine is the notice, on a line of its own above the key hints,
// which are always the key map's: while the state it was said in lasts
// (noticeState), else blank. At 80 columns a notice squeezed in beside the
// status bar's figures would be cut off.
func (m Model) noticeLine() string {
	if m.notice == "" || m.noticeAt != m.noticeState() {
		return ""
	}
	style := m.th.StatusItem
	if m.noticeErr {
		style = style.Inherit(m.th.Err)
	}
	return screen.Line(style.Render("▸ "+m.notice), m.w)
}

// header is the product name and the screen tabs, each with its status.
func (m Model) header() string {
	th := m.th
	parts := []string{th.Header.Render("relcap")}
	for id := scrHome; id < numScreens; id++ {
		title := screenTitles[id]
		if id != scrHome && m.release != nil {
			st := m.screenStatus(id)
			title = theme.StepIcon(st) + " " + title
		}
		if id == m.active {
			parts = append(parts, th.Selected.Render(" "+title+" "))
		} else {
			parts = append(parts, th.Muted.Render(" "+title+" "))
		}
	}
	return screen.Line(strings.Join(parts, " "), m.w)
}

// screenStatus is the status shown on a screen's tab: its stage's.
func (m Model) screenStatus(id screenID) workflow.StepStatus {
	switch id {
	case scrOwnership:
		return m.release.StageStatus(workflow.StageProblem)
	case scrPlan:
		return m.release.StageStatus(workflow.StageBoundary)
	case scrPromote:
		return m.release.StageStatus(workflow.StageDecision)
	}
	return m.release.StageStatus(workflow.StageEvidence)
}

// statusBar shows release, environment, step and the active effort timer.
func (m Model) statusBar() string {
	th := m.th
	env := "?"
	if m.release != nil {
		env = m.release.Env
	}
	k, st := m.currentStep()
	effort := "effort " + screen.Duration(m.live.Active)
	if m.live.Idle {
		effort += " (idle)"
	}
	stepSeg := th.StatusItem.Inherit(th.StepStyle(st)).Render(theme.StepIcon(st) + " " + k.Title())
	if m.review != NoReview {
		stepSeg = th.StatusItem.Render("review as " + m.svc.Actor())
	}
	segs := []string{
		th.StatusItem.Bold(true).Render(m.releaseID),
		th.StatusItem.Render("env " + env),
		stepSeg,
		th.StatusItem.Render(effort),
	}
	return th.Status.Render(screen.Line(strings.Join(segs, ""), m.w))
}

// String describes the model for test failures.
func (m Model) String() string {
	title := "Effort"
	switch {
	case m.active < numScreens:
		title = screenTitles[m.active]
	case m.active == scrRehearse:
		title = "Rehearsal"
	}
	return fmt.Sprintf("cockpit{release %s, screen %s, running %t, err %v}", m.releaseID, title, m.running, m.runErr)
}
