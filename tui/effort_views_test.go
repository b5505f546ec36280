package tui

import (
	"regexp"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
)

// TestEveryViewShowsOneEffortFigure reads the status bar, the decision
// map's summary, the effort screen (its line for the release and the
// report's row) and the ledger at one instant, with a running interval
// open: one number everywhere (issue 29).
func TestEveryViewShowsOneEffortFigure(t *testing.T) {
	t.Parallel()
	m, env := cockpit(t, fixture.Policy{}, 120, 40)
	m = open(t, m)
	tick := func(m Model) Model { return step(t, m, tickMsg{now: env.Clock.Now()}) }
	env.Clock.Advance(40 * time.Second)
	m = drive(t, m, fixtureKey("enter"))
	env.Clock.Advance(7 * time.Second)
	m = drive(t, m, fixtureKey("y"))
	require.Equal(t, workflow.ReleaseConverged, m.Release().Status)
	env.Clock.Advance(20 * time.Second) // reading the result: the running interval
	m = tick(drive(t, m, fixtureKey("m")))
	want := screen.Duration(m.live.Active)
	require.Equal(t, "1m07s", want, "40 s reading the plan, 7 s confirming, 20 s on the map")

	v := ansi.Strip(m.render())
	require.Contains(t, v, "effort "+want, "status bar")
	require.Contains(t, v, "effort: active "+want, "the decision map's summary")

	m = tick(drive(t, m, fixtureKey("e")))
	v = ansi.Strip(m.render())
	require.Contains(t, v, fixture.ReleaseID+" now: active "+want, "the effort screen's line for the release")
	require.Contains(t, v, "effort "+want, "the status bar beside it")
	require.Regexp(t, regexp.MustCompile(`staging\s+\S+\s+`+want), v, "the report's row, read from the ledger")

	entries, err := env.Ledger.Effort(t.Context(), fixture.ReleaseID)
	require.NoError(t, err)
	require.Equal(t, m.live.Totals, effort.Tally(entries).Totals, "the ledger holds what every view shows")

	env.Clock.Advance(5 * time.Second)
	m = tick(m)
	require.Equal(t, "1m12s", screen.Duration(m.live.Active), "the running interval goes on")
	require.Contains(t, ansi.Strip(m.render()), fixture.ReleaseID+" now: active 1m12s")
}
