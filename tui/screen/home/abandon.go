package home

import (
	"context"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/workflow"
)

// Abandoning the release from the decision map: x asks for the reason
// (typed on the bottom line, enter to go on, esc to cancel), then for a
// confirmation (y abandons, n or esc cancels); the Service does the rest
// in a command, never in Update.

type promptStage int

const (
	promptNone promptStage = iota
	promptReason
	promptConfirm
	promptWorking
)

// abandonPrompt is the state of the abandon prompt.
type abandonPrompt struct {
	stage  promptStage
	reason string
}

// abandonedMsg is how abandoning the release ended.
type abandonedMsg struct {
	out workflow.Abandoned
	err error
}

// Capturing reports whether the screen takes every key (the abandon
// prompt): the root then sends keys here, not to its global bindings.
func (m Model) Capturing() bool { return m.abandon.stage != promptNone }

// TakesText reports whether the prompt is taking typed text (the reason),
// so every key is input and none is a binding.
func (m Model) TakesText() bool { return m.abandon.stage == promptReason }

// Busy is what the screen is doing that its keys wait for, if anything.
func (m Model) Busy() string {
	if m.abandon.stage == promptWorking {
		return "abandoning the release"
	}
	return ""
}

// promptKeys are the keys of the abandon prompt's stage.
func (m Model) promptKeys() []key.Binding {
	switch m.abandon.stage {
	case promptReason:
		return []key.Binding{
			key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "done")),
			key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		}
	case promptConfirm:
		yes := m.Keys.Plan.Confirm
		yes.SetHelp(yes.Help().Key, "yes, abandon")
		return []key.Binding{yes, m.Keys.Plan.Cancel}
	}
	return nil
}

// mayAbandon reports whether x abandons the release now: one that has not
// ended, while no run drives it.
func (m Model) mayAbandon() bool {
	return m.Release() != nil && !m.Running() && !m.Release().Status.Done()
}

// abandonKey handles a key while the prompt is open.
func (m Model) abandonKey(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	p := &m.abandon
	switch p.stage {
	case promptReason:
		switch msg.String() {
		case "esc":
			m.abandon = abandonPrompt{}
		case "enter":
			if strings.TrimSpace(p.reason) != "" {
				p.stage = promptConfirm
			}
		case "backspace":
			if r := []rune(p.reason); len(r) > 0 {
				p.reason = string(r[:len(r)-1])
			}
		default:
			if t := msg.Key().Text; t != "" {
				p.reason += t
			}
		}
	case promptConfirm:
		switch {
		case key.Matches(msg, m.Keys.Plan.Confirm):
			p.stage = promptWorking
			return m, m.abandonRelease(strings.TrimSpace(p.reason))
		case key.Matches(msg, m.Keys.Plan.Cancel):
			m.abandon = abandonPrompt{}
		}
	}
	return m, nil
}

// abandonRelease abandons the release through the port.
func (m Model) abandonRelease(reason string) tea.Cmd {
	port, id := m.port, m.Release().ID
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := port.Abandon(ctx, id, reason)
		return abandonedMsg{out: out, err: err}
	}
}

// abandoned closes the prompt and hands the ended release to the root, or
// says why it was not abandoned.
func (m Model) abandoned(msg abandonedMsg) (Model, tea.Cmd) {
	m.abandon = abandonPrompt{}
	if msg.err != nil || msg.out.Release == nil {
		err := msg.err
		return m, func() tea.Msg { return screen.NoticeMsg{Text: "not abandoned: " + err.Error(), Err: true} }
	}
	r := msg.out.Release
	return m, tea.Batch(
		func() tea.Msg { return screen.ReleaseEndedMsg{Release: r} },
		func() tea.Msg { return screen.NoticeMsg{Text: "release " + r.ID + " abandoned"} })
}

// abandonLines is the bottom line while the prompt is open, or nil.
func (m Model) abandonLines() []string {
	th := m.Theme
	k := func(s string) string { return th.Key.Render(s) }
	switch m.abandon.stage {
	case promptReason:
		return []string{"Abandon " + m.Release().ID + " — why will it not ship? " + m.abandon.reason + "▏ " + th.Muted.Render("(") + k("enter") + th.Muted.Render(" go on, ") + k("esc") + th.Muted.Render(" cancel)")}
	case promptConfirm:
		return []string{th.Err.Render("Abandon "+m.Release().ID+"?") + " reason: " + m.abandon.reason + "; its saved plan is deleted. " + k("y") + " abandon, " + k("n") + " keep it"}
	case promptWorking:
		return []string{th.Muted.Render("abandoning " + m.Release().ID + "…")}
	}
	return nil
}
