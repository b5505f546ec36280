// Package screen holds what the cockpit's screens share: the messages the
// root broadcasts to every screen (release events and run state, the
// clock), the requests screens send to the root, and layout helpers.
//
// Each screen lives in its own package under tui/screen and follows one
// contract: Model, New(...), Init, Update(tea.Msg) (Model, tea.Cmd),
// View() string, SetSize(w, h), SetTheme and ShortHelp/FullHelp. Its
// Model embeds Base, which holds what every screen keeps the same way
// (size, theme, keys, clock, run state) and gives it SetSize and SetTheme.
package screen

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
)

// EventMsg is one event of the running release. The root sends it to every
// screen, not only the active one, so a screen opened later is current.
type EventMsg struct{ Event workflow.Event }

// RunStateMsg says whether a run is going and how the last one ended. The
// root sends it to every screen when a run starts and when it returns.
type RunStateMsg struct {
	Running bool
	// Release is the latest snapshot; nil when the run could not load it.
	Release *workflow.Release
	// Err is how the last run ended: nil, an error wrapping
	// fault.ErrBlocked (a person must act), or a failure.
	Err error
}

// ReleaseEndedMsg asks the root to take Release, ended outside a run (a
// release abandoned from the decision map), as the cockpit's release.
type ReleaseEndedMsg struct{ Release *workflow.Release }

// TickMsg carries the root's clock to every screen, for elapsed times.
type TickMsg struct {
	Now time.Time
	// Effort is the release's effort figure at Now, the one the status
	// bar shows in the same frame (effort.Tracker.Figure).
	Effort effort.Figure
}

// ResumeMsg asks the root to continue the release run.
type ResumeMsg struct {
	// ReviewedPlan is the fingerprint of the plan the captain reviewed
	// (and confirmed, when destructive) on the plan screen: the run may
	// apply exactly that plan without stopping for review again.
	ReviewedPlan string
}

// OpenMsg asks the root to show the screen of a step.
type OpenMsg struct{ Step workflow.StepKind }

// NoticeMsg asks the root to show a brief notice in the status line.
type NoticeMsg struct {
	Text string
	Err  bool
}

// Fit makes s exactly w cells wide and h lines high: longer lines are
// truncated, missing lines are blank. Screens return Fit(...) from View so
// the root can stack them without measuring.
func Fit(s string, w, h int) string {
	if w <= 0 || h <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		lines[i] = Line(l, w)
	}
	for len(lines) < h {
		lines = append(lines, strings.Repeat(" ", w))
	}
	return strings.Join(lines, "\n")
}

// Line truncates or pads one line to exactly w cells.
func Line(l string, w int) string {
	if lw := ansi.StringWidth(l); lw > w {
		return ansi.Truncate(l, w, "…")
	} else if lw < w {
		return l + strings.Repeat(" ", w-lw)
	}
	return l
}

// Wrap wraps plain text to w cells at spaces, never at hyphens (unlike
// ansi.Wrap), so commands such as "relcap approve --plan FP" stay whole;
// a word longer than w is cut hard.
func Wrap(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			for ansi.StringWidth(word) > w {
				if line != "" {
					lines = append(lines, line)
					line = ""
				}
				lines = append(lines, ansi.Truncate(word, w, ""))
				word = ansi.TruncateLeft(word, w, "")
			}
			switch {
			case line == "":
				line = word
			case ansi.StringWidth(line)+1+ansi.StringWidth(word) <= w:
				line += " " + word
			default:
				lines = append(lines, line)
				line = word
			}
		}
		lines = append(lines, line)
	}
	return lines
}

// Clip cuts s to n characters for a layout, "(none)" when empty; a digest
// keeps its "sha256:" prefix. Commits and fingerprints are abbreviated with
// workflow.ShortHash instead, the same everywhere.
func Clip(s string, n int) string {
	if s == "" {
		return "(none)"
	}
	if strings.HasPrefix(s, "sha256:") && len(s) > 7+n {
		return s[:7+n]
	}
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Duration renders an elapsed time as 1h02m03s / 2m03s / 3s, the way an
// effort figure is written (effort.Format).
func Duration(d time.Duration) string { return effort.Format(d) }

// Scroll clamps a list offset so the cursor stays within a window of
// height rows over n items.
func Scroll(offset, cursor, height, n int) int {
	if height <= 0 {
		return 0
	}
	if cursor < offset {
		offset = cursor
	}
	if cursor >= offset+height {
		offset = cursor - height + 1
	}
	offset = min(offset, max(0, n-height))
	return max(0, offset)
}

// ScrollKeys moves the scroll offset of a screen without a cursor for the
// list keys: up, down, top and, when page is positive, page up and down by
// page lines. Any other key leaves it as it is.
func ScrollKeys(msg tea.KeyPressMsg, km keys.List, offset, page int) int {
	switch {
	case key.Matches(msg, km.Up):
		return max(0, offset-1)
	case key.Matches(msg, km.Down):
		return offset + 1
	case page > 0 && key.Matches(msg, km.PageUp):
		return max(0, offset-page)
	case page > 0 && key.Matches(msg, km.PageDown):
		return offset + page
	case key.Matches(msg, km.Top):
		return 0
	}
	return offset
}
