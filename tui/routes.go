package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
)

// screenID names a screen of the cockpit.
type screenID int

const (
	scrHome screenID = iota
	scrOwnership
	scrPlan
	scrPromote
	scrConverge
	numScreens
	// scrEffort is opened with e; it is not a step, so it has no tab.
	scrEffort = numScreens
	// scrRehearse is the rehearsal route (relcap rehearse): the cockpit
	// opens on it and stays there; see asRehearsal.
	scrRehearse = numScreens + 1
)

var screenTitles = [numScreens]string{"Map", "1 Ownership", "2 Plan", "3 Promotion", "4 Convergence"}

// stepScreen is the screen that shows a step.
func stepScreen(k workflow.StepKind) screenID {
	switch k {
	case workflow.StepOwnership:
		return scrOwnership
	case workflow.StepPlanReview, workflow.StepApply:
		return scrPlan
	case workflow.StepPromotion:
		return scrPromote
	case workflow.StepConvergence:
		return scrConverge
	}
	return scrHome
}

// broadcast sends msg to every screen and batches their commands.
func (m Model) broadcast(msg tea.Msg) (Model, tea.Cmd) {
	cmds := make([]tea.Cmd, 0, numScreens)
	var c tea.Cmd
	m.home, c = m.home.Update(msg)
	cmds = append(cmds, c)
	m.ownership, c = m.ownership.Update(msg)
	cmds = append(cmds, c)
	m.plan, c = m.plan.Update(msg)
	cmds = append(cmds, c)
	m.promote, c = m.promote.Update(msg)
	cmds = append(cmds, c)
	m.converge, c = m.converge.Update(msg)
	cmds = append(cmds, c)
	m.report, c = m.report.Update(msg)
	cmds = append(cmds, c)
	return m, tea.Batch(cmds...)
}

// broadcastInPlace is broadcast for state-only messages whose commands
// are not needed (RunStateMsg{Running: true} starts nothing).
func (m Model) broadcastInPlace(msg tea.Msg) Model {
	m, _ = m.broadcast(msg)
	return m
}

// updateActive sends msg to the active screen only.
func (m Model) updateActive(msg tea.Msg) (Model, tea.Cmd) {
	var cmd tea.Cmd
	switch m.active {
	case scrHome:
		m.home, cmd = m.home.Update(msg)
	case scrOwnership:
		m.ownership, cmd = m.ownership.Update(msg)
	case scrPlan:
		m.plan, cmd = m.plan.Update(msg)
	case scrPromote:
		m.promote, cmd = m.promote.Update(msg)
	case scrConverge:
		m.converge, cmd = m.converge.Update(msg)
	case scrEffort:
		m.report, cmd = m.report.Update(msg)
	case scrRehearse:
		m.rehearsal, cmd = m.rehearsal.Update(msg)
	}
	return m, cmd
}

// layout gives every screen the body's size: the window less the header,
// the status bar and the help.
func (m *Model) layout() {
	m.help.SetWidth(m.w)
	// Header, status bar and notice line, then the help.
	bw, bh := m.w, max(1, m.h-3-m.helpHeight())
	m.home.SetSize(bw, bh)
	m.ownership.SetSize(bw, bh)
	m.plan.SetSize(bw, bh)
	m.promote.SetSize(bw, bh)
	m.converge.SetSize(bw, bh)
	m.report.SetSize(bw, bh)
	m.rehearsal.SetSize(bw, bh)
}

func (m Model) helpHeight() int {
	return strings.Count(m.help.View(m.activeKeys()), "\n") + 1
}

func (m *Model) setTheme(th theme.Theme) {
	m.th = th
	m.help.Styles = th.Help
	m.home.SetTheme(th)
	m.ownership.SetTheme(th)
	m.plan.SetTheme(th)
	m.promote.SetTheme(th)
	m.converge.SetTheme(th)
	m.report.SetTheme(th)
	m.rehearsal.SetTheme(th)
}

// currentStep is the step the status bar names and effort is booked to.
// bookedStep is the step the captain's time goes to: the one on the
// screen they look at. The plan screen shows the plan under review until
// its apply runs; the map and the effort screen book to the current step.
func (m Model) bookedStep() workflow.StepKind {
	cur, st := m.currentStep()
	switch m.active {
	case scrOwnership:
		return workflow.StepOwnership
	case scrPlan:
		if cur == workflow.StepApply && st == workflow.Running {
			return workflow.StepApply
		}
		return workflow.StepPlanReview
	case scrPromote:
		return workflow.StepPromotion
	case scrConverge:
		return workflow.StepConvergence
	}
	return cur
}

func (m Model) currentStep() (workflow.StepKind, workflow.StepStatus) {
	if m.release == nil {
		return workflow.StepOwnership, workflow.Pending
	}
	if k, ok := m.release.Current(); ok {
		return k, m.release.Step(k).Status
	}
	return workflow.StepConvergence, workflow.Succeeded
}
