package home

import (
	"strings"
	"testing"
	"time"

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
