package effort_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/workflowtest"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func TestEffortClockCountsOnlyEngagedTime(t *testing.T) {
	t.Parallel()
	clock := workflowtest.NewClock(t0)
	c := effort.NewClock(clock, 2*time.Minute, "r1")

	c.Touch("alice", effort.RoleCaptain, "plan-review")
	clock.Advance(90 * time.Second) // engaged: counts
	c.Touch("alice", effort.RoleCaptain, "plan-review")
	clock.Advance(2 * time.Minute) // exactly the threshold: counts
	c.Touch("alice", effort.RoleCaptain, "apply")
	clock.Advance(10 * time.Minute) // went for coffee: counts nothing
	c.Touch("alice", effort.RoleCaptain, "apply")
	clock.Advance(30 * time.Second)
	c.Touch("alice", effort.RoleCaptain, "promotion")

	c.Touch("bob", effort.RoleApprover, "plan-review")
	clock.Advance(time.Minute)
	c.Touch("bob", effort.RoleApprover, "plan-review")

	c.BeginWait("apply")
	clock.Advance(5 * time.Minute)
	c.EndWait("apply")

	got := map[string]time.Duration{}
	for _, e := range c.Drain() {
		got[fmt.Sprintf("%s/%s/%s/%s", e.Kind, e.Person, e.Role, e.Step)] = e.Duration
	}
	require.Equal(t, map[string]time.Duration{
		"active/alice/captain/plan-review": 210 * time.Second,
		"active/alice/captain/apply":       30 * time.Second,
		"active/alice/captain/promotion":   0, // measured: engaged there, nothing yet
		"active/bob/approver/plan-review":  time.Minute,
		"wait///apply":                     5 * time.Minute,
	}, got)
	require.Empty(t, c.Drain(), "drain empties the clock")
}

func drained(c *effort.Clock) map[string]time.Duration {
	got := map[string]time.Duration{}
	for _, e := range c.Drain() {
		got[fmt.Sprintf("%s/%s/%s", e.Kind, e.Person, e.Step)] += e.Duration
	}
	return got
}

// The time between two inputs belongs to the steps the captain watched:
// split where the work moved on, and only if the whole gap is within the
// threshold.
func TestEffortFollowsTheStepOnScreenWithinAGap(t *testing.T) {
	t.Parallel()
	clock := workflowtest.NewClock(t0)
	c := effort.NewClock(clock, 2*time.Minute, "r1")
	c.Input("alice", effort.RoleCaptain, "ownership")
	clock.Advance(2 * time.Second)
	c.Follow("alice", "plan-review") // the plan arrived; alice reads it
	clock.Advance(40 * time.Second)
	c.Input("alice", effort.RoleCaptain, "plan-review") // enter: apply
	clock.Advance(10 * time.Second)
	c.Follow("alice", "apply")
	clock.Advance(50 * time.Second)
	c.Follow("alice", "promotion")
	clock.Advance(3 * time.Minute) // watched, then left: the whole gap is idle
	c.Follow("alice", "convergence")
	clock.Advance(time.Minute)
	c.Input("alice", effort.RoleCaptain, "convergence")
	require.Equal(t, map[string]time.Duration{
		"active/alice/ownership":   2 * time.Second,
		"active/alice/plan-review": 40 * time.Second, // the next 10 s belong to a gap that went idle
		"active/alice/apply":       0,                // measured, but its gap went idle
		"active/alice/promotion":   0,
		"active/alice/convergence": 0,
	}, drained(c))
	require.Equal(t, 42*time.Second, c.Active("alice"))
	require.Equal(t, 3, c.Inputs("alice"))
	c.Input("alice", effort.RoleCaptain, "convergence")
	c.Input("alice", effort.RoleCaptain, "convergence")
	inputs := map[string]int{}
	for _, e := range c.Drain() {
		inputs[e.Step] += e.Inputs
	}
	require.Equal(t, map[string]int{"convergence": 2}, inputs, "each drain reports the inputs since the last, by step")
}

// Unfocused time counts nothing: Pause settles the gap up to the blur, and
// the next input (or focus) starts afresh.
func TestEffortPausesWhileTheTerminalIsUnfocused(t *testing.T) {
	t.Parallel()
	clock := workflowtest.NewClock(t0)
	c := effort.NewClock(clock, 2*time.Minute, "r1")
	c.Input("alice", effort.RoleCaptain, "plan-review")
	clock.Advance(30 * time.Second)
	require.Equal(t, 30*time.Second, c.Active("alice"), "the open gap shows live")
	require.False(t, c.Idle("alice"))
	c.Pause("alice") // focus went to the chat window
	clock.Advance(90 * time.Second)
	require.True(t, c.Idle("alice"))
	require.Equal(t, 30*time.Second, c.Active("alice"), "nothing accrues while unfocused")
	c.Touch("alice", effort.RoleCaptain, "plan-review") // focus back
	clock.Advance(20 * time.Second)
	c.Input("alice", effort.RoleCaptain, "plan-review")
	require.Equal(t, map[string]time.Duration{"active/alice/plan-review": 50 * time.Second}, drained(c))
	require.Equal(t, 2, c.Inputs("alice"), "focus is engagement, not an input")
	clock.Advance(3 * time.Minute)
	require.True(t, c.Idle("alice"), "past the threshold")
	require.Equal(t, 50*time.Second, c.Active("alice"))
	require.Empty(t, drained(c), "a measured zero is reported once")
}

func TestUnmeasuredEffortHasNoDuration(t *testing.T) {
	t.Parallel()
	e := effort.Entry{ReleaseID: "r1", Person: "ci", Role: effort.RoleCaptain, Step: "apply", Kind: effort.Unmeasured, Note: "no terminal"}
	require.NoError(t, e.Validate())
	e.Duration = time.Second
	require.ErrorIs(t, e.Validate(), effort.ErrInvalid)
}

func TestEffortTotalsKeepStaffAndMachineApart(t *testing.T) {
	t.Parallel()
	totals := effort.Sum([]effort.Entry{
		{Kind: effort.Active, Duration: time.Hour},
		{Kind: effort.OffTool, Duration: 30 * time.Minute},
		{Kind: effort.Wait, Duration: 2 * time.Hour},
	})
	require.Equal(t, 90*time.Minute, totals.Staff())
	require.Equal(t, 2*time.Hour, totals.Wait)
}

func TestUnmeasuredEntriesAreValidOnlyWithoutADuration(t *testing.T) {
	t.Parallel()
	ok := effort.Entry{ReleaseID: "r1", Person: "alice", Role: effort.RoleCaptain, Step: "apply", Kind: effort.Unmeasured,
		Note: "no terminal: stdin is not a TTY (CI or a script)"}
	require.NoError(t, ok.Validate())
	withTime := ok
	withTime.Duration = time.Minute
	require.ErrorIs(t, withTime.Validate(), effort.ErrInvalid)
	nobody := ok
	nobody.Person = ""
	require.ErrorIs(t, nobody.Validate(), effort.ErrInvalid, "unmeasured work is a person's")
	zero := effort.Entry{ReleaseID: "r1", Person: "alice", Role: effort.RoleCaptain, Step: "apply", Kind: effort.Active}
	require.NoError(t, zero.Validate(), "a measured zero is a fact")
	require.Equal(t, effort.Totals{}, effort.Sum([]effort.Entry{ok, zero}), "unmeasured adds nothing to any total")
}
