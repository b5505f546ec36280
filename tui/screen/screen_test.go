package screen_test

import (
	"fmt"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

func TestScrollKeysMoveTheOffsetAndPageOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	km := keys.Default().List
	press := func(code rune, text string) tea.KeyPressMsg { return tea.KeyPressMsg{Code: code, Text: text} }
	j, k, g := press('j', "j"), press('k', "k"), press('g', "g")
	pgdn := tea.KeyPressMsg{Code: tea.KeyPgDown}
	x := press('x', "x")

	require.Equal(t, 4, screen.ScrollKeys(j, km, 3, 0))
	require.Equal(t, 2, screen.ScrollKeys(k, km, 3, 0))
	require.Equal(t, 0, screen.ScrollKeys(k, km, 0, 0), "never above the top")
	require.Equal(t, 0, screen.ScrollKeys(g, km, 7, 0))
	require.Equal(t, 3, screen.ScrollKeys(pgdn, km, 3, 0), "no paging without a page size")
	require.Equal(t, 13, screen.ScrollKeys(pgdn, km, 3, 10))
	require.Equal(t, 3, screen.ScrollKeys(x, km, 3, 10), "other keys are the screen's")
}

// TestBaseObservesRunStateEventsAndTheClock: a screen's base keeps the
// last release snapshot when a message carries none, the run state of
// the last RunStateMsg, and the root's clock.
func TestBaseObservesRunStateEventsAndTheClock(t *testing.T) {
	t.Parallel()
	b := screen.NewBase(theme.New(true), keys.Default())
	r1, r2 := &workflow.Release{ID: "r1"}, &workflow.Release{ID: "r2"}
	blocked := fmt.Errorf("%w: approvals", fault.ErrBlocked)

	b.Observe(screen.RunStateMsg{Running: true, Release: r1})
	require.True(t, b.Running())
	require.Same(t, r1, b.Release())
	b.Observe(screen.EventMsg{Event: workflow.Event{Kind: workflow.EventStepProgress}})
	require.Same(t, r1, b.Release(), "an event without a snapshot keeps the last one")
	b.Observe(screen.EventMsg{Event: workflow.Event{Release: r2}})
	require.Same(t, r2, b.Release())
	b.Observe(screen.RunStateMsg{Err: blocked})
	require.False(t, b.Running())
	require.ErrorIs(t, b.RunErr(), fault.ErrBlocked)
	require.Same(t, r2, b.Release())

	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b.Observe(screen.TickMsg{Now: now})
	require.Equal(t, now, b.Now)

	require.False(t, b.Sized())
	b.SetSize(4, 2)
	require.True(t, b.Sized())
	require.Equal(t, "ab  \n    ", b.Fit("ab"))
}
