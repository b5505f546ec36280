package store

import (
	"encoding/hex"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/report"
)

// TestEffortSumsKeepAMeasuredZeroAndAnUnmeasuredMark proves the summed
// read (effort_totals) keeps a zero-duration active entry as a key with 0
// and an unmeasured entry as a key of its own: without them a measured
// zero and work relcap could not measure would both read as "no data",
// and reports could not tell measured releases from unmeasured ones.
func TestEffortSumsKeepAMeasuredZeroAndAnUnmeasuredMark(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		l := b.openNew(t)
		ctx := t.Context()
		at := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
		for _, id := range []string{"zero", "unmeasured"} {
			r := workflow.NewRelease(id, "web", "prod", "img:1", "alice", at)
			require.NoError(t, l.SaveRelease(ctx, r))
		}
		require.NoError(t, l.RecordEffort(ctx, []effort.Entry{
			{ReleaseID: "zero", Person: "alice", Role: effort.RoleCaptain, Step: "apply", Kind: effort.Active, At: at},
			{ReleaseID: "zero", Person: "alice", Role: effort.RoleCaptain, Step: "apply", Kind: effort.Active, At: at.Add(time.Minute)},
			{ReleaseID: "unmeasured", Person: "alice", Role: effort.RoleCaptain, Step: "apply", Kind: effort.Unmeasured, At: at,
				Note: "no terminal: stdin is not a TTY (CI or a script)"},
			{ReleaseID: "unmeasured", Step: "apply", Kind: effort.Wait, Duration: time.Minute, At: at},
		}))
		data, err := l.ReportData(ctx, report.Query{From: at.Add(-time.Hour), To: at.Add(time.Hour), EffortOnly: true})
		require.NoError(t, err)
		type key struct {
			release, person, step string
			kind                  effort.Kind
			d                     time.Duration
		}
		var got []key
		for _, e := range data.Effort {
			got = append(got, key{e.ReleaseID, e.Person, e.Step, e.Kind, e.Duration})
		}
		require.ElementsMatch(t, []key{
			{"zero", "alice", "apply", effort.Active, 0},
			{"unmeasured", "alice", "apply", effort.Unmeasured, 0},
			{"unmeasured", "", "apply", effort.Wait, time.Minute},
		}, got)

		rep, err := report.BuildEffort(data, report.Options{From: at.Add(-time.Hour), To: at.Add(time.Hour), Now: at.Add(2 * time.Hour), BaselineHoursPerRelease: 3})
		require.NoError(t, err)
		require.Equal(t, 1, rep.Coverage.Measured, "a measured zero measures the release")
		require.Equal(t, 1, rep.Coverage.Unmeasured)
		require.Equal(t, []string{"unmeasured"}, rep.Coverage.NotMeasured)
		// Why is read back too: the summed read does not carry the note.
		require.Equal(t, []report.UnmeasuredWork{{Person: "alice", Step: "apply",
			Reason: "no terminal: stdin is not a TTY (CI or a script)", Releases: 1}}, rep.Coverage.Work)
		require.NotNil(t, rep.Comparison)
		require.Equal(t, "Release coordination effort, hours/month: 3 → 0, 3 freed (over 1 of 2 releases; 1 unmeasured: unmeasured)", rep.Comparison.Line)
	})
}

// TestSandboxReleasesAreLeftOutAndSaidSo: a sandbox release (relcap demo's
// project) is stored with its mark, never read as a release of the
// report, and counted as left out, so no demo shows up as hours freed or
// a deployment.
func TestSandboxReleasesAreLeftOutAndSaidSo(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		l := b.openNew(t)
		ctx := t.Context()
		at := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
		sandbox := &workflow.Project{App: "web", Sandbox: true}
		team := &workflow.Project{App: "web"}
		for _, r := range []*workflow.Release{
			sandbox.NewReleaseOf("demo-1", "staging", "img:1", "alice", at),
			sandbox.NewReleaseOf("demo-2", "prod", "img:1", "alice", at),
			team.NewReleaseOf("real", "prod", "img:1", "alice", at),
		} {
			r.Status = workflow.ReleaseConverged
			require.NoError(t, l.SaveRelease(ctx, r))
			require.NoError(t, l.RecordEffort(ctx, []effort.Entry{{ReleaseID: r.ID, Person: "alice", Role: effort.RoleCaptain,
				Step: "apply", Kind: effort.Active, Duration: 10 * time.Minute, At: at}}))
		}
		loaded, err := l.LoadRelease(ctx, "demo-1")
		require.NoError(t, err)
		require.True(t, loaded.Sandbox, "the mark is kept")

		q := report.Query{From: at.Add(-time.Hour), To: at.Add(time.Hour)}
		data, err := l.ReportData(ctx, q)
		require.NoError(t, err)
		require.Len(t, data.Releases, 1)
		require.Equal(t, "real", data.Releases[0].ID)
		require.Equal(t, 2, data.SandboxReleases)

		o := report.Options{From: q.From, To: q.To, Now: at.Add(2 * time.Hour), BaselineHoursPerRelease: 3, ProdEnv: "prod"}
		rep, err := report.BuildEffort(data, o)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Counts.Total)
		require.Equal(t, 2, rep.Counts.SandboxExcluded)
		require.Equal(t, 1, rep.Comparison.MeasuredReleases, "hours freed are the team's release's alone")
		m, err := report.BuildMeasures(data, o)
		require.NoError(t, err)
		require.Equal(t, 1, m.DORA.DeploymentFrequency.Deployments, "a demo is no deployment")
	})
}

// TestALongUnmeasuredReasonIsStoredAndRead: a reason of 10 KB (an error's
// whole text) is stored and read back on both databases; on PostgreSQL an
// index entry holding it would exceed the B-tree's limit and refuse the
// insert.
func TestALongUnmeasuredReasonIsStoredAndRead(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		l := b.openNew(t)
		ctx := t.Context()
		at := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
		require.NoError(t, l.SaveRelease(ctx, workflow.NewRelease("long", "web", "prod", "img:1", "alice", at)))
		// Hex of random bytes: text PostgreSQL cannot compress under the
		// limit.
		raw := make([]byte, 5000)
		_, _ = rand.NewChaCha8([32]byte{1}).Read(raw)
		reason := "no terminal: " + hex.EncodeToString(raw)
		require.NoError(t, l.RecordEffort(ctx, []effort.Entry{{ReleaseID: "long", Person: "alice", Role: effort.RoleCaptain,
			Step: "apply", Kind: effort.Unmeasured, At: at, Note: reason}}))
		data, err := l.ReportData(ctx, report.Query{From: at.Add(-time.Hour), To: at.Add(time.Hour), EffortOnly: true})
		require.NoError(t, err)
		require.Len(t, data.Effort, 1)
		require.Equal(t, reason, data.Effort[0].Note)
	})
}
