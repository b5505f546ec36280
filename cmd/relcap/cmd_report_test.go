package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/tui/reportfmt"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/report"
)

// seedReports writes n converged releases in January 2026, each with one
// hour of staff time (45 min active, 15 min off-tool), plus one release at
// 23:30 UTC on 31 January with two hours, into the default ledger of data.
func seedReports(t *testing.T, data string, n int) {
	t.Helper()
	ctx := context.Background()
	l, err := store.OpenSQLite(ctx, filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	defer l.Close()
	jan := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	save := func(id string, at time.Time, active, off time.Duration) {
		r := workflow.NewRelease(id, "web", "prod", "img:1", "alice", at)
		r.Status, r.UpdatedAt, r.EndedAt = workflow.ReleaseConverged, at.Add(2*time.Hour), at.Add(2*time.Hour)
		require.NoError(t, l.SaveRelease(ctx, r))
		require.NoError(t, l.RecordEffort(ctx, []effort.Entry{
			{ReleaseID: id, Person: "alice", Role: effort.RoleCaptain, Step: "plan-review", Kind: effort.Active, Duration: active, At: at},
			{ReleaseID: id, Person: "bob", Role: effort.RoleCaptain, Step: effort.WholeRelease, Kind: effort.OffTool, Duration: off, At: at},
			{ReleaseID: id, Step: "convergence", Kind: effort.Wait, Duration: time.Hour, At: at},
		}))
	}
	for i := range n {
		save(fmt.Sprintf("r%02d", i), jan.Add(time.Duration(i)*12*time.Hour), 45*time.Minute, 15*time.Minute)
	}
	save("late", time.Date(2026, 1, 31, 23, 30, 0, 0, time.UTC), 90*time.Minute, 30*time.Minute)
}

func TestReportEffortPrintsTheManagersLine(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	seedReports(t, data, 40)
	// --to names the last day included: the period ends at 31 January
	// 00:00 UTC, before the late release.
	code, out, errOut := invoke(t, data, "report", "effort", "--from", "2026-01-01", "--to", "2026-01-30", "--baseline", "3")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Release coordination effort, hours/month: 120 → 40, 80 freed")
	require.Contains(t, out, "if: comparable scope")
	require.Contains(t, out, "time zone UTC")
	require.Contains(t, out, "Releases: 40 (release 40)")
}

func TestReportEffortTimeZoneMovesTheLateRelease(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	seedReports(t, data, 2)
	code, out, errOut := invoke(t, data, "--json", "report", "effort", "--from", "2026-01", "--to", "2026-02", "--tz", "Europe/Berlin")
	require.Equal(t, 0, code, errOut)
	var rep report.Effort
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "Europe/Berlin", rep.TimeZone)
	months := map[string]int{}
	for _, m := range rep.ByMonth {
		months[m.Month] = m.Releases
	}
	require.Equal(t, map[string]int{"2026-01": 2, "2026-02": 1}, months, "23:30 UTC on 31 January is February in Berlin")
	require.Equal(t, 4*time.Hour, rep.Staff.Total.D(), "2 × 1 h + 2 h: off-tool included, wait not")
	require.Equal(t, 3*time.Hour, rep.Wait.Total.D())
}

func TestReportFormatsRoundTrip(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	seedReports(t, data, 7)
	args := []string{"report", "effort", "--from", "2026-01", "--to", "2026-01", "--baseline", "2.5"}
	code, js, errOut := invoke(t, data, append(args, "--format", "json")...)
	require.Equal(t, 0, code, errOut)
	code, cs, errOut := invoke(t, data, append(args, "--format", "csv")...)
	require.Equal(t, 0, code, errOut)
	var rep report.Effort
	require.NoError(t, json.Unmarshal([]byte(js), &rep))
	rows, err := reportfmt.ParseCSV(strings.NewReader(cs))
	require.NoError(t, err)
	require.Equal(t, reportfmt.Rows(reportfmt.Effort(&rep)), rows)

	code, md, errOut := invoke(t, data, append(args, "--format", "md")...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, md, "| staff (active + off-tool) | 8 | 1h00m | 2h00m | 2h00m | 9h00m |")

	code, page, errOut := invoke(t, data, append(args, "--format", "html")...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, page, "<svg")
	require.NotContains(t, page, "http://")
	require.NotContains(t, page, "https://")
}

func TestReportEmptyPeriodSaysSo(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	seedReports(t, data, 1)
	code, out, errOut := invoke(t, data, "report", "effort", "--from", "2025-06-01", "--to", "2025-06-30")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "no releases between 2025-06-01 00:00 and 2025-07-01 00:00 (UTC): nothing to report")
	code, out, errOut = invoke(t, data, "report", "measures", "--from", "2025-06-01", "--to", "2025-06-30", "--format", "json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"empty": true`)
	require.Contains(t, errOut, "nothing to report", "machine formats say it on stderr too")
}

func TestReportMeasuresTable(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	seedReports(t, data, 3)
	code, out, errOut := invoke(t, data, "report", "measures", "--from", "2026-01", "--to", "2026-01")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"DORA measures (production: prod)", "change fail rate", "failed deployment recovery time", "deployment rework rate",
		"Reviewed-change lead time", "Drift age", "Ownership conflicts per week", "2026-W01"} {
		require.Contains(t, out, want)
	}
}

func TestReportUsageErrors(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"unknown zone":   {"report", "effort", "--tz", "Mars/Olympus"},
		"unknown format": {"report", "effort", "--format", "pdf"},
		"bad date":       {"report", "effort", "--from", "yesterday"},
		"reversed":       {"report", "measures", "--from", "2026-02-01", "--to", "2026-01-01"},
		"negative":       {"report", "effort", "--from", "2026-01", "--to", "2026-01", "--baseline", "-1"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, _, errOut := invoke(t, t.TempDir(), args...)
			require.Equal(t, exitUsage, code, errOut)
		})
	}
}

// TestReportEffortDoesNotCountScriptedReleasesAsSavedTime builds a ledger
// with real commands run without a terminal (promote, converge, approve,
// resume), as a script or CI runs them: nobody's active time is measured,
// so the report must say the releases are unmeasured and show no
// before/after, never "2 releases × 3 h → 0, freed".
func TestReportEffortDoesNotCountScriptedReleasesAsSavedTime(t *testing.T) {
	t.Parallel()
	cfg, host, envRepo := promoteRepo(t)
	_, env := simulated(t, cfg, envRepo, nil)
	data := t.TempDir()
	pushImage(t, host+"/ci/web:1.4.2")
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:1.4.2")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "converge", "--env", "staging", "--timeout", "30s")
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--actor", "alice", "promote", "--env", "prod", "--image", host+"/ci/web:1.4.2")
	require.Equal(t, exitBlocked, code, out+errOut)
	id := releaseIDFrom(t, errOut+out)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--actor", "bob", "approve", "--release", id)
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "resume", id, "--timeout", "30s")
	require.Equal(t, 0, code, out+errOut)

	code, js, errOut := invokeEnv(t, data, env, "-c", cfg, "report", "effort", "--baseline", "3", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var rep report.Effort
	require.NoError(t, json.Unmarshal([]byte(js), &rep))
	require.Equal(t, 2, rep.Coverage.Releases)
	require.Zero(t, rep.Coverage.Measured, "no terminal, no measured staff time")
	require.Equal(t, 2, rep.Coverage.Unmeasured)
	require.Nil(t, rep.Comparison)
	require.Contains(t, rep.ComparisonNote, "staff effort was measured on none of the 2 releases")
	require.NotContains(t, js, "freed_hours")

	for _, f := range []string{"table", "md", "csv", "html"} {
		code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "report", "effort", "--baseline", "3", "--format", f)
		require.Equal(t, 0, code, errOut)
		require.NotContains(t, out, "freed", f)
		if f != "csv" {
			require.Contains(t, out, "Coverage: staff effort measured on 0 of 2 releases; 2 unmeasured: ", f)
		}
	}
}

func TestReportMeasuresHelpDefinesTheFiveDORAMeasures(t *testing.T) {
	t.Parallel()
	code, out, errOut := invoke(t, t.TempDir(), "report", "measures", "--help")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"change lead time:", "deployment frequency:", "failed deployment recovery time:", "change fail rate:", "deployment rework rate:", "not from any incident"} {
		require.Contains(t, out, want)
	}
	code, out, errOut = invoke(t, t.TempDir(), "report", "effort", "--help")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "missing data is not saved time")
}
