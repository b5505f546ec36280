package tui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
)

// waitFor waits until the rendered output, stripped of ANSI, contains s.
// The renderer redraws only changed cells, so s must be text that appears
// in one piece on a line that changes.
func waitFor(t *testing.T, tm *teatest.TestModel, s string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains([]byte(ansi.Strip(string(b))), []byte(s))
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
}

func newFlow(t *testing.T, pol fixture.Policy) (*teatest.TestModel, *fixture.Env) {
	t.Helper()
	env := fixture.New(pol)
	svc, _, err := env.Service("alice")
	require.NoError(t, err)
	_, err = env.StartFixed(t.Context(), svc)
	require.NoError(t, err)
	m := New(t.Context(), svc, env.Reports(), fixture.ReleaseID)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	return tm, env
}

// TestFlowStartToConverged drives the whole release from the keyboard:
// the run stops for plan review, enter and y apply the destructive plan,
// and the cockpit follows promotion and convergence to the end.
func TestFlowStartToConverged(t *testing.T) {
	t.Parallel()
	tm, env := newFlow(t, fixture.Policy{})
	waitFor(t, tm, "enter apply (asks to confirm)")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitFor(t, tm, "It deletes 0 and replaces 1")
	tm.Type("y")
	waitFor(t, tm, "converged")
	tm.Type("q")
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(Model)
	require.Equal(t, workflow.ReleaseConverged, final.Release().Status)
	require.NoError(t, final.Err())
	require.Equal(t, 1, env.World.Applies)
	require.Equal(t, 1, env.World.Copies)
	require.Equal(t, scrHome, final.active)
}

// TestFlowBlockedOnApprovalThenApproveAndResume: the plan needs one
// approval; the captain may approve (the policy does not require another
// person), then enter resumes, y confirms the replacement, and the
// release converges.
func TestFlowBlockedOnApprovalThenApproveAndResume(t *testing.T) {
	t.Parallel()
	tm, env := newFlow(t, fixture.Policy{PlanApprovals: 1})
	waitFor(t, tm, "needs 1 more approval")
	tm.Type("a")
	waitFor(t, tm, "approved plan")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitFor(t, tm, "It deletes 0 and replaces 1")
	tm.Type("y")
	waitFor(t, tm, "converged")
	tm.Type("q")
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(Model)
	require.Equal(t, workflow.ReleaseConverged, final.Release().Status)
	approvals, err := env.Ledger.Approvals(t.Context(), approval.Plan, final.Release().Checkpoints.Fingerprint)
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	require.Equal(t, "alice", approvals[0].Approver)
}

// TestFlowQuitMidReleaseIsResumable quits while blocked and checks the
// release is saved where it stopped.
func TestFlowQuitMidReleaseIsResumable(t *testing.T) {
	t.Parallel()
	tm, env := newFlow(t, fixture.Policy{PlanApprovals: 1, DistinctFromAuthor: true})
	waitFor(t, tm, "needs 1 more approval")
	tm.Type("q")
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(Model)
	require.ErrorIs(t, final.Err(), fault.ErrApprovalRequired)
	r, err := env.Ledger.LoadRelease(t.Context(), fixture.ReleaseID)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseBlocked, r.Status)
	require.True(t, strings.Contains(r.Step(workflow.StepPlanReview).Message, "relcap approve --plan"))
}
