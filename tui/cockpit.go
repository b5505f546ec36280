// Package tui is the release captain's cockpit: a Bubble Tea v2 program
// over workflow.Service that walks one release through problem → boundary
// → decision → evidence. The root model here routes between one model per
// screen (tui/screen/...), owns the release run stream, the status bar,
// help and notices, and holds no business logic.
package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/screen/converge"
	effortscreen "github.com/relcap/relcap/tui/screen/effort"
	"github.com/relcap/relcap/tui/screen/home"
	"github.com/relcap/relcap/tui/screen/ownership"
	"github.com/relcap/relcap/tui/screen/plan"
	"github.com/relcap/relcap/tui/screen/promote"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
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

// Model is the cockpit's root model.
type Model struct {
	svc       *workflow.Service
	ctx       context.Context // parent of every run; the program's context
	releaseID string
	th        theme.Theme
	km        keys.Map
	help      help.Model
	w, h      int
	now       func() time.Time

	active    screenID
	home      home.Model
	ownership ownership.Model
	plan      plan.Model
	promote   promote.Model
	converge  converge.Model
	report    effortscreen.Model

	release *workflow.Release
	loadErr error
	// gen numbers runs; events and results of an older run are dropped.
	gen     int
	running bool
	cancel  context.CancelFunc
	runErr  error
	// reviewedPlan is the fingerprint the captain reviewed on the plan
	// screen; the run applies only that plan without stopping again.
	reviewedPlan string
	// approvedBy names who approved the plan while the cockpit waited,
	// until the captain's review notice has said it: the run re-checks
	// plan review at once and would replace "approved by" before a
	// captain who looked away saw it.
	approvedBy string
	quitting   bool
	// runs is shared by every copy of the model, so Run can wait for the
	// last run to persist its state before returning.
	runs *runTracker

	// review, when set, makes this an approver's review of the release
	// (relcap review): no run, the screen under review, the approver's
	// effort.
	review ReviewTarget
	// live is the captain's effort as the Service's clock has it (the one
	// FlushEffort stores), refreshed after each sign of engagement and
	// every tick, for the status bar.
	live        workflow.LiveEffort
	notice      string
	noticeErr   bool
	noticeUntil time.Time
}

// New returns the root model for a release. ctx bounds every run it
// starts; cancelling it stops the run as quitting does. reports feeds the
// effort screen; nil leaves it saying reports are unavailable.
func New(ctx context.Context, svc *workflow.Service, reports effortscreen.Port, releaseID string) Model {
	th, km := theme.New(true), keys.Default()
	m := Model{
		svc: svc, ctx: ctx, releaseID: releaseID, th: th, km: km, help: help.New(), now: time.Now,
		home: home.New(svc, th, km), ownership: ownership.New(svc, svc.Project().OwnershipFile, th, km),
		plan: plan.New(svc, th, km), promote: promote.New(svc, th, km), converge: converge.New(th, km), report: effortscreen.New(reports, th, km),
		runs: &runTracker{},
	}
	m.help.Styles = th.Help
	return m
}

// ReviewTarget is what an approver's review screen shows.
type ReviewTarget int

// Review targets.
const (
	NoReview        ReviewTarget = iota
	ReviewPlan                   // relcap review --plan FP
	ReviewPromotion              // relcap review --release ID
)

// asReview turns the cockpit into an approver's review of t: the release
// is never run from here, the plan screen offers no apply, and the time
// spent is the approver's effort on the step under review.
func (m Model) asReview(t ReviewTarget) Model {
	m.review = t
	m.plan = m.plan.AsReview()
	m.active = scrPlan
	if t == ReviewPromotion {
		m.active = scrPromote
	}
	return m
}

// waitingFor is what a release stopped on, as the run that stopped it
// said, for a review, which runs nothing: the screens decide from it
// whether an approval is what the release waits for.
func waitingFor(r *workflow.Release) error {
	k, ok := r.Current()
	if !ok {
		return nil
	}
	st := r.Step(k)
	switch {
	case st.Status != workflow.Blocked:
		return nil
	case k == workflow.StepPromotion && r.Checkpoints.PullRequest != nil:
		return fmt.Errorf("%w: %s", workflow.ErrAwaitingForge, st.Message)
	case k == workflow.StepPromotion && r.Checkpoints.EnvPinned != "" || k == workflow.StepPlanReview:
		return fmt.Errorf("%w: %s", workflow.ErrApprovalRequired, st.Message)
	}
	return nil
}

// Release is the latest snapshot of the release, or nil before it loads.
func (m Model) Release() *workflow.Release { return m.release }

// Err is how the last run ended (nil, blocked, failed) or why the release
// could not be loaded.
func (m Model) Err() error {
	if m.loadErr != nil {
		return m.loadErr
	}
	return m.runErr
}

// Init asks for the background colour, loads the release and starts the
// clock; the first run starts once the release is loaded.
func (m Model) Init() tea.Cmd {
	return tea.Batch(tea.RequestBackgroundColor, m.loadRelease(), tick())
}

// Update routes messages: global keys and run events here, keys to the
// active screen, and everything else to every screen (each screen's own
// results are unexported types only it handles, and must reach it even
// when the captain has moved to another screen).
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	active, full := m.active, m.help.ShowAll
	nm, cmd := m.update(msg)
	if nm.active != active || nm.help.ShowAll != full {
		// The help's height depends on the screen and on ?.
		nm.layout()
	}
	return nm, cmd
}

func (m Model) update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.BackgroundColorMsg:
		m.setTheme(theme.New(msg.IsDark()))
		return m, nil
	case tickMsg:
		if !m.noticeUntil.IsZero() && msg.now.After(m.noticeUntil) {
			m.notice, m.noticeUntil = "", time.Time{}
		}
		m.live = m.svc.LiveEffort(m.releaseID)
		m, cmd := m.broadcast(screen.TickMsg{Now: msg.now})
		return m, tea.Batch(cmd, tick())
	case releaseLoadedMsg:
		if msg.err != nil {
			m.loadErr = msg.err
			return m, nil
		}
		m.release = msg.release
		m.engaged(false)
		var why error
		if m.review != NoReview {
			why = waitingFor(msg.release)
		}
		m, cmd := m.broadcast(screen.RunStateMsg{Release: msg.release, Err: why})
		return m, tea.Batch(cmd, m.beginRun())
	case runStartedMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		return m, waitNext(msg.stream)
	case runEventMsg:
		return m.event(msg)
	case runFinishedMsg:
		return m.finished(msg)
	case screen.ResumeMsg:
		if msg.ReviewedPlan != "" {
			m.reviewedPlan = msg.ReviewedPlan
		}
		return m, m.beginRun()
	case screen.OpenMsg:
		m.active = stepScreen(msg.Step)
		return m, nil
	case screen.NoticeMsg:
		m.setNotice(msg.Text, msg.Err)
		return m, nil
	case approvalsMsg:
		return m.approvalsArrived(msg)
	case forgePollMsg:
		if msg.gen != m.gen || m.running || m.quitting {
			return m, nil // the captain resumed meanwhile, or is leaving
		}
		return m, m.beginRun()
	case effortFlushedMsg:
		return m, nil
	case tea.KeyPressMsg:
		return m.key(msg)
	case tea.FocusMsg:
		// Back at the terminal: engaged again, not an input.
		m.engaged(false)
		return m, nil
	case tea.BlurMsg:
		// Another window has the captain: nothing counts until they
		// are back (DESIGN: effort from input or focus).
		if m.release != nil {
			m.svc.Pause(m.releaseID)
			m.live = m.svc.LiveEffort(m.releaseID)
		}
		return m, nil
	case tea.MouseClickMsg:
		m.engaged(true)
		return m, nil
	case tea.MouseWheelMsg:
		// Scrolling reads the screen: engagement, and the list moves as
		// its arrow keys would move it.
		m.engaged(true)
		switch msg.Mouse().Button {
		case tea.MouseWheelUp:
			return m.updateActive(tea.KeyPressMsg{Code: tea.KeyUp})
		case tea.MouseWheelDown:
			return m.updateActive(tea.KeyPressMsg{Code: tea.KeyDown})
		}
		return m, nil
	}
	return m.broadcast(msg)
}

// engaged books a sign of the captain's engagement (an input when input
// is set: a key press or a click) on the current step to the Service's
// effort clock, in memory; FlushEffort stores it.
func (m *Model) engaged(input bool) {
	if m.release == nil {
		return
	}
	step, role := m.bookedStep(), effort.RoleCaptain
	if m.review != NoReview {
		role = effort.RoleApprover
	}
	if input {
		m.svc.Input(m.releaseID, role, step)
	} else {
		m.svc.Touch(m.releaseID, role, step)
	}
	m.live = m.svc.LiveEffort(m.releaseID)
}

// key handles global keys, unless the active screen is taking text.
func (m Model) key(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	m.engaged(true)
	g := m.km.Global
	if m.active == scrPlan && m.plan.Capturing() && msg.String() != "ctrl+c" {
		var cmd tea.Cmd
		m.plan, cmd = m.plan.Update(msg)
		return m, cmd
	}
	switch {
	case key.Matches(msg, g.Quit):
		return m.quit()
	case key.Matches(msg, g.Help):
		m.help.ShowAll = !m.help.ShowAll
	case key.Matches(msg, g.Map):
		m.active = scrHome
	case key.Matches(msg, g.Resume):
		return m, m.beginRun()
	case key.Matches(msg, g.NextScreen):
		m.active = (m.active + 1) % numScreens
	case key.Matches(msg, g.PrevScreen):
		m.active = (m.active + numScreens - 1) % numScreens
	case key.Matches(msg, g.Ownership):
		m.active = scrOwnership
	case key.Matches(msg, g.Plan):
		m.active = scrPlan
	case key.Matches(msg, g.Promotion):
		m.active = scrPromote
	case key.Matches(msg, g.Converge):
		m.active = scrConverge
	case key.Matches(msg, g.Effort):
		m.active = scrEffort
		return m, m.report.Load()
	default:
		var cmd tea.Cmd
		m, cmd = m.updateActive(msg)
		return m, cmd
	}
	return m, nil
}

// quit stops a running release gracefully: the run's context is cancelled
// and the cockpit waits for it to persist before it flushes the effort and
// exits, so the release resumes where it stopped. A second quit while
// waiting exits at once (Run still waits for the run to save).
func (m Model) quit() (Model, tea.Cmd) {
	if m.running && !m.quitting {
		m.quitting = true
		m.cancel()
		m.setNotice("stopping safely: saving the release so it can resume…", false)
		return m, nil
	}
	m.quitting = true
	return m, tea.Sequence(m.flushEffort(), tea.Quit)
}

// beginRun continues the release from its first unfinished step. It runs
// to the end of plan review first, so the captain reviews a plan before it
// is applied (and confirms a destructive one) on the plan screen.
func (m *Model) beginRun() tea.Cmd {
	if m.review != NoReview {
		return nil // a review never drives the release
	}
	if m.running || m.quitting || m.release == nil || m.release.Status.Done() {
		return nil
	}
	cur, ok := m.release.Current()
	if !ok {
		return nil
	}
	last := workflow.StepConvergence
	switch {
	case cur <= workflow.StepPlanReview:
		last = workflow.StepPlanReview
	case plan.NeedsReview(m.release) && m.reviewedPlan != m.release.Checkpoints.Fingerprint:
		m.active = scrPlan
		notice := "review the plan, then press enter to apply it"
		if m.approvedBy != "" {
			notice = "approved by " + m.approvedBy + ": " + notice
			m.approvedBy = ""
		}
		m.setNotice(notice, false)
		return nil
	}
	m.gen++
	ctx, cancel := context.WithCancel(m.ctx)
	m.cancel, m.running, m.runErr = cancel, true, nil
	*m = m.broadcastInPlace(screen.RunStateMsg{Running: true, Release: m.release})
	return m.startRun(ctx, m.gen, last)
}

// event applies one release event and re-arms the stream.
func (m Model) event(msg runEventMsg) (Model, tea.Cmd) {
	if msg.gen != m.gen {
		return m, nil
	}
	e := msg.event
	if e.Release != nil {
		m.release = e.Release
	}
	if e.Kind == workflow.EventStepStarted && !m.quitting {
		// Follow the run: show the step that just started, and book the
		// captain's time from now on to it (if they are still engaged).
		m.active = stepScreen(e.Step)
		m.svc.Follow(m.releaseID, e.Step)
	}
	m, cmd := m.broadcast(screen.EventMsg{Event: e})
	return m, tea.Batch(cmd, waitNext(msg.stream))
}

// finished handles the end of a run: continue past plan review, stop for
// a person, or show the failure on its step's screen.
func (m Model) finished(msg runFinishedMsg) (Model, tea.Cmd) {
	if msg.gen != m.gen {
		return m, nil
	}
	m.running, m.cancel = false, nil
	if msg.release != nil {
		m.release = msg.release
	}
	m.runErr = msg.err
	if m.release != nil && m.release.Step(workflow.StepApply).Status == workflow.Failed {
		// The captain reviews again whatever plan the retry keeps: the
		// failed apply may have changed what it does.
		m.reviewedPlan = ""
	}
	if m.quitting && errors.Is(msg.err, context.Canceled) {
		// Interrupted on purpose: the release is saved and resumable.
		m.runErr = nil
	}
	if m.quitting {
		// The run has saved its state; now it is safe to leave.
		m, cmd := m.broadcast(screen.RunStateMsg{Release: m.release, Err: msg.err})
		return m, tea.Sequence(cmd, m.flushEffort(), tea.Quit)
	}
	m, cmd := m.broadcast(screen.RunStateMsg{Release: m.release, Err: msg.err})
	cur, unfinished := m.release.Current()
	switch {
	case msg.err == nil && unfinished:
		// RunUntil stopped after plan review: go on unless the plan
		// needs the captain's eyes first.
		return m, tea.Batch(cmd, m.beginRun())
	case msg.err == nil:
		m.active = scrHome
		m.setNotice("release "+m.release.ID+" converged", false)
	case errors.Is(msg.err, workflow.ErrAwaitingForge):
		// Reviews and merges on the forge reach no ledger: poll the
		// forge and re-run the step (it reads the pull request once and
		// returns) when it moved, until it lands or blocks for a person.
		m.active = stepScreen(cur)
		m.setNotice(fmt.Sprintf("waiting on the forge: %s (re-checked every %s)", firstLine(msg.err.Error()), workflow.ForgePollInterval), true)
		return m, tea.Batch(cmd, m.pollForge(m.gen))
	case errors.Is(msg.err, workflow.ErrApprovalRequired):
		// Wait for the approvers where they are: the run goes on by
		// itself once their approvals are in the ledger.
		m.active = stepScreen(cur)
		m.setNotice("waiting for approval: "+firstLine(msg.err.Error()), true)
		return m, tea.Batch(cmd, m.awaitApprovals(m.gen, -1))
	case errors.Is(msg.err, workflow.ErrBlocked):
		m.active = stepScreen(cur)
		m.setNotice("blocked: "+firstLine(msg.err.Error()), true)
	default:
		m.active = stepScreen(cur)
		retry := "r retries"
		var failedApply *workflow.ApplyFailedError
		if errors.As(msg.err, &failedApply) {
			// Its first line is the next safe action; r reviews a plan again.
			msg.err, retry = failedApply, "r plans again"
		}
		m.setNotice("failed: "+firstLine(msg.err.Error())+" ("+retry+")", true)
	}
	return m, cmd
}

// approvalsArrived shows a new count of the approvals the blocked release
// waits for and continues the release once they suffice.
func (m Model) approvalsArrived(msg approvalsMsg) (Model, tea.Cmd) {
	if msg.gen != m.gen || m.running || m.quitting {
		return m, nil // the captain resumed meanwhile, or is leaving
	}
	if msg.err != nil {
		m.setNotice("cannot re-count approvals: "+firstLine(msg.err.Error())+" (r retries)", true)
		return m, nil
	}
	m.release = msg.release
	m, cmd := m.broadcast(screen.RunStateMsg{Release: m.release, Err: m.runErr})
	check := msg.check
	if !check.Satisfied() {
		m.setNotice(fmt.Sprintf("approvals %d/%d (%s): waiting for %d more", len(check.Counted), check.Required, approvers(check), check.Missing()), true)
		return m, tea.Batch(cmd, m.awaitApprovals(m.gen, len(check.Counted)))
	}
	if len(check.Counted) > 0 {
		m.approvedBy = approvers(check)
		m.setNotice("approved by "+m.approvedBy+": continuing", false)
	}
	return m, tea.Batch(cmd, m.beginRun())
}

// approvers lists who approved, in the order they did.
func approvers(c workflow.ApprovalCheck) string {
	names := make([]string, 0, len(c.Counted))
	for _, a := range c.Counted {
		names = append(names, a.Approver)
	}
	if len(names) == 0 {
		return "none yet"
	}
	return strings.Join(names, ", ")
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
	}
	return m, cmd
}

// layout gives every screen the body's size: the window less the header,
// the status bar and the help.
func (m *Model) layout() {
	m.help.SetWidth(m.w)
	bw, bh := m.w, max(1, m.h-2-m.helpHeight())
	m.home.SetSize(bw, bh)
	m.ownership.SetSize(bw, bh)
	m.plan.SetSize(bw, bh)
	m.promote.SetSize(bw, bh)
	m.converge.SetSize(bw, bh)
	m.report.SetSize(bw, bh)
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
}

// noticeTTL is how long a notice stays in the status bar.
const noticeTTL = 8 * time.Second

func (m *Model) setNotice(text string, isErr bool) {
	m.notice, m.noticeErr, m.noticeUntil = text, isErr, m.now().Add(noticeTTL)
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

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
