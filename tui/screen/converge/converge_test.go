package converge_test

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/screen/converge"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// TestConvergeFailureShowsTheFourFacts runs a release whose application
// degrades and checks the screen names the intended revision, the actual
// artifact, the controller status and the next safe action.
func TestConvergeFailureShowsTheFourFacts(t *testing.T) {
	t.Parallel()
	env := fixture.New(fixture.Policy{})
	env.World.Unhealthy = true
	svc, _, err := env.Service("alice")
	require.NoError(t, err)
	r, err := env.StartFixed(t.Context(), svc)
	require.NoError(t, err)

	m := converge.New(theme.New(true), keys.Default())
	m.SetSize(100, 30)
	r, err = svc.Run(t.Context(), r.ID, func(e workflow.Event) { m, _ = m.Update(screen.EventMsg{Event: e}) })
	require.ErrorIs(t, err, fault.ErrNotConverged)
	m, _ = m.Update(screen.RunStateMsg{Release: r, Err: err})

	v := ansi.Strip(m.View())
	for _, want := range []string{"not converged", "Intended revision", "Actual artifact", "Controller status", "Next safe action",
		"health Degraded", "relcap rollback --env staging", "relcap breakglass start --env staging"} {
		require.Contains(t, v, want)
	}
	golden.RequireEqual(t, m.View())
}
