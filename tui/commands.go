package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/forge"
)

// releaseLoadedMsg is the release read from the ledger at start.
type releaseLoadedMsg struct {
	release *workflow.Release
	err     error
}

// runStartedMsg carries the stream of a run that just started.
type runStartedMsg struct {
	gen    int
	stream *runStream
}

// runEventMsg is one event of a run; stream is re-armed after it.
type runEventMsg struct {
	gen    int
	event  workflow.Event
	stream *runStream
}

// runFinishedMsg is how a run ended.
type runFinishedMsg struct {
	gen     int
	release *workflow.Release
	err     error
}

// tickMsg is the once-a-second clock of the status bar.
type tickMsg struct{ now time.Time }

// effortFlushedMsg says the captain's effort was stored.
type effortFlushedMsg struct{ err error }

// runStream adapts a run's EventSink to the program, one message at a
// time: the sink puts events on a buffered channel, waitNext reads one and
// Update re-arms it, so a slow screen slows nothing but itself until the
// buffer fills (STYLE §4 Streams).
type runStream struct {
	gen    int
	events chan workflow.Event
	// result receives the run's outcome once, after events is closed.
	result chan runFinishedMsg
}

// streamBuffer is how many events may wait for the UI before the run's
// sink blocks.
const streamBuffer = 256

// loadRelease reads the release to open.
func (m Model) loadRelease() tea.Cmd {
	svc, id, ctx := m.svc, m.releaseID, m.ctx
	return func() tea.Msg {
		r, err := svc.Records().Release(ctx, id)
		if err == nil {
			// The effort figure starts from what the ledger holds
			// (effort.Tracker.Figure): earlier sessions, other people.
			_, err = svc.Effort(ctx, id)
		}
		return releaseLoadedMsg{release: r, err: err}
	}
}

// startRun starts Service.RunUntil in its own goroutine and returns its
// stream. The goroutine is counted in runs, so Run waits for the release
// to be saved even when the program was killed.
func (m Model) startRun(ctx context.Context, gen int, last workflow.StepKind) tea.Cmd {
	svc, id, runs := m.svc, m.releaseID, m.runs
	return func() tea.Msg {
		s := &runStream{gen: gen, events: make(chan workflow.Event, streamBuffer), result: make(chan runFinishedMsg, 1)}
		if !runs.Start() {
			// The cockpit is closing: start nothing it would have to wait for.
			return runFinishedMsg{gen: gen, err: context.Canceled}
		}
		go func() {
			defer runs.Done()
			r, err := svc.RunUntil(ctx, id, func(e workflow.Event) {
				select {
				case s.events <- e:
				case <-ctx.Done():
					// Nobody may be reading any more; the release is
					// persisted regardless, the event is only for show.
				}
			}, last)
			s.result <- runFinishedMsg{gen: gen, release: r, err: err}
			close(s.events)
		}()
		return runStartedMsg{gen: gen, stream: s}
	}
}

// waitNext reads one item of a run's stream: the next event or, once the
// events are drained, the outcome.
func waitNext(s *runStream) tea.Cmd {
	return func() tea.Msg {
		if e, ok := <-s.events; ok {
			return runEventMsg{gen: s.gen, event: e, stream: s}
		}
		return <-s.result
	}
}

// flushEffort stores the effort measured so far.
func (m Model) flushEffort() tea.Cmd {
	svc, id, ctx := m.svc, m.releaseID, context.WithoutCancel(m.ctx)
	return func() tea.Msg {
		return effortFlushedMsg{err: svc.FlushEffort(ctx, id)}
	}
}

// tick schedules the next clock message.
func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg{now: t} })
}

// forgePollMsg re-runs a promotion that waits on the forge; gen is the
// run that waited, so a later run makes it stale.
type forgePollMsg struct{ gen int }

// pollForge reads the pull request every ForgePollInterval, off the
// Update loop, and asks for a re-run of the step once it moved on the
// forge (a review, a merge, a close, a push): re-running every interval
// would journal a step per poll. A read error asks for a re-run too, so
// the step reports it.
func (m Model) pollForge(gen int) tea.Cmd {
	svc, parent, id := m.svc, m.ctx, m.releaseID
	return func() tea.Msg {
		for {
			select {
			case <-parent.Done():
				return nil
			case <-time.After(forge.PollInterval):
			}
			if moved, err := svc.ForgeMoved(parent, id); moved || err != nil {
				return forgePollMsg{gen: gen}
			}
		}
	}
}

// approvalsMsg is a new count of the approvals a blocked release waits
// for, read after the ledger changed: a teammate approved with relcap
// approve on their own machine, or the captain did on the plan screen.
type approvalsMsg struct {
	gen     int // the run that blocked; a later run makes it stale
	release *workflow.Release
	check   approval.Check
	err     error
}

// awaitApprovals waits, off the update loop, until the count of approvals
// the release waits for differs from seen (or is satisfied), and reports
// it. The ledger's change feed starts before the first count, so an
// approval given in between is not missed. It returns nil when the ledger
// cannot report changes: the captain presses r instead.
func (m Model) awaitApprovals(gen, seen int) tea.Cmd {
	svc, parent, id := m.svc, m.ctx, m.releaseID
	return func() tea.Msg {
		ctx, cancel := context.WithCancel(parent)
		defer cancel()
		changes := svc.Records().Changes(ctx)
		if changes == nil {
			return nil
		}
		for {
			r, err := svc.Records().Release(ctx, id)
			if err != nil {
				return approvalsMsg{gen: gen, err: err}
			}
			check, waiting, err := svc.Records().AwaitedApprovals(ctx, r)
			switch {
			case err != nil:
				return approvalsMsg{gen: gen, err: err}
			case !waiting || check.Satisfied() || len(check.Counted) != seen:
				return approvalsMsg{gen: gen, release: r, check: check}
			}
			if _, open := <-changes; !open {
				return nil // the cockpit is closing
			}
		}
	}
}
