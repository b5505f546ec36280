package workflow

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRehearsalOutcomeFailedBeforeAbandoned(t *testing.T) {
	require.NoError(t, RehearsalOutcome([]*Rehearsal{{State: RehearsalStatePassed}}))
	err := RehearsalOutcome([]*Rehearsal{{ID: "a", Drill: DrillFailedApply, State: RehearsalStateAbandoned}, {ID: "f", Drill: DrillUnavailableImage, State: RehearsalStateFailed, Failure: "not detected"}})
	require.ErrorIs(t, err, ErrNotConverged)
	require.ErrorContains(t, err, "unavailable-image (f): not detected")
	require.ErrorIs(t, RehearsalOutcome([]*Rehearsal{{ID: "a", State: RehearsalStateAbandoned}}), ErrBlocked)
}

func TestRehearsalWatchTimeoutIsTheLongestPhase(t *testing.T) {
	p := &Project{Environments: []Environment{{Name: "a"}, {Name: "b"}}}
	p.Environments[1].Rehearsal.Timeout = DefaultRehearsalTimeout + time.Minute
	require.Equal(t, DefaultRehearsalTimeout+time.Minute, p.RehearsalWatchTimeout(0))
	require.Equal(t, 42*time.Second, p.RehearsalWatchTimeout(42*time.Second))
}
