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
		"active/bob/approver/plan-review":  time.Minute,
		"wait///apply":                     5 * time.Minute,
	}, got)
	require.Empty(t, c.Drain(), "drain empties the clock")
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
