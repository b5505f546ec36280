package home

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
)

// TestTheDecisionMapShowsTheShapeAndWhatItSkips: an applied release with
// no image is infrastructure only; the map says so and that the
// promotion will be skipped, and why.
func TestTheDecisionMapShowsTheShapeAndWhatItSkips(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	r := workflow.NewRelease("web-staging-1", "web", "staging", "", "alice", t0)
	for _, k := range []workflow.StepKind{workflow.StepOwnership, workflow.StepPlanReview, workflow.StepApply} {
		r.Step(k).Status = workflow.Succeeded
	}
	r.Checkpoints.Applied = workflow.Applied{Done: true, StateSerial: 4}

	m := New(noEffort{}, theme.New(true), keys.Default())
	m.SetSize(160, 40)
	m, _ = m.Update(screen.RunStateMsg{Release: r})
	view := strings.Join(strings.Fields(ansi.Strip(m.View())), " ")
	require.Contains(t, view, "Shape infrastructure · infrastructure only: the plan changes infrastructure and no image was given")
	require.Contains(t, view, "Digest promotion will be skipped: infrastructure only: no image to promote")

	r.Status, r.Abandonment = workflow.ReleaseAbandoned, workflow.Abandonment{By: "carol", At: t0, Reason: "superseded"}
	m, _ = m.Update(screen.RunStateMsg{Release: r})
	require.Contains(t, ansi.Strip(m.View()), "abandoned by carol: superseded")
}

func (noEffort) Abandon(context.Context, string, string) (workflow.Abandoned, error) {
	return workflow.Abandoned{}, errors.New("noEffort abandons nothing")
}

// abandonPort is a named fake of the port that records the abandon asked.
type abandonPort struct {
	noEffort
	id, reason *string
}

func (p abandonPort) Abandon(_ context.Context, id, reason string) (workflow.Abandoned, error) {
	*p.id, *p.reason = id, reason
	r := workflow.NewRelease(id, "web", "staging", "", "alice", time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC))
	r.Status = workflow.ReleaseAbandoned
	return workflow.Abandoned{Release: r}, nil
}

// TestAbandonFromTheDecisionMap: x asks for the reason, enter for the
// confirmation, y abandons through the port in a command, and the ended
// release goes to the root; esc cancels with nothing asked of the port.
func TestAbandonFromTheDecisionMap(t *testing.T) {
	t.Parallel()
	var id, reason string
	r := workflow.NewRelease("web-staging-1", "web", "staging", "", "alice", time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC))
	m := New(abandonPort{id: &id, reason: &reason}, theme.New(true), keys.Default())
	m.SetSize(160, 40)
	m, _ = m.Update(screen.RunStateMsg{Release: r})
	press := func(m Model, keys ...tea.KeyPressMsg) (Model, tea.Cmd) {
		var cmd tea.Cmd
		for _, k := range keys {
			m, cmd = m.Update(k)
		}
		return m, cmd
	}
	text := func(s string) (out []tea.KeyPressMsg) {
		for _, r := range s {
			out = append(out, tea.KeyPressMsg{Code: r, Text: string(r)})
		}
		return out
	}

	m, _ = press(m, tea.KeyPressMsg{Code: 'x', Text: "x"})
	require.True(t, m.Capturing())
	m, _ = press(m, append(text("nope"), tea.KeyPressMsg{Code: tea.KeyEscape})...)
	require.False(t, m.Capturing(), "esc cancels")
	require.Empty(t, id)

	m, _ = press(m, tea.KeyPressMsg{Code: 'x', Text: "x"})
	m, _ = press(m, append(text("superseded"), tea.KeyPressMsg{Code: tea.KeyEnter})...)
	require.Contains(t, ansi.Strip(m.View()), "Abandon web-staging-1? reason: superseded")
	m, cmd := press(m, tea.KeyPressMsg{Code: 'y', Text: "y"})
	require.NotNil(t, cmd)
	require.Empty(t, id, "nothing is done in Update")
	m, cmd = m.Update(cmd())
	require.Equal(t, "web-staging-1", id)
	require.Equal(t, "superseded", reason)
	require.False(t, m.Capturing())
	var ended *workflow.Release
	for _, c := range cmd().(tea.BatchMsg) {
		if e, ok := c().(screen.ReleaseEndedMsg); ok {
			ended = e.Release
		}
	}
	require.NotNil(t, ended)
	require.Equal(t, workflow.ReleaseAbandoned, ended.Status)
}
