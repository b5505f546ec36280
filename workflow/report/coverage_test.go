package report_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/reportfmt"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/report/reporttest"
)

var allFormats = []reportfmt.Format{reportfmt.FormatTable, reportfmt.FormatMarkdown, reportfmt.FormatCSV, reportfmt.FormatJSON, reportfmt.FormatHTML}

func render(t *testing.T, rep reportfmt.Report, f reportfmt.Format) string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, reportfmt.Write(&out, rep, f))
	return out.String()
}

// TestScriptedReleasesAreNotSavedTime is the ledger a scripted plan,
// approve, apply and promote leaves: machine wait and nothing a person's
// time was measured by (before issue 20 not even an unmeasured mark). The
// report used to read it as "3 → 0, 3 freed"; no release is measured, so
// there must be no before/after and no "freed" in any format.
func TestScriptedReleasesAreNotSavedTime(t *testing.T) {
	t.Parallel()
	at := reporttest.Jan1.Add(9 * time.Hour)
	for name, entries := range map[string][]effort.Entry{
		"machine wait only": {
			reporttest.Entry("r1", "", "", "apply", effort.Wait, 3*time.Minute, at),
			reporttest.Entry("r1", "", "", "convergence", effort.Wait, 2*time.Minute, at),
		},
		"marked unmeasured": {
			reporttest.Entry("r1", "", "", "apply", effort.Wait, 3*time.Minute, at),
			reporttest.Entry("r1", "alice", effort.RoleCaptain, "plan-review", effort.Unmeasured, 0, at),
			reporttest.Entry("r1", "alice", effort.RoleCaptain, "apply", effort.Unmeasured, 0, at),
		},
		"off-tool alone": {
			reporttest.Entry("r1", "alice", effort.RoleCaptain, effort.WholeRelease, effort.OffTool, 10*time.Minute, at),
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := report.Data{Releases: []report.ReleaseFact{reporttest.ReleaseAt("r1", at)}, Effort: entries}
			rep, err := report.BuildEffort(data, report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 1, 0),
				Now: reporttest.Jan1.AddDate(0, 2, 0), BaselineHoursPerRelease: 3})
			require.NoError(t, err)
			require.Nil(t, rep.Comparison, "no measured release, no before/after")
			require.Equal(t, "no before/after: staff effort was measured on none of the 1 releases (1 unmeasured: r1)", rep.ComparisonNote)
			require.Equal(t, report.Coverage{Releases: 1, Unmeasured: 1, NotMeasured: []string{"r1"},
				MeasuredPeople: rep.Coverage.MeasuredPeople, UnmeasuredPeople: rep.Coverage.UnmeasuredPeople,
				MeasuredSteps: rep.Coverage.MeasuredSteps, UnmeasuredSteps: rep.Coverage.UnmeasuredSteps, Work: rep.Coverage.Work,
				Line: "Coverage: staff effort measured on 0 of 1 releases; 1 unmeasured: r1 (left out of staff figures and before/after)"}, rep.Coverage)
			require.NotEmpty(t, rep.Coverage.UnmeasuredSteps, "the steps not measured are named, never null or none")
			require.NotEmpty(t, rep.Coverage.Work, "what was not measured is said, with why")
			require.Equal(t, rep.Coverage.Work[0].Person, rep.Releases[0].Unmeasured[0].Person, "and on the release itself")
			require.Empty(t, rep.Coverage.MeasuredPeople)
			require.Zero(t, rep.Staff.Count, "an unmeasured release has no staff figure, not a zero one")
			require.Equal(t, report.CoverageUnmeasured, rep.Releases[0].Coverage)
			m := rep.ByMonth[0]
			require.False(t, m.Compared)
			require.Nil(t, m.MonthComparison, "no before/after figures for a month nobody measured")
			require.Equal(t, "1 of 1 releases not measured (1 unmeasured): no before/after this month", m.CoverageNote)
			for _, f := range allFormats {
				out := render(t, reportfmt.Effort(rep), f)
				require.NotContains(t, out, "freed", f)
				require.NotContains(t, out, "3 → 0", f)
				require.NotContains(t, out, `"comparison":`, f)
				require.NotContains(t, out, "null", "%s: a list is a list, empty or not", f)
				if f != reportfmt.FormatCSV && f != reportfmt.FormatJSON {
					require.Contains(t, out, "Coverage: staff effort measured on 0 of 1 releases", f)
					require.Contains(t, out, "no before/after: staff effort was measured on none of the 1 releases", f)
				}
			}
		})
	}
}

// coverageLedger: January holds seven measured releases (six of 30 min
// active, one a measured zero), one partly measured (bob's 20 min on apply
// measured, carol's apply unmeasured) and one unmeasured (carol's apply
// unmeasured, with 15 min off-tool logged); February one release with
// machine wait alone.
func coverageLedger() (report.Data, report.Options) {
	var data report.Data
	day := func(d int) time.Time { return reporttest.Jan1.AddDate(0, 0, d).Add(9 * time.Hour) }
	for i, id := range []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7"} {
		at := day(i)
		data.Releases = append(data.Releases, reporttest.ReleaseAt(id, at))
		d := 30 * time.Minute
		if id == "m7" {
			d = 0
		}
		data.Effort = append(data.Effort, reporttest.Entry(id, "alice", effort.RoleCaptain, "plan-review", effort.Active, d, at),
			reporttest.Entry(id, "", "", "convergence", effort.Wait, 5*time.Minute, at))
	}
	p1 := reporttest.ReleaseAt("p1", day(10))
	p1.Captain = "bob"
	data.Releases = append(data.Releases, p1, reporttest.ReleaseAt("u1", day(11)), reporttest.ReleaseAt("u2", day(40)))
	data.Effort = append(data.Effort,
		reporttest.Entry("p1", "bob", effort.RoleCaptain, "apply", effort.Active, 20*time.Minute, day(10)),
		reporttest.Entry("p1", "carol", effort.RoleApprover, "apply", effort.Unmeasured, 0, day(10)),
		reporttest.Entry("u1", "carol", effort.RoleCaptain, "apply", effort.Unmeasured, 0, day(11)),
		reporttest.Entry("u1", "alice", effort.RoleCaptain, effort.WholeRelease, effort.OffTool, 15*time.Minute, day(11)),
		reporttest.Entry("u2", "", "", "convergence", effort.Wait, 10*time.Minute, day(40)))
	return data, report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 2, 0), Now: reporttest.Jan1.AddDate(0, 3, 0),
		BaselineHoursPerRelease: 3, BaselineSource: "relcap.yaml effort.baseline_hours_per_release"}
}

func TestCoverageAndBeforeAfterOverMeasuredReleasesOnly(t *testing.T) {
	t.Parallel()
	rep, err := report.BuildEffort(coverageLedger())
	require.NoError(t, err)

	require.Equal(t, report.Coverage{Releases: 10, Measured: 7, PartlyMeasured: 1, Unmeasured: 2,
		MeasuredPeople: []string{"alice", "bob"}, UnmeasuredPeople: []string{"alice", "carol"},
		MeasuredSteps: []string{"plan-review", "apply"}, UnmeasuredSteps: []string{"apply", "release"},
		NotMeasured: []string{"p1", "u1", "u2"},
		// u1 and u2's captain, alice, left no entry there: said, with why.
		Work: []report.UnmeasuredWork{
			{Person: "alice", Step: "release", Reason: report.CaptainNotMeasured, Releases: 2},
			{Person: "carol", Step: "apply", Reason: "no reason recorded", Releases: 2},
		},
		Line: "Coverage: staff effort measured on 7 of 10 releases; 2 unmeasured, 1 partly measured: p1, u1, u2 (left out of staff figures and before/after)"},
		rep.Coverage)
	// Staff figures are the measured releases': 6 × 30 min and a zero.
	require.Equal(t, 7, rep.Staff.Count)
	require.Equal(t, 3*time.Hour, rep.Staff.Total.D())
	require.Equal(t, 30*time.Minute, rep.Staff.Median.D())
	require.Equal(t, 10, rep.Wait.Count, "machine wait is over every release")

	jan, feb := rep.ByMonth[0], rep.ByMonth[1]
	require.Equal(t, report.MonthEffort{Month: "2026-01", Releases: 9, Staff: dur(215 * time.Minute),
		Active: dur(200 * time.Minute), OffTool: report.Duration(15 * time.Minute),
		Measured: 7, PartlyMeasured: 1, Unmeasured: 1, MeasuredStaff: report.Duration(3 * time.Hour),
		CoverageNote: "2 of 9 releases not measured (1 unmeasured, 1 partly measured)", Compared: true,
		MonthComparison: &report.MonthComparison{BeforeHours: 21, AfterHours: 3, FreedHours: 18}}, jan)
	require.Equal(t, report.MonthEffort{Month: "2026-02", Releases: 1, Unmeasured: 1,
		CoverageNote: "1 of 1 releases not measured (1 unmeasured): no before/after this month"}, feb)

	c := rep.Comparison
	require.NotNil(t, c)
	require.Equal(t, 1, c.Months, "February, all unmeasured, is not a month of zero effort")
	require.Equal(t, 21.0, c.Before)
	require.Equal(t, 3.0, c.After)
	require.Equal(t, 18.0, c.Difference)
	require.Equal(t, 10, c.Releases)
	require.Equal(t, 7, c.MeasuredReleases)
	require.Equal(t, "over 7 of 10 releases; 2 unmeasured, 1 partly measured: p1, u1, u2", c.Coverage)
	require.Equal(t, "Release coordination effort, hours/month: 21 → 3, 18 freed (over 7 of 10 releases; 2 unmeasured, 1 partly measured: p1, u1, u2)", c.Line)
	require.Contains(t, c.Conditions, "baseline: 3 h per release, from relcap.yaml effort.baseline_hours_per_release")
	require.Contains(t, c.Conditions, "comparable scope: the baseline describes releases like the ones counted here")

	people := map[string][2]int{}
	for _, p := range rep.People {
		people[p.Person] = [2]int{p.MeasuredReleases, p.UnmeasuredReleases}
	}
	require.Equal(t, map[string][2]int{"alice": {7, 2}, "bob": {1, 0}, "carol": {0, 2}}, people, "alice captained u1 and u2 without an entry: unmeasured, not none")
	for _, s := range rep.ByStep {
		if s.Step == "apply" {
			require.Equal(t, 1, s.MeasuredReleases)
			require.Equal(t, 2, s.UnmeasuredReleases)
		}
	}

	// Every format carries the coverage and the engagement's table.
	table := render(t, reportfmt.Effort(rep), reportfmt.FormatTable)
	for _, want := range []string{
		rep.Coverage.Line,
		"  measured: people alice, bob; steps plan-review, apply",
		"  not measured: people alice, carol; steps apply, release",
		"  unmeasured: alice on release, 2 release(s): " + report.CaptainNotMeasured,
		"  unmeasured: carol on apply, 2 release(s): no reason recorded",
		"  carol   2         0         2           unmeasured  0m        unmeasured",
		c.Line,
		"  if: coverage: over 7 of 10 releases; 2 unmeasured, 1 partly measured: p1, u1, u2; before and after count measured releases only",
		reportfmt.EngagementTitle,
		"2026-02: 1 of 1 releases not measured (1 unmeasured): no before/after this month",
	} {
		require.Contains(t, table, want)
	}
	require.Regexp(t, `2026-01\s+7 of 9\s+21\s+3\s+18 freed`, table)
	require.Regexp(t, `2026-02\s+0 of 1\s+-\s+-\s+not measured`, table)
	require.Regexp(t, `per month \(1\)\s+7 of 10\s+21\s+3\s+18 freed`, table)
	md := render(t, reportfmt.Effort(rep), reportfmt.FormatMarkdown)
	require.Contains(t, md, "## "+reportfmt.EngagementTitle)
	require.Contains(t, md, "| 2026-01 | 7 of 9 | 21 | 3 | 18 freed |")
	require.Contains(t, render(t, reportfmt.Effort(rep), reportfmt.FormatHTML), reportfmt.EngagementTitle)

	var back report.Effort
	require.NoError(t, json.Unmarshal([]byte(render(t, reportfmt.Effort(rep), reportfmt.FormatJSON)), &back))
	require.Equal(t, rep.Coverage, back.Coverage)
	require.Equal(t, rep.Comparison, back.Comparison)
	rows, err := reportfmt.ParseCSV(bytes.NewBufferString(render(t, reportfmt.Effort(rep), reportfmt.FormatCSV)))
	require.NoError(t, err)
	require.Contains(t, rows, reportfmt.Row{Section: "coverage", Metric: "unmeasured", Value: "2", Unit: "count"})
	require.Contains(t, rows, reportfmt.Row{Section: "coverage", Key: "u2", Metric: "not_measured_release", Value: "true", Unit: "bool"})
	require.Contains(t, rows, reportfmt.Row{Section: "comparison", Key: "Release coordination effort", Metric: "measured_releases", Value: "7", Unit: "count"})
	require.Contains(t, rows, reportfmt.Row{Section: "by_month", Key: "2026-02", Metric: "compared", Value: "false", Unit: "bool"})
	require.NotContains(t, rows, reportfmt.Row{Section: "by_month", Key: "2026-02", Metric: "freed", Value: "0", Unit: "hours"})
}

// TestACaptainNobodyMeasuredMakesTheReleasePartlyMeasured is the headless
// demo's ledger before unmeasured entries: the scripted approver's
// seconds were measured, the captain left no entry at all. The approver's
// minutes do not measure the release.
func TestACaptainNobodyMeasuredMakesTheReleasePartlyMeasured(t *testing.T) {
	t.Parallel()
	at := reporttest.Jan1.Add(9 * time.Hour)
	data := report.Data{Releases: []report.ReleaseFact{reporttest.ReleaseAt("r1", at)}, Effort: []effort.Entry{
		reporttest.Entry("r1", "demo-approver", effort.RoleApprover, "plan-review", effort.Active, 4*time.Second, at),
	}}
	o := report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 1, 0), Now: reporttest.Jan1.AddDate(0, 2, 0), BaselineHoursPerRelease: 3}
	rep, err := report.BuildEffort(data, o)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Coverage.PartlyMeasured)
	require.Equal(t, []string{"alice"}, rep.Coverage.UnmeasuredPeople, "the captain")
	require.Equal(t, []string{"demo-approver"}, rep.Coverage.MeasuredPeople)
	require.Nil(t, rep.Comparison)
	require.NotContains(t, render(t, reportfmt.Effort(rep), reportfmt.FormatTable), "freed")

	// The per-person view holds one person's entries: it cannot say.
	o.Person = "demo-approver"
	rep, err = report.BuildEffort(data, o)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Coverage.Measured)
}

// TestReleaseCoverageIsTheReportsRule: a summary of a few releases
// (relcap demo's) classifies each exactly as the report does.
func TestReleaseCoverageIsTheReportsRule(t *testing.T) {
	t.Parallel()
	data, o := coverageLedger()
	rep, err := report.BuildEffort(data, o)
	require.NoError(t, err)
	for _, x := range rep.Releases {
		var entries []effort.Entry
		for _, e := range data.Effort {
			if e.ReleaseID == x.ID {
				entries = append(entries, e)
			}
		}
		cov, work := report.ReleaseCoverage(x.Captain, entries)
		require.Equal(t, x.Coverage, cov, x.ID)
		require.Equal(t, x.Unmeasured, work, x.ID)
	}
}
