package tui

import (
	"reflect"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/workflow"
)

// everyKey is every key the cockpit's key map binds, once each.
func everyKey() []string {
	var out []string
	seen := map[string]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		if b, ok := v.Interface().(key.Binding); ok {
			for _, k := range b.Keys() {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
			return
		}
		for i := range v.NumField() {
			walk(v.Field(i))
		}
	}
	walk(reflect.ValueOf(keys.Default()))
	return out
}

// isDeadKeyNotice reports whether a notice is the answer to a key that did
// nothing (deadKey).
func isDeadKeyNotice(n string) bool {
	return strings.HasPrefix(n, "busy: ") || strings.HasSuffix(n, " is not available now") || strings.Contains(n, " does nothing here")
}

// isNavigation reports whether msg moves a list or a pane, or opens a
// screen: at the end of a list, or on the screen it opens, it rightly
// does nothing.
func isNavigation(msg tea.KeyPressMsg) bool {
	km := keys.Default()
	l, g := km.List, km.Global
	return key.Matches(msg, l.Up, l.Down, l.PageUp, l.PageDown, l.Top, l.Bottom, g.Map, g.Ownership, g.Plan, g.Promotion, g.Converge)
}

// offered reports whether msg matches an enabled binding of the keys the
// cockpit's help offers now.
func offered(m Model, msg tea.KeyPressMsg) bool {
	for _, row := range m.activeKeys().full {
		if key.Matches(msg, row...) {
			return true
		}
	}
	return false
}

// hintLine is the last line of the cockpit: the key hints.
func hintLine(m Model) string {
	lines := strings.Split(ansi.Strip(m.render()), "\n")
	return lines[len(lines)-1]
}

// requireHintIsTheKeyMap checks the hint line against the key map: every
// enabled binding of the short help is in it with its help text, and no
// disabled one.
func requireHintIsTheKeyMap(t *testing.T, m Model) {
	t.Helper()
	hint := hintLine(m)
	for _, b := range m.activeKeys().short {
		text := b.Help().Key + " " + b.Help().Desc
		if b.Enabled() {
			require.Contains(t, hint, text, "%s: an enabled key missing from the hint", m)
		} else {
			require.NotContains(t, hint, text, "%s: a disabled key in the hint", m)
		}
	}
}

// requireNoKeyIsLost presses every key of the key map in m (each on the
// same state): a key the help offers is taken without a dead-key answer; any
// other is answered at once in the notice line, with "busy: " while a step
// runs.
func requireNoKeyIsLost(t *testing.T, m Model) {
	t.Helper()
	for _, k := range everyKey() {
		msg := fixture.Key(k)
		nm, cmd := m.Update(msg)
		got := nm.(Model)
		if k == "ctrl+c" {
			// Quits from anywhere, a prompt included.
			require.True(t, got.quitting, "%s: ctrl+c", m)
			continue
		}
		if offered(m, msg) {
			require.False(t, isDeadKeyNotice(got.notice) && got.notice != m.notice, "%s: %s is offered but was answered %q", m, k, got.notice)
			// It acts: a command, or the screen changes.
			acted := cmd != nil || got.render() != m.render() || isNavigation(msg)
			require.True(t, acted, "%s: %s is offered and did nothing", m, k)
			continue
		}
		require.True(t, isDeadKeyNotice(got.notice), "%s: %s is not offered and was dropped without a word (notice %q)", m, k, got.notice)
		require.Contains(t, ansi.Strip(got.render()), "▸ "+got.notice[:min(len(got.notice), 40)], "%s: the answer to %s is on the screen", m, k)
		if m.running {
			require.True(t, strings.HasPrefix(got.notice, "busy: "), "%s: %s while a step runs: %q", m, k, got.notice)
		}
	}
}

// keyStates are the cockpit in each state a captain meets: a step running,
// the plan waiting for the captain's review, its y/n prompt, the abandon
// prompt, a release blocked on another approver, and a converged release.
func keyStates(t *testing.T) map[string]Model {
	t.Helper()
	const w, h = 220, 40
	states := map[string]Model{}

	m, _ := cockpit(t, fixture.Policy{}, w, h)
	msgs := fixture.Run(m.loadRelease())
	require.Len(t, msgs, 1)
	running := step(t, m, msgs[0]) // the run's command is never run: it stays running
	require.True(t, running.running)
	states["running"] = running

	m, _ = cockpit(t, fixture.Policy{}, w, h)
	review := open(t, m)
	require.False(t, review.running)
	require.Equal(t, scrPlan, review.active)
	states["review"] = review

	confirm := step(t, review, fixtureKey("enter"))
	require.True(t, confirm.plan.Capturing(), "a destructive plan asks y/n")
	states["confirm"] = confirm

	reason := step(t, step(t, review, fixtureKey("m")), fixtureKey("x"))
	require.True(t, reason.home.TakesText())
	abandon := step(t, step(t, reason, fixtureKey("r")), fixtureKey("enter"))
	require.True(t, abandon.home.Capturing())
	require.False(t, abandon.home.TakesText())
	states["abandon-confirm"] = abandon

	blocked, _, _ := blockedOnBob(t, w, h)
	states["blocked"] = blocked

	converged := drive(t, drive(t, review, fixtureKey("enter")), fixtureKey("y"))
	require.Equal(t, workflow.ReleaseConverged, converged.Release().Status)
	states["converged"] = converged
	return states
}

// TestTheHintIsTheKeyMapAndNoKeyIsLost drives every screen of the cockpit
// through the states a captain meets and, in each, compares the hint line
// with the key map and presses every key: none is dropped without a word.
func TestTheHintIsTheKeyMapAndNoKeyIsLost(t *testing.T) {
	t.Parallel()
	for name, m := range keyStates(t) {
		t.Run(name, func(t *testing.T) {
			screens := []screenID{scrHome, scrOwnership, scrPlan, scrPromote, scrConverge, scrEffort}
			if m.capturing() {
				screens = []screenID{m.active} // a prompt holds its screen
			}
			for _, s := range screens {
				m := m
				m.active, m.notice = s, ""
				requireHintIsTheKeyMap(t, m)
				requireNoKeyIsLost(t, m)
			}
		})
	}
}

// TestKeysWhileAStepRunsAreAnsweredBusy is the case: enter and y
// pressed at the prod plan while the plan step still runs did nothing and
// said nothing. Now each is answered at once, and the hint never offers
// the apply while it cannot be done.
func TestKeysWhileAStepRunsAreAnsweredBusy(t *testing.T) {
	t.Parallel()
	m, _ := cockpit(t, fixture.Policy{}, 120, 30)
	msgs := fixture.Run(m.loadRelease())
	m = step(t, m, msgs[0])
	require.True(t, m.running)
	m.active = scrPlan
	require.NotContains(t, hintLine(m), "enter apply")

	m = step(t, m, fixtureKey("enter"))
	k, _ := m.currentStep()
	require.Equal(t, "busy: "+k.Title()+" is running; enter (apply & continue) was not applied: press it again when that is done", m.notice)
	require.Contains(t, ansi.Strip(m.render()), "▸ busy: "+k.Title()+" is running")
	m = step(t, m, fixtureKey("y"))
	require.True(t, strings.HasPrefix(m.notice, "busy: "), m.notice)
	require.Contains(t, m.notice, "y (yes, apply) was not applied")
	require.True(t, m.running, "nothing started or stopped")
}

// TestANoticeNeverOutlivesTheKeysItNames: "review the plan, then press
// enter to apply it" stayed on the y/n prompt and on the convergence
// screen. A notice is shown only in the state it was said in.
func TestANoticeNeverOutlivesTheKeysItNames(t *testing.T) {
	t.Parallel()
	m, _ := cockpit(t, fixture.Policy{}, 120, 30)
	m = open(t, m)
	require.Equal(t, scrPlan, m.active)
	require.Contains(t, m.notice, "press enter to apply it")
	require.Contains(t, ansi.Strip(m.render()), "press enter to apply it")
	require.Contains(t, hintLine(m), "enter apply")

	confirm := step(t, m, fixtureKey("enter"))
	require.NotContains(t, ansi.Strip(confirm.render()), "press enter to apply it", "the y/n prompt has its own keys")
	require.Contains(t, hintLine(confirm), "y yes, apply")
	require.NotContains(t, hintLine(confirm), "enter apply")

	converged := drive(t, confirm, fixtureKey("y"))
	for _, s := range []screenID{scrHome, scrPlan, scrConverge} {
		c := converged
		c.active = s
		require.NotContains(t, ansi.Strip(c.render()), "press enter to apply it")
		require.NotContains(t, hintLine(c), "enter apply")
	}
}

// TestANoticeSaidAsTheRunStartsIsShownWhileItRuns: "approved by bob:
// continuing" is said in the message that starts the run it announces; it
// belongs to the running state, not the one before it.
func TestANoticeSaidAsTheRunStartsIsShownWhileItRuns(t *testing.T) {
	t.Parallel()
	m, _, bob := blockedOnBob(t, 120, 30)
	_, _, err := bob.ApprovePlan(t.Context(), m.Release().Checkpoints.Fingerprint, "looks right")
	require.NoError(t, err)
	r, err := m.svc.Records().Release(t.Context(), fixture.ReleaseID)
	require.NoError(t, err)
	check, _, err := m.svc.Records().AwaitedApprovals(t.Context(), r)
	require.NoError(t, err)
	m = step(t, m, approvalsMsg{gen: m.gen, release: r, check: check}) // the run's command is not run
	require.True(t, m.running)
	require.Equal(t, "approved by bob: continuing", m.notice)
	require.Contains(t, ansi.Strip(m.render()), "▸ approved by bob: continuing")
}

// TestADeadKeysNameCannotDriveTheTerminal: a paste of an escape sequence
// or control characters is named in the notice line made visible, and cut.
func TestADeadKeysNameCannotDriveTheTerminal(t *testing.T) {
	t.Parallel()
	for _, paste := range []string{"\x1b]52;c;ZXZpbA==\x07", "\x1b[2J\x1b[H", "a\rb\nc", "\u202eevil", strings.Repeat("z", 100)} {
		why, dead := deadKey(tea.KeyPressMsg{Code: []rune(paste)[0], Text: paste}, nil, "")
		require.True(t, dead)
		for _, bad := range []string{"\x1b", "\x07", "\r", "\n", "\u202e"} {
			require.NotContains(t, why, bad, "%q", paste)
		}
		require.Less(t, len([]rune(why)), 100, "a long paste is cut: %q", why)
	}
}
