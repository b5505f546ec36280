// Package rehearse is the cockpit's rehearsal screen (relcap rehearse at a
// terminal): it guides the captain through each drill and its recovery —
// what the drill will do and the baseline it returns to, a confirmation
// before anything is broken, the phases as they happen, the four answers
// relcap showed once the failure was detected, the recovery and the
// verdict. The drill runs in rehearsal.Service; this screen only starts it,
// reads its record and shows it.
package rehearse

import (
	"context"
	"errors"
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/rehearsal"
)

// Request is what the captain asked for on the command line: drills in
// an environment, or one saved rehearsal to resume.
type Request struct {
	Env     string
	Drills  []rehearsal.Drill
	IKnow   string
	Timeout time.Duration
	// Resume is the ID of a saved rehearsal to continue (--resume);
	// Env and Drills are then unused.
	Resume string
}

// Keys are the screen's keys.
type Keys struct {
	Start   key.Binding
	Cleanup key.Binding
	Quit    key.Binding
}

// DefaultKeys are enter to start (or go on to the next drill), c to clean
// up a stopped drill, q to stop safely or leave.
func DefaultKeys() Keys {
	return Keys{
		Start:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "start the drill")),
		Cleanup: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "clean up (back to the baseline)")),
		Quit:    key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
}

// stage is where the current drill is on the screen.
type stage int

const (
	stLoading  stage = iota // reading the preview or the saved record
	stReady                 // shown, waiting for enter
	stRunning               // the drill (or its resumption) runs
	stStopping              // q pressed: waiting for the drill to save
	stCleaning              // c pressed: the cleanup runs
	stEnded                 // this drill is over (passed, failed, stopped, not run)
)

// item is one drill of the session.
type item struct {
	drill   rehearsal.Drill
	preview *rehearsal.Preview
	// rh is the latest record: polled from the ledger while the drill
	// runs, then the one the Service returned.
	rh *rehearsal.Rehearsal
	// err is why the drill could not run or continue (refused, blocked,
	// stopped): not a failed drill, which is rh.State.
	err error
	// notRun is set when the drill cannot run here (ErrUsage) while
	// other drills of --all still can: counted against the run.
	notRun bool
	// stopped is set when the captain stopped the drill with q.
	stopped bool
	// log is the tail of the drill's release events.
	log []string
	// release and step are where the drill's releases were last seen
	// working, for the captain's effort.
	release string
	step    workflow.StepKind
}

// Model is the rehearsal screen.
type Model struct {
	// Base's run state stays empty: the root runs no release here. The
	// screen runs its drills itself, and Running says whether one runs.
	screen.Base[Keys]
	svc *rehearsal.Service
	ctx context.Context
	req Request

	items  []item
	cur    int
	stage  stage
	gen    int
	cancel context.CancelFunc
	// startedAt is when the current drill was started from this screen,
	// by the screen's clock, for the elapsed time while it runs.
	startedAt time.Time
	// quit is set when the captain asked to leave once the drill saved.
	quit bool
	runs *screen.Runs
}

// New returns the screen for req. ctx bounds every drill it starts;
// cancelling it stops the drill as q does.
func New(ctx context.Context, svc *rehearsal.Service, req Request, th theme.Theme, km Keys) Model {
	m := Model{Base: screen.NewBase(th, km), svc: svc, ctx: ctx, req: req, runs: &screen.Runs{}}
	if req.Resume != "" {
		m.items = []item{{}}
	}
	for _, d := range req.Drills {
		m.items = append(m.items, item{drill: d})
	}
	return m
}

// Runs counts the drills running in the background, so the program's
// owner waits for the last one to save before it returns; it is shared
// by every copy of the model.
func (m Model) Runs() *screen.Runs { return m.runs }

// QuitMsg says the screen is done: every drill saved, the captain asked
// to leave.
type QuitMsg struct{}

// Messages of the screen's own commands.
type (
	previewMsg struct {
		idx     int
		preview *rehearsal.Preview
		rh      *rehearsal.Rehearsal
		err     error
	}
	startedMsg struct {
		gen    int
		stream *stream
	}
	eventMsg struct {
		gen   int
		event workflow.Event
		// rh is the record as saved when the event was sent, when it
		// was read (see run); nil otherwise.
		rh     *rehearsal.Rehearsal
		stream *stream
	}
	finishedMsg struct {
		gen int
		rh  *rehearsal.Rehearsal
		err error
	}
)

// stream adapts the drill's EventSink to the program, one message at a
// time (as the cockpit's run stream does).
type stream struct {
	gen    int
	events chan sent
	result chan finishedMsg
}

// sent is one event and the record read when it was sent.
type sent struct {
	event workflow.Event
	rh    *rehearsal.Rehearsal
}

// Init reads what the first drill will do.
func (m Model) Init() tea.Cmd { return m.load(0) }

// load reads drill idx's preview, or the saved rehearsal to resume.
func (m Model) load(idx int) tea.Cmd {
	if idx >= len(m.items) {
		return nil
	}
	svc, ctx, req, it := m.svc, m.ctx, m.req, m.items[idx]
	return func() tea.Msg {
		if req.Resume != "" {
			rh, err := svc.Load(ctx, req.Resume)
			return previewMsg{idx: idx, rh: rh, err: err}
		}
		p, err := svc.Preview(ctx, rehearsal.Request{Env: req.Env, Drill: it.drill, IKnow: req.IKnow, Timeout: req.Timeout})
		if err != nil {
			return previewMsg{idx: idx, err: err}
		}
		return previewMsg{idx: idx, preview: &p}
	}
}

// Update handles keys, the clock and the drill's messages.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	m.Observe(msg)
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		return m.key(msg)
	case previewMsg:
		return m.loaded(msg), nil
	case startedMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		return m, waitNext(msg.stream)
	case eventMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		m.event(msg.event)
		if msg.rh != nil {
			m.items[m.cur].rh = msg.rh
		}
		return m, waitNext(msg.stream)
	case finishedMsg:
		return m.finished(msg)
	}
	return m, nil
}

func (m Model) loaded(msg previewMsg) Model {
	if msg.idx != m.cur {
		return m
	}
	it := &m.items[msg.idx]
	it.preview, it.err = msg.preview, msg.err
	if msg.rh != nil {
		it.rh, it.drill = msg.rh, msg.rh.Drill
	}
	switch {
	case msg.err != nil && len(m.items) > 1 && errors.Is(msg.err, fault.ErrUsage):
		// Not runnable here (not configured, not built): said, counted
		// against the run, and the other drills still run, as headless.
		it.notRun = true
		m.stage = stEnded
	case msg.err != nil:
		m.stage = stEnded
		m.items = m.items[:m.cur+1] // refused or blocked: the run ends here, as headless
	case it.rh != nil && it.rh.State.Done():
		m.stage = stEnded // resuming a finished rehearsal shows it as it is
	default:
		m.stage = stReady
	}
	return m
}

func (m Model) key(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	switch {
	case key.Matches(msg, m.Keys.Quit):
		switch m.stage {
		case stRunning:
			// Stop safely: the drill's context ends, it saves its phase,
			// and the screen says how to resume or clean up.
			m.stage, m.items[m.cur].stopped = stStopping, true
			m.cancel()
			return m, nil
		case stStopping, stCleaning:
			m.quit = true // leave as soon as it has saved
			return m, nil
		}
		return m, func() tea.Msg { return QuitMsg{} }
	case key.Matches(msg, m.Keys.Start):
		switch {
		case m.stage == stReady:
			return m.start()
		case m.stage == stEnded && m.cur+1 < len(m.items) && m.canGoOn():
			m.cur++
			m.stage = stLoading
			return m, m.load(m.cur)
		}
	case key.Matches(msg, m.Keys.Cleanup):
		if m.canCleanup() {
			return m.cleanup()
		}
	}
	return m, nil
}

// canGoOn is whether the next drill may start after the current one: not
// after a drill that stopped (resume or clean it up first), as headless.
func (m Model) canGoOn() bool {
	it := m.items[m.cur]
	return it.notRun || (it.err == nil && it.rh != nil && it.rh.State.Done())
}

// canCleanup is whether c applies: a drill that stopped before it ended
// (by q or on an error) and is saved unfinished.
func (m Model) canCleanup() bool {
	it := m.items[m.cur]
	return m.stage == stEnded && it.rh != nil && !it.rh.State.Done()
}

// start runs the drill (or resumes the saved one) in the background.
func (m Model) start() (Model, tea.Cmd) {
	svc, req, drill := m.svc, m.req, m.items[m.cur].drill
	return m.run(func(ctx context.Context, sink workflow.EventSink) (*rehearsal.Rehearsal, error) {
		if req.Resume != "" {
			return svc.Resume(ctx, req.Resume, sink)
		}
		return svc.Rehearse(ctx, rehearsal.Request{Env: req.Env, Drill: drill, IKnow: req.IKnow, Timeout: req.Timeout}, sink)
	}, stRunning)
}

// cleanup undoes the stopped drill from the screen.
func (m Model) cleanup() (Model, tea.Cmd) {
	svc, id := m.svc, m.items[m.cur].rh.ID
	return m.run(func(ctx context.Context, sink workflow.EventSink) (*rehearsal.Rehearsal, error) {
		// The cleanup runs to its end even when the captain quits: it
		// is what puts the environment back.
		return svc.Cleanup(context.WithoutCancel(ctx), id, sink)
	}, stCleaning)
}

func (m Model) run(f func(context.Context, workflow.EventSink) (*rehearsal.Rehearsal, error), st stage) (Model, tea.Cmd) {
	m.gen++
	gen, runs, svc := m.gen, m.runs, m.svc
	ctx, cancel := context.WithCancel(m.ctx)
	m.cancel, m.stage, m.startedAt = cancel, st, m.Now
	it := &m.items[m.cur]
	it.err, it.stopped, it.log = nil, false, nil
	return m, func() tea.Msg {
		s := &stream{gen: gen, events: make(chan sent, 256), result: make(chan finishedMsg, 1)}
		if !runs.Start() {
			cancel()
			return finishedMsg{gen: gen, err: context.Canceled}
		}
		go func() {
			defer runs.Done()
			defer cancel()
			id, lastRelease := "", ""
			rh, err := f(ctx, func(e workflow.Event) {
				// The record is read here, in the drill's goroutine,
				// when a step starts or ends or another release takes
				// over: each phase is saved before the next phase's
				// first event, so the screen shows the phases in the
				// order they happened, however far behind it is.
				if id == "" && e.Release != nil {
					id = e.Release.Checkpoints.Rehearsal
				}
				var rec *rehearsal.Rehearsal
				if id != "" && (e.Kind == workflow.EventStepStarted || e.Kind == workflow.EventStepFinished || e.ReleaseID != lastRelease) {
					if r, err := svc.Load(ctx, id); err == nil {
						rec = r
					}
				}
				lastRelease = e.ReleaseID
				select {
				case s.events <- sent{event: e, rh: rec}:
				case <-ctx.Done():
					// Nobody may read any more; the record is saved
					// regardless, the event is only for show.
				}
			})
			s.result <- finishedMsg{gen: gen, rh: rh, err: err}
			close(s.events)
		}()
		return startedMsg{gen: gen, stream: s}
	}
}

func waitNext(s *stream) tea.Cmd {
	return func() tea.Msg {
		if e, ok := <-s.events; ok {
			return eventMsg{gen: s.gen, event: e.event, rh: e.rh, stream: s}
		}
		return <-s.result
	}
}

// logLines is how many of the drill's latest events the screen keeps.
const logLines = 6

// event notes one event of the drill's releases: the rehearsal's ID (the
// releases carry it) until the record is read, the log tail, and where
// the captain's time goes.
func (m *Model) event(e workflow.Event) {
	it := &m.items[m.cur]
	if e.Release != nil && e.Release.Checkpoints.Rehearsal != "" && it.rh == nil {
		it.rh = &rehearsal.Rehearsal{ID: e.Release.Checkpoints.Rehearsal, Drill: it.drill, Env: e.Release.Env, State: rehearsal.StateRunning, Phase: rehearsal.PhaseBaseline}
		if it.preview != nil {
			it.rh.Baseline, it.rh.Expected = it.preview.Baseline, it.preview.Expected
		}
	}
	if e.ReleaseID != "" {
		it.release, it.step = e.ReleaseID, e.Step
	}
	line := e.Message
	if line == "" {
		line = e.Step.String() + " " + e.Status.String()
	}
	if e.ReleaseID != "" {
		line = e.ReleaseID + ": " + line
	}
	it.log = append(it.log, line)
	if len(it.log) > logLines {
		it.log = it.log[len(it.log)-logLines:]
	}
}

func (m Model) finished(msg finishedMsg) (Model, tea.Cmd) {
	if msg.gen != m.gen {
		return m, nil
	}
	it := &m.items[m.cur]
	if msg.rh != nil {
		it.rh = msg.rh
	}
	it.err = msg.err
	if it.stopped && msg.err == nil && it.rh != nil && it.rh.State.Done() {
		it.stopped = false // it ended before the stop reached it
	}
	m.stage, m.cancel = stEnded, nil
	if m.quit {
		return m, func() tea.Msg { return QuitMsg{} }
	}
	return m, nil
}

// Outcome is what the session did, for the exit code: the records of the
// drills that ran, the errors that stopped one (refused, blocked,
// stopped: as headless, the first ends the run), and the drills that
// could not run here.
func (m Model) Outcome() (records []*rehearsal.Rehearsal, runErr, notRun error) {
	for _, it := range m.items {
		if it.rh != nil && it.rh.StartedAt.IsZero() {
			// Only an ID seen on an event: the drill never returned a
			// record (the program ended first); the ledger has it.
			records = append(records, &rehearsal.Rehearsal{ID: it.rh.ID, Drill: it.drill, Env: it.rh.Env, State: rehearsal.StateRunning, Phase: it.rh.Phase})
		} else if it.rh != nil {
			records = append(records, it.rh)
		}
		switch {
		case it.notRun:
			notRun = errors.Join(notRun, fmt.Errorf("%s not run: %w", it.drill, it.err))
		case it.err != nil:
			runErr = errors.Join(runErr, it.err)
		case it.rh != nil && !it.rh.State.Done():
			runErr = errors.Join(runErr, fmt.Errorf("%w: rehearsal %s stopped at phase %s before it ended", context.Canceled, it.rh.ID, it.rh.Phase))
		}
	}
	return records, runErr, notRun
}

// Effort is where the captain's time on the screen goes: the release the
// drill works through now and its step; ok is false before the drill has
// a release (the preview), when nothing is booked.
func (m Model) Effort() (releaseID string, step workflow.StepKind, ok bool) {
	if len(m.items) == 0 {
		return "", 0, false
	}
	it := m.items[m.cur]
	return it.release, it.step, it.release != ""
}

// Running reports whether a drill or a cleanup runs.
func (m Model) Running() bool {
	return m.stage == stRunning || m.stage == stStopping || m.stage == stCleaning
}

// ShortHelp is the keys that apply now.
func (m Model) ShortHelp() []key.Binding {
	var ks []key.Binding
	start := m.Keys.Start
	switch {
	case m.stage == stReady && m.req.Resume != "":
		start.SetHelp("enter", "resume the drill")
		ks = append(ks, start)
	case m.stage == stReady:
		ks = append(ks, start)
	case m.stage == stEnded && m.cur+1 < len(m.items) && m.canGoOn():
		start.SetHelp("enter", "next drill: "+string(m.items[m.cur+1].drill))
		ks = append(ks, start)
	}
	if m.canCleanup() {
		ks = append(ks, m.Keys.Cleanup)
	}
	q := m.Keys.Quit
	if m.stage == stRunning {
		q.SetHelp("q", "stop safely (saved, resumable)")
	}
	return append(ks, q)
}

// FullHelp is ShortHelp in one column.
func (m Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }
