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
	clock.Advance(10 * time.Minute) // went for coffee: the threshold counts, the rest nothing
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
		"active/alice/captain/apply":       2*time.Minute + 30*time.Second,
		// The drain comes 5 minutes after their last touches: each
		// running interval counts up to the threshold.
		"active/alice/captain/promotion":  2 * time.Minute,
		"active/bob/approver/plan-review": 3 * time.Minute,
		"wait///apply":                    5 * time.Minute,
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

// The time after an input belongs to the steps the captain watched: split
// where the work moved on, up to the threshold after the input.
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
	clock.Advance(3 * time.Minute) // watched, then left: the threshold ran out 60 s in
	c.Follow("alice", "convergence")
	clock.Advance(time.Minute)
	c.Input("alice", effort.RoleCaptain, "convergence")
	entries := c.Drain()
	got := map[string]time.Duration{}
	for _, e := range entries {
		got[fmt.Sprintf("%s/%s/%s", e.Kind, e.Person, e.Step)] += e.Duration
	}
	require.Equal(t, map[string]time.Duration{
		"active/alice/ownership":   2 * time.Second,
		"active/alice/plan-review": 50 * time.Second,
		"active/alice/apply":       50 * time.Second,
		"active/alice/promotion":   60 * time.Second, // the rest of the 2 minutes after the last input
		"active/alice/convergence": 0,                // measured: engaged there, nothing yet
	}, got)
	require.Equal(t, 2*time.Second+40*time.Second+2*time.Minute, effort.Tally(entries).Active)
	require.Equal(t, 3, c.Inputs("alice"))
	c.Input("alice", effort.RoleCaptain, "convergence")
	c.Input("alice", effort.RoleCaptain, "convergence")
	inputs := map[string]int{}
	for _, e := range c.Drain() {
		inputs[e.Step] += e.Inputs
	}
	require.Equal(t, map[string]int{"convergence": 2}, inputs, "each drain reports the inputs since the last, by step")
}

// Unfocused time counts nothing: Pause settles the running interval up to
// the blur, and the next input (or focus) starts afresh.
func TestEffortPausesWhileTheTerminalIsUnfocused(t *testing.T) {
	t.Parallel()
	clock := workflowtest.NewClock(t0)
	c := effort.NewClock(clock, 2*time.Minute, "r1")
	c.Input("alice", effort.RoleCaptain, "plan-review")
	clock.Advance(30 * time.Second)
	require.Equal(t, 30*time.Second, effort.Tally(c.Unstored()).Active, "the running interval is part of the figure")
	require.False(t, c.Idle("alice"))
	c.Pause("alice") // focus went to the chat window
	clock.Advance(90 * time.Second)
	require.True(t, c.Idle("alice"))
	require.Equal(t, 30*time.Second, effort.Tally(c.Unstored()).Active, "nothing accrues while unfocused")
	c.Touch("alice", effort.RoleCaptain, "plan-review") // focus back
	clock.Advance(20 * time.Second)
	c.Input("alice", effort.RoleCaptain, "plan-review")
	require.Equal(t, map[string]time.Duration{"active/alice/plan-review": 50 * time.Second}, drained(c))
	require.Equal(t, 2, c.Inputs("alice"), "focus is engagement, not an input")
	clock.Advance(3 * time.Minute)
	require.True(t, c.Idle("alice"), "past the threshold")
	require.Equal(t, map[string]time.Duration{"active/alice/plan-review": 2 * time.Minute}, drained(c), "the threshold after the last input")
	clock.Advance(time.Minute)
	require.Empty(t, drained(c), "nothing more once idle; a measured zero is reported once")
}

// The figure every view shows is the same before and after a Drain at one
// instant, only grows, and stops at the threshold: a status bar never
// shows time the ledger will not hold.
func TestTheFigureIsWhatTheLedgerHoldsAtEveryInstant(t *testing.T) {
	t.Parallel()
	clock := workflowtest.NewClock(t0)
	tr := effort.NewTracker(clock, 2*time.Minute, "alice")
	tr.Stored("r1", []effort.Entry{
		{ReleaseID: "r1", Person: "bob", Role: effort.RoleApprover, Step: "plan-review", Kind: effort.Active, Duration: time.Minute},
		{ReleaseID: "r1", Person: "ci", Role: effort.RoleCaptain, Step: "apply", Kind: effort.Unmeasured, Note: "no terminal"},
	})
	var ledger []effort.Entry
	ledger = append(ledger, effort.Entry{ReleaseID: "r1", Person: "bob", Role: effort.RoleApprover, Step: "plan-review", Kind: effort.Active, Duration: time.Minute})
	tr.Input("r1", effort.RoleCaptain, "plan-review")
	var last time.Duration
	for i := range 10 {
		clock.Advance(17 * time.Second)
		if i == 3 {
			tr.Follow("r1", "apply")
		}
		before := tr.Figure("r1")
		require.GreaterOrEqual(t, before.Active, last, "the figure only grows")
		last = before.Active
		if i%2 == 0 {
			ledger = append(ledger, tr.Drain("r1")...)
			require.Equal(t, before.Totals, tr.Figure("r1").Totals, "a drain moves time to the ledger, it does not change the figure")
			require.Equal(t, before.Active, effort.Tally(ledger).Active, "what is stored is what was shown")
		}
	}
	f := tr.Figure("r1")
	require.Equal(t, time.Minute+2*time.Minute, f.Active, "bob's minute and alice's threshold after her input")
	require.True(t, f.Idle)
	require.Equal(t, 1, f.Inputs)
	require.Equal(t, 51*time.Second+69*time.Second, f.Of("alice", "plan-review")+f.Of("alice", "apply"))
	require.Len(t, f.Unmeasured, 1)
	require.Equal(t, "no terminal", f.Unmeasured[0].Note)
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
