package workflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/input"
	"github.com/relcap/relcap/workflow/rehearsal"
)

// TestEveryIDRelcapMakesPassesItsGrammar: the grammar a typed ID is
// checked against accepts every ID relcap makes (releases, break-glass
// releases, rehearsals, sessions, fingerprints, drills) with the longest
// app and environment names relcap.yaml accepts, and refuses what no ID
// can be.
func TestEveryIDRelcapMakesPassesItsGrammar(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	app, env := strings.Repeat("a", input.MaxAppNameLen), strings.Repeat("e", input.MaxEnvNameLen)
	require.True(t, input.ValidAppName(app))
	require.True(t, input.ValidEnvName(env))
	for kind, ids := range map[input.IDKind][]string{
		input.IDRelease:   {workflow.NewReleaseID("web", "prod", now), workflow.NewReleaseID(app, env, now) + "-bg", rehearsal.NewID(app, env, now)},
		input.IDRehearsal: {rehearsal.NewID(app, env, now)},
		input.IDSession:   {"20261130T135527Z-3f9a1c"},
		input.IDPlan:      {strings.Repeat("0a", 32)},
		input.IDEnv:       {"staging", env},
		input.IDPrincipal: {"alice", "bob@example.com", "demo-approver"},
		input.IDLock:      {"0d7f3c4e-8b1a-4f7e-9f3c-2a6b5d4e3f21"},
	} {
		for _, id := range ids {
			require.NoError(t, input.CheckID(kind, "--x", id), "%s %s", kind, id)
		}
	}
	for _, d := range rehearsal.AllDrills {
		require.NoError(t, input.CheckID(input.IDDrill, "--drill", string(d)))
	}
	for _, bad := range []string{"a\nb", "../x", "a..b", "\x1b[2J", "x/y", "-x", " x", strings.Repeat("w", input.MaxIDLen+1)} {
		err := input.CheckID(input.IDRelease, "--release", bad)
		require.ErrorIs(t, err, fault.ErrUsage, "%q", bad)
		require.NotContains(t, err.Error(), "\n")
		require.NotContains(t, err.Error(), "\x1b")
	}
	require.False(t, input.ValidAppName("web app"))
	require.False(t, input.ValidEnvName(env+"e"))
}
