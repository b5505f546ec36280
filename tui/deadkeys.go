package tui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/workflow/input"
)

// A key press is never dropped without a word. The hint line is the
// screen's key map (activeKeys, with the actions that do not apply now
// disabled), and a key that matches none of its enabled bindings is
// answered at once in the notice line: "busy: …" while a step runs or the
// screen is loading, why it is not available otherwise. Nothing is queued:
// an enter or a y typed before the plan is on the screen must not apply a
// plan the captain has not seen.

// deadKey says why msg does nothing now, when it matches no enabled
// binding of bindings; busy is what the cockpit is doing, if anything.
func deadKey(msg tea.KeyPressMsg, bindings [][]key.Binding, busy string) (string, bool) {
	var disabled *key.Binding
	for _, row := range bindings {
		for i := range row {
			b := &row[i]
			if key.Matches(msg, *b) {
				return "", false
			}
			if disabled == nil && slices.Contains(b.Keys(), msg.String()) {
				disabled = b
			}
		}
	}
	what := printable(msg.String())
	if disabled != nil {
		what = disabled.Help().Key + " (" + disabled.Help().Desc + ")"
	}
	switch {
	case busy != "":
		return fmt.Sprintf("busy: %s; %s was not applied: press it again when that is done", busy, what), true
	case disabled != nil:
		return what + " is not available now", true
	}
	return what + " does nothing here; ? lists the keys", true
}

// answeredDeadKey answers msg in the notice line when it matches no
// enabled binding of the keys the help offers now, and reports whether it
// did; the caller then does nothing more with it.
func (m *Model) answeredDeadKey(msg tea.KeyPressMsg) bool {
	why, dead := deadKey(msg, m.activeKeys().full, m.busy())
	if dead {
		m.setNotice(why, false)
	}
	return dead
}

// printable is a key's name fit for the notice line: a pasted control
// sequence must not reach the terminal raw (input.TerminalSafe makes
// escapes, control characters and bidi overrides visible), and a long
// paste is cut.
func printable(k string) string {
	if r := []rune(k); len(r) > 16 {
		k = string(r[:16]) + "…"
	}
	return strings.ReplaceAll(input.TerminalSafe(k), "\n", `\n`)
}

// busy is what the cockpit is doing that a key must wait for: the running
// step, or the active screen loading what its keys act on.
func (m Model) busy() string {
	if m.running {
		k, _ := m.currentStep()
		return k.Title() + " is running"
	}
	switch m.active {
	case scrRehearse:
		if m.rehearsal.Running() {
			return "the drill is running"
		}
	case scrHome:
		return m.home.Busy()
	case scrPlan:
		return m.plan.Busy()
	case scrPromote:
		return m.promote.Busy()
	}
	return ""
}

// resumable reports whether r resumes the run now: a release that has not
// ended, no run going or stopping, and not an approver's review (which
// never drives the release).
func (m Model) resumable() bool {
	return m.review == NoReview && !m.running && !m.quitting && m.release != nil && !m.release.Status.Done()
}

// noticeState is what a notice was said about: the screen, whether a
// step runs, and whether the screen is taking text or a y/n answer. A
// notice is shown only while that holds, so one that names a key ("press
// enter to apply it") never outlives the keys it names.
type noticeState struct {
	screen    screenID
	running   bool
	capturing bool
}

func (m Model) noticeState() noticeState {
	return noticeState{screen: m.active, running: m.running || m.active == scrRehearse && m.rehearsal.Running(),
		capturing: m.capturing()}
}

// capturing reports whether the active screen takes every key (a filter,
// a reason, a y/n answer), so the root must not treat keys as global
// shortcuts; takesText, whether it takes them as typed text.
func (m Model) capturing() bool {
	return m.active == scrPlan && m.plan.Capturing() || m.active == scrHome && m.home.Capturing()
}

func (m Model) takesText() bool {
	return m.active == scrPlan && m.plan.TakesText() || m.active == scrHome && m.home.TakesText()
}
