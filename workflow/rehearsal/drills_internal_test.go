package rehearsal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

func TestRehearsalOutcomeFailedBeforeAbandoned(t *testing.T) {
	require.NoError(t, Outcome([]*Rehearsal{{State: StatePassed}}))
	err := Outcome([]*Rehearsal{{ID: "a", Drill: DrillFailedApply, State: StateAbandoned}, {ID: "f", Drill: DrillUnavailableImage, State: StateFailed, Failure: "not detected"}})
	require.ErrorIs(t, err, fault.ErrNotConverged)
	require.ErrorContains(t, err, "unavailable-image (f): not detected")
	require.ErrorIs(t, Outcome([]*Rehearsal{{ID: "a", State: StateAbandoned}}), fault.ErrBlocked)
}

func TestRehearsalWatchTimeoutIsTheLongestPhase(t *testing.T) {
	p := &workflow.Project{Environments: []workflow.Environment{{Name: "a"}, {Name: "b"}}}
	p.Environments[1].Rehearsal.Timeout = workflow.DefaultRehearsalTimeout + time.Minute
	require.Equal(t, workflow.DefaultRehearsalTimeout+time.Minute, WatchTimeout(p, 0))
	require.Equal(t, 42*time.Second, WatchTimeout(p, 42*time.Second))
}
