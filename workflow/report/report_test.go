package report_test

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/reportfmt"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/report/reporttest"
)

// TestEffortReportManagerForm is the example: 40 releases of 1 h of
// staff time each against a 3 h baseline.
func TestEffortReportManagerForm(t *testing.T) {
	t.Parallel()
	rep, err := report.BuildEffort(reporttest.ManagerForm())
	require.NoError(t, err)
	require.NotNil(t, rep.Comparison)
	require.Equal(t, "Release coordination effort, hours/month: 120 → 40, 80 freed (over 40 of 40 releases)", rep.Comparison.Line)
	require.Equal(t, 40, rep.Counts.Total)
	require.Equal(t, time.Hour, rep.Staff.Median.D())
	require.Equal(t, 40*time.Hour, rep.Staff.Total.D())
	require.Equal(t, 20*time.Hour, rep.Wait.Total.D())
	require.Equal(t, []report.MonthEffort{{Month: "2026-01", Releases: 40, Staff: dur(40 * time.Hour),
		Active: dur(1000 * time.Minute * 2), OffTool: report.Duration(400 * time.Minute),
		Measured: 40, MeasuredStaff: report.Duration(40 * time.Hour), Compared: true,
		MonthComparison: &report.MonthComparison{BeforeHours: 120, AfterHours: 40, FreedHours: 80}}}, rep.ByMonth)

}

// nearestRank is the textbook definition, written apart from the report's.
func nearestRank(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(math.Ceil(p/100*float64(len(s))))-1]
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// requireMinute compares durations to the minute, as the issue checks.
func requireMinute(t *testing.T, want time.Duration, got report.Duration, what string) {
	t.Helper()
	require.Equal(t, want.Round(time.Minute), got.D().Round(time.Minute), what)
}

func TestEffortReportMatchesAGeneratedLedger(t *testing.T) {
	t.Parallel()
	for _, tz := range []string{"UTC", "Europe/Berlin", "America/New_York"} {
		t.Run(tz, func(t *testing.T) {
			t.Parallel()
			loc, err := time.LoadLocation(tz)
			require.NoError(t, err)
			now := time.Date(2026, 6, 1, 0, 0, 0, 0, loc)
			data, tr := reporttest.Generate(42, 503, loc)
			from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
			rep, err := report.BuildEffort(data, report.Options{From: from, To: from.AddDate(0, 3, 0), Location: loc, Now: now, BaselineHoursPerRelease: 2.5})
			require.NoError(t, err)

			require.Equal(t, tr.Total, rep.Counts.Total)
			require.Equal(t, tr.Failures, rep.Counts.Failures)
			require.Equal(t, 1, rep.Counts.BreakGlassExcluded)
			require.Equal(t, 0, rep.Counts.InProgress, "in-progress releases months old are abandoned")
			for name, c := range map[string]struct {
				ds  []time.Duration
				got report.Stats
			}{"staff": {tr.Staff, rep.Staff}, "active": {tr.Active, rep.Active}, "off-tool": {tr.OffTool, rep.OffTool},
				"wait": {tr.Wait, rep.Wait}, "elapsed": {tr.Elapsed, rep.Elapsed}} {
				require.Equal(t, len(c.ds), c.got.Count, name)
				requireMinute(t, sum(c.ds), c.got.Total, name+" total")
				requireMinute(t, nearestRank(c.ds, 50), c.got.Median, name+" median")
				requireMinute(t, nearestRank(c.ds, 90), c.got.P90, name+" p90")
			}
			for _, r := range rep.ByRole {
				requireMinute(t, sum(tr.ByRole[r.Role]), r.Active.Total, string(r.Role))
				requireMinute(t, nearestRank(tr.ByRole[r.Role], 50), r.Active.Median, string(r.Role)+" median")
				requireMinute(t, nearestRank(tr.ByRole[r.Role], 90), r.Active.P90, string(r.Role)+" p90")
			}
			require.Len(t, rep.ByStep, 5)
			for _, s := range rep.ByStep {
				requireMinute(t, sum(tr.ByStep[s.Step]), s.Active.Total, s.Step)
				requireMinute(t, nearestRank(tr.ByStep[s.Step], 50), s.Active.Median, s.Step+" median")
			}
			require.Len(t, rep.ByMonth, 3)
			var before, after float64
			for _, m := range rep.ByMonth {
				require.Equal(t, tr.MonthReleases[m.Month], m.Releases, m.Month)
				require.NotNil(t, m.Staff, "every release of the generated ledger is measured")
				requireMinute(t, tr.MonthStaff[m.Month], *m.Staff, m.Month)
				require.InDelta(t, float64(tr.MonthReleases[m.Month])*2.5, m.BeforeHours, 1e-9)
				require.InDelta(t, tr.MonthStaff[m.Month].Hours(), m.AfterHours, 1.0/60)
				before += float64(tr.MonthReleases[m.Month]) * 2.5
				after += tr.MonthStaff[m.Month].Hours()
			}
			require.InDelta(t, before/3, rep.Comparison.Before, 1e-9)
			require.InDelta(t, after/3, rep.Comparison.After, 1.0/60)
		})
	}
}

// TestStalledReleasesCountAsFailedAndAbandonedOnesDoNot: a release left
// unfinished past the abandon-after rule is stalled, a failure; one a
// person abandoned (relcap release abandon) is neither a failure nor in
// progress, and an infrastructure-only release that succeeded succeeded.
func TestStalledReleasesCountAsFailedAndAbandonedOnesDoNot(t *testing.T) {
	t.Parallel()
	now := reporttest.Jan1.AddDate(0, 0, 30)
	mk := func(id string, idle time.Duration, status workflow.ReleaseStatus) report.ReleaseFact {
		f := reporttest.ReleaseAt(id, reporttest.Jan1.Add(time.Hour))
		f.Status, f.EndedAt, f.UpdatedAt = status, time.Time{}, now.Add(-idle)
		return f
	}
	data := report.Data{Releases: []report.ReleaseFact{
		mk("stale-8d", 8*24*time.Hour, workflow.ReleaseInProgress),
		mk("blocked-7d1m", 7*24*time.Hour+time.Minute, workflow.ReleaseBlocked),
		mk("exactly-7d", 7*24*time.Hour, workflow.ReleaseInProgress),
		mk("fresh-6d", 6*24*time.Hour, workflow.ReleaseBlocked),
		mk("failed", time.Hour, workflow.ReleaseFailed),
		mk("abandoned-9d", 9*24*time.Hour, workflow.ReleaseAbandoned),
		mk("infra-only", time.Hour, workflow.ReleaseSucceeded),
	}}
	rep, err := report.BuildEffort(data, report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 1, 0), Now: now})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Counts.Stalled)
	require.Equal(t, 1, rep.Counts.Abandoned, "abandoned on purpose, however long ago")
	require.Equal(t, 2, rep.Counts.InProgress)
	require.Equal(t, 1, rep.Counts.Failed)
	require.Equal(t, 1, rep.Counts.Succeeded)
	require.Equal(t, 3, rep.Counts.Failures, "failed and the two stalled; never the abandoned one")
	outcomes := map[string]report.ReleaseOutcome{}
	for _, r := range rep.Releases {
		outcomes[r.ID] = r.Outcome
	}
	require.Equal(t, report.OutcomeStalled, outcomes["stale-8d"])
	require.Equal(t, report.OutcomeAbandoned, outcomes["abandoned-9d"])
	require.False(t, report.OutcomeAbandoned.Failure())
	require.Equal(t, report.OutcomeSucceeded, outcomes["infra-only"])

	require.Equal(t, report.OutcomeInProgress, outcomes["exactly-7d"])
	// A stalled release's elapsed time ends at its last update; a
	// running one's runs to now.
	for _, r := range rep.Releases {
		switch r.ID {
		case "stale-8d":
			require.Equal(t, now.Add(-8*24*time.Hour).Sub(reporttest.Jan1.Add(time.Hour)), r.Elapsed.D())
			require.False(t, r.ElapsedOpen)
		case "fresh-6d":
			require.Equal(t, now.Sub(reporttest.Jan1.Add(time.Hour)), r.Elapsed.D())
			require.True(t, r.ElapsedOpen)
		}
	}

	m, err := report.BuildMeasures(data, report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 1, 0), Now: now})
	require.NoError(t, err)
	// Finished: failed, the two stalled and the succeeded one; the
	// abandoned one shipped nothing.
	require.Equal(t, report.FailureRate{Total: 7, Finished: 4, Failed: 1, Stalled: 2, Abandoned: 1, Failures: 3, Rate: 0.75}, m.Releases)
}

// TestTimeZoneDecidesTheDayAndMonth: a release at 23:30 UTC on 31 January
// is February in Berlin, and a release at 03:30 UTC on 1 February is still
// January in New York.
func TestTimeZoneDecidesTheDayAndMonth(t *testing.T) {
	t.Parallel()
	late := time.Date(2026, 1, 31, 23, 30, 0, 0, time.UTC)
	early := time.Date(2026, 2, 1, 3, 30, 0, 0, time.UTC)
	data := report.Data{
		Releases: []report.ReleaseFact{reporttest.ReleaseAt("late", late), reporttest.ReleaseAt("early", early)},
		Effort: []effort.Entry{
			reporttest.Entry("late", "alice", effort.RoleCaptain, "apply", effort.Active, time.Hour, late),
			reporttest.Entry("early", "alice", effort.RoleCaptain, "apply", effort.Active, 2*time.Hour, early),
		},
	}
	months := func(tz string) map[string]int {
		loc, err := time.LoadLocation(tz)
		require.NoError(t, err)
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
		rep, err := report.BuildEffort(data, report.Options{From: from, To: from.AddDate(0, 2, 0), Location: loc, Now: early.AddDate(0, 1, 0)})
		require.NoError(t, err)
		require.Equal(t, tz, rep.TimeZone)
		out := map[string]int{}
		for _, m := range rep.ByMonth {
			if m.Staff != nil { // a month without a measured release has no staff figure
				out[m.Month] = int(m.Staff.D().Hours())
			}
		}
		return out
	}
	require.Equal(t, map[string]int{"2026-01": 1, "2026-02": 2}, months("UTC"))
	require.Equal(t, map[string]int{"2026-01": 0, "2026-02": 3}, months("Europe/Berlin"))
	require.Equal(t, map[string]int{"2026-01": 3, "2026-02": 0}, months("America/New_York"))

	// The period's bounds are in the zone too: February in Berlin starts
	// at 23:00 UTC on 31 January, so it holds both releases.
	berlin, _ := time.LoadLocation("Europe/Berlin")
	feb := time.Date(2026, 2, 1, 0, 0, 0, 0, berlin)
	rep, err := report.BuildEffort(data, report.Options{From: feb, To: feb.AddDate(0, 1, 0), Location: berlin, Now: feb.AddDate(0, 2, 0)})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Counts.Total)
	require.Equal(t, "Europe/Berlin", rep.TimeZone)
}

func TestEmptyPeriodSaysSo(t *testing.T) {
	t.Parallel()
	data := report.Data{Releases: []report.ReleaseFact{reporttest.ReleaseAt("old", reporttest.Jan1.AddDate(0, -3, 0))}}
	rep, err := report.BuildEffort(data, report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 1, 0), Now: reporttest.Jan1.AddDate(0, 2, 0), Env: "prod", BaselineHoursPerRelease: 3})
	require.NoError(t, err)
	require.True(t, rep.Empty)
	require.Equal(t, "no releases in prod between 2026-01-01 00:00 and 2026-02-01 00:00 (UTC): nothing to report", rep.Message)
	m, err := report.BuildMeasures(data, report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 1, 0), Now: reporttest.Jan1.AddDate(0, 2, 0)})
	require.NoError(t, err)
	require.True(t, m.Empty)
	require.Contains(t, m.Message, "nothing to report")
}

func TestPersonViewIsOnesOwnHistory(t *testing.T) {
	t.Parallel()
	a, b := reporttest.Jan1.Add(time.Hour), reporttest.Jan1.Add(48*time.Hour)
	ra, rb := reporttest.ReleaseAt("a", a), reporttest.ReleaseAt("b", b)
	rb.Captain = "bob"
	data := report.Data{
		Releases: []report.ReleaseFact{ra, rb, reporttest.ReleaseAt("c", b)},
		Effort: []effort.Entry{
			reporttest.Entry("a", "alice", effort.RoleCaptain, "apply", effort.Active, 30*time.Minute, a),
			reporttest.Entry("a", "bob", effort.RoleApprover, "plan-review", effort.Active, 15*time.Minute, a),
			reporttest.Entry("b", "alice", effort.RoleApprover, "plan-review", effort.Active, 10*time.Minute, b),
			reporttest.Entry("b", "bob", effort.RoleCaptain, "apply", effort.Active, time.Hour, b),
		},
	}
	rep, err := report.BuildEffort(data, report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 1, 0), Now: reporttest.Jan1.AddDate(0, 1, 0), Person: "alice", BaselineHoursPerRelease: 3})
	require.NoError(t, err)
	// a (worked on), b (worked on), c (captained, no effort).
	require.Equal(t, 3, rep.Counts.Total)
	require.Equal(t, 40*time.Minute, rep.Staff.Total.D())
	require.Equal(t, 10*time.Minute, rep.Staff.Median.D())
	require.Nil(t, rep.Comparison)
	require.Contains(t, rep.ComparisonNote, "per-person")
	require.Len(t, rep.People, 1)
	require.Equal(t, "alice", rep.People[0].Person)
}

func TestNearestRank(t *testing.T) {
	t.Parallel()
	ds := func(ms ...int) []time.Duration {
		out := make([]time.Duration, len(ms))
		for i, m := range ms {
			out[i] = time.Duration(m) * time.Minute
		}
		return out
	}
	for _, c := range []struct {
		in          []time.Duration
		median, p90 time.Duration
	}{
		{ds(5), 5 * time.Minute, 5 * time.Minute},
		{ds(1, 2), time.Minute, 2 * time.Minute}, // lower middle; p90 rank ⌈1.8⌉ = 2
		{ds(3, 1, 2), 2 * time.Minute, 3 * time.Minute},
		{ds(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 5 * time.Minute, 9 * time.Minute},
		{ds(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), 6 * time.Minute, 10 * time.Minute},
	} {
		s := report.NewStats(c.in)
		require.Equal(t, c.median, s.Median.D())
		require.Equal(t, c.p90, s.P90.D())
	}
	require.Equal(t, report.Stats{}, report.NewStats(nil))
}

func TestMeasuresMatchHandComputedFigures(t *testing.T) {
	t.Parallel()
	data, o := reporttest.MeasuresLedger(t)
	rep, err := report.BuildMeasures(data, o)
	require.NoError(t, err)
	h := time.Hour
	require.Equal(t, 3, rep.PlanLeadTime.Count)
	require.Equal(t, 4*h, rep.PlanLeadTime.Median.D())
	require.Equal(t, 12*h, rep.PlanLeadTime.Total.D())
	require.Equal(t, 1, rep.PlansPending)
	require.Equal(t, 2, rep.DigestLeadTime.Count)
	require.Equal(t, 4*h, rep.DigestLeadTime.Median.D())
	require.Equal(t, 25*h, rep.DigestLeadTime.P90.D())
	require.Equal(t, report.FailureRate{Total: 4, Finished: 4, Failed: 1, RolledBack: 1, Failures: 2, Rate: 0.5}, rep.Releases)
	require.Equal(t, 2, rep.Recovery.Count)
	require.Equal(t, 3*h, rep.Recovery.Median.D())
	require.Equal(t, 5*h, rep.Recovery.P90.D())
	require.Equal(t, 2, rep.DriftAge.Count)
	require.Equal(t, 24*h, rep.DriftAge.Median.D())
	require.Equal(t, 120*h, rep.DriftAge.Max.D())
	require.Equal(t, 1, rep.DriftOpen)
	require.Equal(t, 8*24*h, rep.DriftOldest.D())
	// 2026-01-01 is a Thursday: weeks start 29 Dec, 5 Jan and 12 Jan.
	require.Equal(t, []report.ConflictWeek{
		{Week: "2026-W01", Start: time.Date(2025, 12, 29, 0, 0, 0, 0, time.UTC), Opened: 1, Resolved: 1, OpenAtEnd: 0},
		{Week: "2026-W02", Start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), Opened: 1, Resolved: 0, OpenAtEnd: 1},
		{Week: "2026-W03", Start: time.Date(2026, 1, 12, 0, 0, 0, 0, time.UTC), Opened: 0, Resolved: 0, OpenAtEnd: 1},
	}, rep.ConflictsWeeks)

	// --env staging: the plan lead time and the digest's target change.
	o.Env = "staging"
	rep, err = report.BuildMeasures(data, o)
	require.NoError(t, err)
	require.Equal(t, 1, rep.PlanLeadTime.Count)
	require.Equal(t, 2*h, rep.DigestLeadTime.Median.D())
	require.Equal(t, 0, rep.DriftOpen)
}

// TestCSVAndJSONCarryTheSameNumbers: generate → parse back → equal.

func TestReportOptionsRefuseAnEmptyPeriod(t *testing.T) {
	t.Parallel()
	_, err := report.BuildEffort(report.Data{}, report.Options{From: reporttest.Jan1, To: reporttest.Jan1})
	require.ErrorIs(t, err, fault.ErrUsage)
}

func TestFormatHours(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{120: "120", 40: "40", 40.5: "40.5", 1.0 / 3: "0.33", 0: "0", -0.001: "0"} {
		require.Equal(t, want, report.FormatHours(in), in)
	}
	require.Equal(t, "1h05m", reportfmt.FormatMinutes(report.Duration(65*time.Minute+29*time.Second)))
	require.Equal(t, "1h06m", reportfmt.FormatMinutes(report.Duration(65*time.Minute+30*time.Second)))
	require.Equal(t, "0m", reportfmt.FormatMinutes(0))
}

// TestNewStatsSelectsWhatSortingWould: NewStats picks the median and p90
// by selection; they must be the values sorting gives, duplicates and all.
func TestNewStatsSelectsWhatSortingWould(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		n := 1 + rng.IntN(400)
		spread := 1 + rng.IntN(60)
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[i] = time.Duration(rng.IntN(spread))
		}
		sorted := append([]time.Duration(nil), ds...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		s := report.NewStats(ds)
		require.Equal(t, report.NearestRank(sorted, 50), s.Median.D())
		require.Equal(t, report.NearestRank(sorted, 90), s.P90.D())
		require.Equal(t, sorted[n-1], s.Max.D())
	}
}

// TestMeasuresNameEveryUnsignedApproval: signed approvals are counted,
// unsigned ones are listed one by one, within the period and environment.
func TestMeasuresNameEveryUnsignedApproval(t *testing.T) {
	t.Parallel()
	in, out := reporttest.Jan1.Add(time.Hour), reporttest.Jan1.AddDate(0, -1, 0)
	data := report.Data{
		Releases: []report.ReleaseFact{reporttest.ReleaseAt("a", in)},
		Approvals: []report.ApprovalFact{
			{Kind: approval.Plan, Subject: "fp1", Env: "prod", Approver: "bob", At: in, Key: "SHA256:bob"},
			{Kind: approval.Plan, Subject: "fp2", Env: "staging", Approver: "carol", At: in},
			{Kind: approval.Promotion, Subject: "r1", Env: "prod", Approver: "dave", At: in.Add(time.Minute)},
			{Kind: approval.Plan, Subject: "fp0", Env: "prod", Approver: "erin", At: out},
		},
	}
	o := report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 1, 0), Now: reporttest.Jan1.AddDate(0, 2, 0)}
	m, err := report.BuildMeasures(data, o)
	require.NoError(t, err)
	require.Equal(t, 1, m.Approvals.Signed)
	require.Equal(t, []string{"carol", "dave"}, approvers(m.Approvals.Unsigned), "erin's is outside the period")
	o.Env = "prod"
	m, err = report.BuildMeasures(data, o)
	require.NoError(t, err)
	require.Equal(t, []string{"dave"}, approvers(m.Approvals.Unsigned))
}

func approvers(as []report.ApprovalFact) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Approver)
	}
	return out
}

// dur is a measured report figure.
func dur(d time.Duration) *report.Duration { return report.Measured(d, true) }
