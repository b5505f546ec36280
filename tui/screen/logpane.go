package screen

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/theme"
)

// logLimit bounds the lines a log pane keeps; the journal keeps the whole
// output, the pane shows what a person reads.
const logLimit = 5000

// LogPane is a scrollable pane of a tool's output (Terraform's init, plan
// and apply), filled line by line from the run's events. It follows the
// last line until the captain scrolls up, and follows again at the bottom.
// Lines arrive already cleaned of control sequences by the Service.
type LogPane struct {
	lines   []string
	dropped int // lines let go of at the top
	back    int // lines scrolled back from the bottom
}

// Append adds one line.
func (l *LogPane) Append(line string) {
	l.lines = append(l.lines, line)
	if len(l.lines) > logLimit {
		cut := len(l.lines) - logLimit
		l.lines = append(l.lines[:0:0], l.lines[cut:]...)
		l.dropped += cut
	}
	if l.back > 0 {
		l.back++ // keep the captain's place while they read back
	}
}

// Reset empties the pane, for a new run of its step.
func (l *LogPane) Reset() { *l = LogPane{} }

// Len is how many lines the pane holds.
func (l LogPane) Len() int { return len(l.lines) }

// Following reports whether the pane shows the newest lines.
func (l LogPane) Following() bool { return l.back == 0 }

// Scroll moves back and forth with the list keys (G follows the newest
// line again) in a pane of height lines.
func (l *LogPane) Scroll(msg tea.KeyPressMsg, km keys.List, height int) {
	page := max(1, height-2)
	maxBack := max(0, len(l.lines)-(height-1))
	switch {
	case key.Matches(msg, km.Up):
		l.back++
	case key.Matches(msg, km.Down):
		l.back--
	case key.Matches(msg, km.PageUp):
		l.back += page
	case key.Matches(msg, km.PageDown):
		l.back -= page
	case key.Matches(msg, km.Top):
		l.back = maxBack
	case key.Matches(msg, km.Bottom):
		l.back = 0
	}
	l.back = min(max(0, l.back), maxBack)
}

// View renders the pane in w × h cells: a title line naming the tool and
// whether it runs, then the lines that fit.
func (l LogPane) View(th theme.Theme, title string, running bool, w, h int) string {
	if w <= 0 || h <= 0 {
		return ""
	}
	state := th.Muted.Render(fmt.Sprintf(" · %d line(s)", len(l.lines)+l.dropped))
	if running {
		state += th.Warn.Render(" · running")
	}
	if !l.Following() {
		state += th.Muted.Render(fmt.Sprintf(" · %d newer below (G follows)", l.back))
	}
	out := []string{th.Label.Render(title) + state}
	body := h - 1
	end := len(l.lines) - l.back
	start := max(0, end-body)
	if len(l.lines) == 0 {
		out = append(out, th.Muted.Render("(no output yet)"))
	}
	for _, line := range l.lines[start:end] {
		out = append(out, th.Muted.Render("│ ")+line)
	}
	return Fit(strings.Join(out, "\n"), w, h)
}
