package cli

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/rehearsal"
)

// parse runs cmd on args with its run function replaced, as cli/cli's runF
// tests do: what the command line makes, without opening anything.
func parse(t *testing.T, cmd *cobra.Command, args ...string) error {
	t.Helper()
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	return cmd.ExecuteContext(context.Background())
}

func TestRehearseFlagsMakeTheDrillsToRun(t *testing.T) {
	var got *rehearseOptions
	capture := func(_ context.Context, o *rehearseOptions) error { got = o; return nil }
	require.NoError(t, parse(t, newCmdRehearse(nil, capture), "--env", "staging", "--all"))
	require.Equal(t, rehearsal.AllDrills, got.Drills)
	require.True(t, got.All)

	require.NoError(t, parse(t, newCmdRehearse(nil, capture), "--env", "staging", "--drill", "failed-apply", "--timeout", "2m"))
	require.Equal(t, []rehearsal.Drill{rehearsal.DrillFailedApply}, got.Drills)
	require.Equal(t, 2*time.Minute, got.Timeout)

	for _, args := range [][]string{{"--env", "staging"}, {"--env", "staging", "--all", "--drill", "failed-apply"}, {"--all"}, {"--resume", "r", "--cleanup", "r"}} {
		err := parse(t, newCmdRehearse(nil, capture), args...)
		require.Equal(t, ExitUsage, ExitCode(err), "%v", args)
	}
}

func TestReleaseSchemaFlagsAreCheckedBeforeAnythingRuns(t *testing.T) {
	var got *releaseOptions
	capture := func(_ context.Context, o *releaseOptions) error { got = o; return nil }
	require.NoError(t, parse(t, newCmdRelease(nil, capture), "--env", "staging", "--image", "r/web:1", "--schema", "3"))
	require.True(t, got.SchemaGiven)
	require.Equal(t, 3, got.Schema)
	require.Equal(t, 10*time.Minute, got.Timeout)

	got = nil
	err := parse(t, newCmdRelease(nil, capture), "--env", "staging", "--image", "r/web:1", "--min-schema", "4", "--max-schema", "2")
	require.Equal(t, ExitUsage, ExitCode(err))
	require.Nil(t, got, "refused before it runs")
}

func TestApproveWantsExactlyOneThing(t *testing.T) {
	var got *approveOptions
	capture := func(_ context.Context, o *approveOptions) error { got = o; return nil }
	require.NoError(t, parse(t, newCmdApprove(nil, capture), "--breakglass", "--env", "prod", "--ttl", "30m", "--reason", "hotfix"))
	require.Equal(t, 30*time.Minute, got.TTL)
	for _, args := range [][]string{{}, {"--plan", "abc", "--release", "r1"}, {"--breakglass", "--env", "prod"}, {"--plan", "abc", "--env", "prod"}} {
		require.Equal(t, ExitUsage, ExitCode(parse(t, newCmdApprove(nil, capture), args...)), "%v", args)
	}
}

func TestReportFlagsSayWhichWereGiven(t *testing.T) {
	var got *reportOptions
	capture := func(_ context.Context, o *reportOptions) error { got = o; return nil }
	require.NoError(t, parse(t, newCmdReportEffort(nil, capture), "--baseline", "2.5"))
	require.True(t, got.effort)
	require.True(t, got.baselineGiven)
	require.False(t, got.formatGiven)
	require.NoError(t, parse(t, newCmdReportMeasures(nil, capture), "--format", "csv"))
	require.False(t, got.effort)
	require.True(t, got.formatGiven)
}
