package effort_test

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen/effort"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow/offtool"
)

func TestEffortScreenChartsHoursPerReleaseAndEffortByStep(t *testing.T) {
	t.Parallel()
	fx := fixture.New(fixture.Policy{})
	svc, _, err := fx.Service("alice")
	require.NoError(t, err)
	r, err := fixture.Start(t.Context(), svc)
	require.NoError(t, err)
	_, err = offtool.Log(t.Context(), svc.Deps(), offtool.Request{ReleaseID: r.ID, Minutes: 45, What: "go/no-go call"})
	require.NoError(t, err)

	m := effort.New(fx.Reports(), theme.New(true), keys.Default())
	m.SetSize(100, 30)
	cmd := m.Load()
	require.Contains(t, ansi.Strip(m.View()), "building the report")
	for _, msg := range fixture.Run(cmd) {
		m, _ = m.Update(msg)
	}
	v := ansi.Strip(m.View())
	require.Contains(t, v, "Releases: 1 (release 1)", "the report's own headline")
	require.Contains(t, v, "Coverage: staff effort measured on 0 of 1 releases")
	require.Contains(t, v, "Staff hours per release")
	require.Contains(t, v, "unmeasured (off-tool 45m00s logged): alice on release", "an unmeasured release is said so, not drawn as a bar of its off-tool time")
	require.Contains(t, v, "Active effort by step")
	// Off-tool time alone measures nobody's work in relcap (issue 20): the
	// release is unmeasured, so there is no before/after to show.
	require.Contains(t, v, "no before/after: staff effort was measured on none of the 1 releases", v)
}
