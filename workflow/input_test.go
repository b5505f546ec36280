package workflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

// TestEveryIDRelcapMakesPassesItsGrammar: the grammar a typed ID is
// checked against accepts every ID relcap makes (releases, break-glass
// releases, rehearsals, sessions, fingerprints, drills) with the longest
// app and environment names relcap.yaml accepts, and refuses what no ID
// can be.
func TestEveryIDRelcapMakesPassesItsGrammar(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	app, env := strings.Repeat("a", workflow.MaxAppNameLen), strings.Repeat("e", workflow.MaxEnvNameLen)
	require.True(t, workflow.ValidAppName(app))
	require.True(t, workflow.ValidEnvName(env))
	for kind, ids := range map[workflow.IDKind][]string{
		workflow.IDRelease:   {workflow.NewReleaseID("web", "prod", now), workflow.NewReleaseID(app, env, now) + "-bg", workflow.NewRehearsalID(app, env, now)},
		workflow.IDRehearsal: {workflow.NewRehearsalID(app, env, now)},
		workflow.IDSession:   {"20261130T135527Z-3f9a1c"},
		workflow.IDPlan:      {strings.Repeat("0a", 32)},
		workflow.IDEnv:       {"staging", env},
		workflow.IDPrincipal: {"alice", "bob@example.com", "demo-approver"},
		workflow.IDLock:      {"0d7f3c4e-8b1a-4f7e-9f3c-2a6b5d4e3f21"},
	} {
		for _, id := range ids {
			require.NoError(t, workflow.CheckID(kind, "--x", id), "%s %s", kind, id)
		}
	}
	for _, d := range workflow.AllDrills {
		require.NoError(t, workflow.CheckID(workflow.IDDrill, "--drill", string(d)))
	}
	for _, bad := range []string{"a\nb", "../x", "a..b", "\x1b[2J", "x/y", "-x", " x", strings.Repeat("w", workflow.MaxIDLen+1)} {
		err := workflow.CheckID(workflow.IDRelease, "--release", bad)
		require.ErrorIs(t, err, workflow.ErrUsage, "%q", bad)
		require.NotContains(t, err.Error(), "\n")
		require.NotContains(t, err.Error(), "\x1b")
	}
	require.False(t, workflow.ValidAppName("web app"))
	require.False(t, workflow.ValidEnvName(env+"e"))
}
