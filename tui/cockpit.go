// Package tui is the release captain's cockpit: a Bubble Tea v2 program
// over workflow.Service that walks one release through problem → boundary
// → decision → evidence. The root model here routes between one model per
// screen (tui/screen/...), owns the release run stream, the status bar,
// help and notices, and holds no business logic. It is relcap's one
// program root: relcap review opens it on the screen under review, and
// relcap rehearse on its rehearsal route (rehearse.go).
package tui

import (
	"context"
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
	"github.com/relcap/relcap/tui/screen/rehearse"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
)

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
	// rehearsal is the rehearsal route's screen (relcap rehearse), set
	// only when the cockpit opened on it; see asRehearsal.
	rehearsal rehearse.Model
	// booked are the drills' releases the captain's effort went to on the
	// rehearsal route, for RunRehearsal to flush.
	booked *bookedReleases

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
	// hold: opened from the decision map (plain relcap); the first run
	// waits for the captain's key (hold.go).
	hold bool
	// runs is shared by every copy of the model, so Run can wait for the
	// last run to persist its state before returning.
	runs *screen.Runs

	// review, when set, makes this an approver's review of the release
	// (relcap review): no run, the screen under review, the approver's
	// effort.
	review ReviewTarget
	// live is the captain's effort as the Service's clock has it (the one
	// FlushEffort stores), refreshed after each sign of engagement and
	// every tick, for the status bar.
	live        effort.Figure
	notice      string
	noticeErr   bool
	noticeUntil time.Time
	// noticeAt is the state the notice was said in (noticeState), as the
	// message that said it left the cockpit; it is not shown once that
	// changes. noticeSaid marks a notice said during the current message.
	noticeAt   noticeState
	noticeSaid bool
}

// New returns the root model for a release. ctx bounds every run it
// starts; cancelling it stops the run as quitting does. reports feeds the
// effort screen; nil leaves it saying reports are unavailable.
func New(ctx context.Context, svc *workflow.Service, reports effortscreen.Port, releaseID string) Model {
	th, km := theme.New(true), keys.Default()
	m := Model{
		svc: svc, ctx: ctx, releaseID: releaseID, th: th, km: km, help: help.New(), now: time.Now,
		home: home.New(svc, th, km), ownership: ownership.New(svc, svc.Records().Project().OwnershipFile, th, km),
		plan: plan.New(svc, th, km), promote: promote.New(svc, th, km), converge: converge.New(th, km), report: effortscreen.New(reports, th, km),
		runs: &screen.Runs{},
	}
	m.help.Styles = th.Help
	return m
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

// Init asks for the background colour, loads the release (on the
// rehearsal route, the first drill's preview) and starts the clock; the
// first run starts once the release is loaded.
func (m Model) Init() tea.Cmd {
	if m.active == scrRehearse {
		return tea.Batch(tea.RequestBackgroundColor, m.rehearsal.Init(), tick())
	}
	return tea.Batch(tea.RequestBackgroundColor, m.loadRelease(), tick())
}

// Update routes messages: global keys and run events here, keys to the
// active screen, and everything else to every screen (each screen's own
// results are unexported types only it handles, and must reach it even
// when the captain has moved to another screen).
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	active, full := m.active, m.help.ShowAll
	update := Model.update
	if m.active == scrRehearse {
		update = Model.updateRehearsal
	}
	nm, cmd := update(m, msg)
	if nm.noticeSaid {
		// A notice belongs to the state this message left the cockpit
		// in: "approved by bob: continuing" is said as the run starts.
		nm.noticeAt, nm.noticeSaid = nm.noticeState(), false
	}
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
		m.expireNotice(msg.now)
		// One figure per frame: the status bar and every screen read
		// this snapshot (effort.Tracker.Figure), so no two views differ.
		m.live = m.svc.Tracker().Figure(m.releaseID)
		m, cmd := m.broadcast(screen.TickMsg{Now: msg.now, Effort: m.live})
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
		if m.hold {
			return m.held(), cmd
		}
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
	case screen.ReleaseEndedMsg:
		// Ended outside a run (abandoned from the decision map).
		m.release = msg.Release
		return m.broadcast(screen.RunStateMsg{Release: msg.Release})
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
			m.svc.Tracker().Pause(m.releaseID)
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
		m.svc.Tracker().Input(m.releaseID, role, step.String())
	} else {
		m.svc.Tracker().Touch(m.releaseID, role, step.String())
	}
}

// key handles global keys, unless the active screen is taking text.
func (m Model) key(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	m.engaged(true)
	g := m.km.Global
	if m.capturing() && msg.String() != "ctrl+c" {
		// A y/n answer (or an abandon being recorded) takes only its
		// keys; typed text takes every key.
		if !m.takesText() && m.answeredDeadKey(msg) {
			return m, nil
		}
		return m.updateActive(msg)
	}
	switch {
	case key.Matches(msg, g.Quit):
		return m.quit()
	case key.Matches(msg, g.Help):
		m.help.ShowAll = !m.help.ShowAll
	case key.Matches(msg, g.Map):
		m.active = scrHome
	case key.Matches(msg, g.Resume) && m.resumable():
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
		// Stored first, so the report holds this release's figure as
		// the status bar shows it at this instant.
		flush, load := m.flushEffort(), m.report.Load()
		return m, func() tea.Msg {
			if f, ok := flush().(effortFlushedMsg); ok && f.err != nil {
				return screen.NoticeMsg{Text: "effort not stored, so the report would be short of it: " + f.err.Error(), Err: true}
			}
			return load()
		}
	default:
		if m.answeredDeadKey(msg) {
			return m, nil
		}
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

// noticeTTL is how long a notice stays in the status bar.
const noticeTTL = 8 * time.Second

// expireNotice drops the notice once its time is up.
func (m *Model) expireNotice(now time.Time) {
	if !m.noticeUntil.IsZero() && now.After(m.noticeUntil) {
		m.notice, m.noticeUntil = "", time.Time{}
	}
}

func (m *Model) setNotice(text string, isErr bool) {
	m.notice, m.noticeErr, m.noticeUntil, m.noticeSaid = text, isErr, m.now().Add(noticeTTL), true
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
