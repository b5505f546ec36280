package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/rehearsal"
)

func TestRehearsalsRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		r := &rehearsal.Rehearsal{ID: "rh-web-staging-1", App: "web", Env: "staging", Drill: rehearsal.DrillUnavailableImage, Captain: "alice",
			State: rehearsal.StateRunning, Phase: rehearsal.PhaseBaseline, Expected: appstate.VerdictImagePullFailed,
			Baseline:  rehearsal.Baseline{ReleaseID: "web-staging-1", Digest: digest(t, 'a'), EnvCommit: "abc"},
			StartedAt: t0}
		require.NoError(t, l.SaveRehearsal(ctx, r))
		// Saved again after each phase: the row is replaced.
		r.Phase, r.State, r.Detected = rehearsal.PhaseRecovered, rehearsal.StatePassed, appstate.VerdictImagePullFailed
		r.InjectedAt, r.DetectedAt, r.RecoveredAt = t0.Add(time.Minute), t0.Add(90*time.Second), t0.Add(3*time.Minute)
		r.ActualArtifact = workflow.Answer{Value: "registry.test/staging/web@sha256:…", Shown: "actual artifact: …"}
		require.NoError(t, l.SaveRehearsal(ctx, r))
		other := &rehearsal.Rehearsal{ID: "rh-web-prod-2", App: "web", Env: "prod", Drill: rehearsal.DrillFailedReadiness, State: rehearsal.StateFailed, StartedAt: t0.Add(time.Hour)}
		require.NoError(t, l.SaveRehearsal(ctx, other))

		got, err := l.LoadRehearsal(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, r, got)
		_, err = l.LoadRehearsal(ctx, "rh-none")
		require.ErrorIs(t, err, fault.ErrNotFound)

		all, err := l.ListRehearsals(ctx, rehearsal.Filter{})
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, other.ID, all[0].ID, "newest first")
		staging, err := l.ListRehearsals(ctx, rehearsal.Filter{Env: "staging"})
		require.NoError(t, err)
		require.Len(t, staging, 1)
		byDrill, err := l.ListRehearsals(ctx, rehearsal.Filter{Drill: rehearsal.DrillFailedReadiness})
		require.NoError(t, err)
		require.Len(t, byDrill, 1)
		require.Equal(t, "prod", byDrill[0].Env)
	})
}
