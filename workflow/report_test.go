package workflow_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

var jan1 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// releaseAt is a converged release of kind release created at t, ended an
// hour later.
func releaseAt(id string, t time.Time) workflow.ReleaseFact {
	return workflow.ReleaseFact{ID: id, App: "web", Env: "prod", Kind: workflow.KindRelease, Captain: "alice",
		Status: workflow.ReleaseConverged, CreatedAt: t, UpdatedAt: t.Add(time.Hour), EndedAt: t.Add(time.Hour)}
}

func entry(id, person, role, step string, kind workflow.EffortKind, d time.Duration, at time.Time) workflow.EffortEntry {
	return workflow.EffortEntry{ReleaseID: id, Person: person, Role: role, Step: step, Kind: kind, Duration: d, At: at}
}

// TestEffortReportManagerForm is the example: 40 releases of 1 h of
// staff time each against a 3 h baseline.
func TestEffortReportManagerForm(t *testing.T) {
	t.Parallel()
	var data workflow.ReportData
	for i := range 40 {
		id := fmt.Sprintf("r%02d", i)
		at := jan1.Add(time.Duration(i) * 17 * time.Hour)
		data.Releases = append(data.Releases, releaseAt(id, at))
		data.Effort = append(data.Effort,
			entry(id, "alice", workflow.RoleCaptain, "plan-review", workflow.EffortActive, 40*time.Minute, at),
			entry(id, "bob", workflow.RoleApprover, "plan-review", workflow.EffortActive, 10*time.Minute, at),
			entry(id, "alice", workflow.RoleCaptain, workflow.StepNone, workflow.EffortOffTool, 10*time.Minute, at),
			// Machine wait is never staff effort.
			entry(id, "", "", "convergence", workflow.EffortWait, 30*time.Minute, at))
	}
	rep, err := workflow.BuildEffortReport(data, workflow.ReportOptions{
		From: jan1, To: jan1.AddDate(0, 1, 0), Now: jan1.AddDate(0, 2, 0), BaselineHoursPerRelease: 3})
	require.NoError(t, err)
	require.NotNil(t, rep.Comparison)
	require.Equal(t, "Release coordination effort, hours/month: 120 → 40, 80 freed", rep.Comparison.Line)
	require.Equal(t, 40, rep.Counts.Total)
	require.Equal(t, time.Hour, rep.Staff.Median.D())
	require.Equal(t, 40*time.Hour, rep.Staff.Total.D())
	require.Equal(t, 20*time.Hour, rep.Wait.Total.D())
	require.Equal(t, []workflow.MonthEffort{{Month: "2026-01", Releases: 40, Staff: workflow.ReportDuration(40 * time.Hour),
		Active: workflow.ReportDuration(1000 * time.Minute * 2), OffTool: workflow.ReportDuration(400 * time.Minute),
		BeforeHours: 120, AfterHours: 40, FreedHours: 80}}, rep.ByMonth)

	var out bytes.Buffer
	require.NoError(t, workflow.WriteReport(&out, rep, workflow.FormatTable))
	text := out.String()
	require.Contains(t, text, "Release coordination effort, hours/month: 120 → 40, 80 freed\n  if: comparable scope")
	require.Contains(t, text, "same review and approval requirements")
	require.Contains(t, text, "costs not included")
	require.Contains(t, text, "time zone UTC")
}

// truth is a generated ledger's figures, computed without the report code.
type truth struct {
	staff, active, offTool, wait, elapsed []time.Duration // per counted release
	byRole, byStep                        map[string][]time.Duration
	monthReleases                         map[string]int
	monthStaff                            map[string]time.Duration
	failures                              int
	total                                 int
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

// generate makes n releases over three months in loc with random effort,
// plus noise the report must ignore: break-glass records, effort against
// unknown releases and releases outside the period.
func generate(seed uint64, n int, now time.Time, loc *time.Location) (workflow.ReportData, truth) {
	rng := rand.New(rand.NewPCG(seed, 1))
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
	span := from.AddDate(0, 3, 0).Sub(from)
	tr := truth{byRole: map[string][]time.Duration{}, byStep: map[string][]time.Duration{},
		monthReleases: map[string]int{}, monthStaff: map[string]time.Duration{}}
	var data workflow.ReportData
	steps := []string{"ownership", "plan-review", "apply", "promotion", "convergence"}
	kinds := []string{workflow.KindRelease, workflow.KindRelease, workflow.KindPromotion, workflow.KindRollback}
	for i := range n {
		id := fmt.Sprintf("rel-%05d", i)
		created := from.Add(time.Duration(rng.Int64N(int64(span))))
		f := workflow.ReleaseFact{ID: id, App: "web", Env: "prod", Kind: kinds[rng.IntN(len(kinds))], Captain: "cap" + fmt.Sprint(rng.IntN(3)),
			CreatedAt: created, UpdatedAt: created.Add(time.Duration(rng.Int64N(int64(3 * time.Hour))))}
		switch x := rng.IntN(10); {
		case x < 6:
			f.Status, f.EndedAt = workflow.ReleaseConverged, f.UpdatedAt
		case x < 7:
			f.Status = workflow.ReleaseFailed
		case x < 8:
			f.Status, f.EndedAt = workflow.ReleaseRolledBack, f.UpdatedAt
		default:
			f.Status = workflow.ReleaseInProgress // abandoned: now is months later
		}
		if f.Status != workflow.ReleaseConverged {
			tr.failures++
		}
		data.Releases = append(data.Releases, f)
		var active, off, wait time.Duration
		role := map[string]time.Duration{}
		step := map[string]time.Duration{}
		for _, s := range steps {
			d := time.Duration(rng.Int64N(int64(20*time.Minute))) + time.Duration(rng.IntN(60))*time.Second
			data.Effort = append(data.Effort, entry(id, f.Captain, workflow.RoleCaptain, s, workflow.EffortActive, d, created))
			active += d
			role[workflow.RoleCaptain] += d
			step[s] += d
			w := time.Duration(rng.Int64N(int64(10 * time.Minute)))
			data.Effort = append(data.Effort, entry(id, "", "", s, workflow.EffortWait, w, created))
			wait += w
		}
		if rng.IntN(2) == 0 {
			d := time.Duration(rng.Int64N(int64(30 * time.Minute)))
			data.Effort = append(data.Effort, entry(id, "appr", workflow.RoleApprover, "plan-review", workflow.EffortActive, d, created))
			active += d
			role[workflow.RoleApprover] += d
			step["plan-review"] += d
		}
		if rng.IntN(3) == 0 {
			d := time.Duration(rng.IntN(90)) * time.Minute
			// Logged weeks later: it still belongs to the release's month.
			data.Effort = append(data.Effort, entry(id, f.Captain, workflow.RoleCaptain, workflow.StepNone, workflow.EffortOffTool, d, created.AddDate(0, 0, 40)))
			off += d
		}
		tr.total++
		tr.staff = append(tr.staff, active+off)
		tr.active = append(tr.active, active)
		tr.offTool = append(tr.offTool, off)
		tr.wait = append(tr.wait, wait)
		end := f.UpdatedAt
		if !f.EndedAt.IsZero() {
			end = f.EndedAt
		}
		tr.elapsed = append(tr.elapsed, end.Sub(created))
		for _, r := range []string{workflow.RoleCaptain, workflow.RoleApprover} {
			tr.byRole[r] = append(tr.byRole[r], role[r])
		}
		for _, s := range steps {
			tr.byStep[s] = append(tr.byStep[s], step[s])
		}
		m := created.In(loc).Format("2006-01")
		tr.monthReleases[m]++
		tr.monthStaff[m] += active + off
	}
	// Noise.
	bg := releaseAt("bg-1", from.Add(time.Hour))
	bg.Kind, bg.Status = workflow.KindBreakGlass, workflow.ReleaseEnded
	data.Releases = append(data.Releases, bg, releaseAt("before", from.Add(-time.Minute)))
	data.Effort = append(data.Effort,
		entry("bg-1", "alice", workflow.RoleCaptain, workflow.StepNone, workflow.EffortActive, 5*time.Hour, from),
		entry("before", "alice", workflow.RoleCaptain, workflow.StepNone, workflow.EffortActive, 5*time.Hour, from),
		entry("unknown", "alice", workflow.RoleCaptain, workflow.StepNone, workflow.EffortOffTool, 5*time.Hour, from))
	_ = now
	return data, tr
}

// requireMinute compares durations to the minute, as the issue checks.
func requireMinute(t *testing.T, want time.Duration, got workflow.ReportDuration, what string) {
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
			data, tr := generate(42, 503, now, loc)
			from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
			rep, err := workflow.BuildEffortReport(data, workflow.ReportOptions{From: from, To: from.AddDate(0, 3, 0), Location: loc, Now: now, BaselineHoursPerRelease: 2.5})
			require.NoError(t, err)

			require.Equal(t, tr.total, rep.Counts.Total)
			require.Equal(t, tr.failures, rep.Counts.Failures)
			require.Equal(t, 1, rep.Counts.BreakGlassExcluded)
			require.Equal(t, 0, rep.Counts.InProgress, "in-progress releases months old are abandoned")
			for name, c := range map[string]struct {
				ds  []time.Duration
				got workflow.Stats
			}{"staff": {tr.staff, rep.Staff}, "active": {tr.active, rep.Active}, "off-tool": {tr.offTool, rep.OffTool},
				"wait": {tr.wait, rep.Wait}, "elapsed": {tr.elapsed, rep.Elapsed}} {
				require.Equal(t, len(c.ds), c.got.Count, name)
				requireMinute(t, sum(c.ds), c.got.Total, name+" total")
				requireMinute(t, nearestRank(c.ds, 50), c.got.Median, name+" median")
				requireMinute(t, nearestRank(c.ds, 90), c.got.P90, name+" p90")
			}
			for _, r := range rep.ByRole {
				requireMinute(t, sum(tr.byRole[r.Role]), r.Active.Total, r.Role)
				requireMinute(t, nearestRank(tr.byRole[r.Role], 50), r.Active.Median, r.Role+" median")
				requireMinute(t, nearestRank(tr.byRole[r.Role], 90), r.Active.P90, r.Role+" p90")
			}
			require.Len(t, rep.ByStep, 5)
			for _, s := range rep.ByStep {
				requireMinute(t, sum(tr.byStep[s.Step]), s.Active.Total, s.Step)
				requireMinute(t, nearestRank(tr.byStep[s.Step], 50), s.Active.Median, s.Step+" median")
			}
			require.Len(t, rep.ByMonth, 3)
			var before, after float64
			for _, m := range rep.ByMonth {
				require.Equal(t, tr.monthReleases[m.Month], m.Releases, m.Month)
				requireMinute(t, tr.monthStaff[m.Month], m.Staff, m.Month)
				require.InDelta(t, float64(tr.monthReleases[m.Month])*2.5, m.BeforeHours, 1e-9)
				require.InDelta(t, tr.monthStaff[m.Month].Hours(), m.AfterHours, 1.0/60)
				before += float64(tr.monthReleases[m.Month]) * 2.5
				after += tr.monthStaff[m.Month].Hours()
			}
			require.InDelta(t, before/3, rep.Comparison.Before, 1e-9)
			require.InDelta(t, after/3, rep.Comparison.After, 1.0/60)
		})
	}
}

func TestAbandonedReleasesCountAsFailed(t *testing.T) {
	t.Parallel()
	now := jan1.AddDate(0, 0, 30)
	mk := func(id string, idle time.Duration, status workflow.ReleaseStatus) workflow.ReleaseFact {
		f := releaseAt(id, jan1.Add(time.Hour))
		f.Status, f.EndedAt, f.UpdatedAt = status, time.Time{}, now.Add(-idle)
		return f
	}
	data := workflow.ReportData{Releases: []workflow.ReleaseFact{
		mk("stale-8d", 8*24*time.Hour, workflow.ReleaseInProgress),
		mk("blocked-7d1m", 7*24*time.Hour+time.Minute, workflow.ReleaseBlocked),
		mk("exactly-7d", 7*24*time.Hour, workflow.ReleaseInProgress),
		mk("fresh-6d", 6*24*time.Hour, workflow.ReleaseBlocked),
		mk("failed", time.Hour, workflow.ReleaseFailed),
	}}
	rep, err := workflow.BuildEffortReport(data, workflow.ReportOptions{From: jan1, To: jan1.AddDate(0, 1, 0), Now: now})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Counts.Abandoned)
	require.Equal(t, 2, rep.Counts.InProgress)
	require.Equal(t, 1, rep.Counts.Failed)
	require.Equal(t, 3, rep.Counts.Failures)
	outcomes := map[string]workflow.ReleaseOutcome{}
	for _, r := range rep.Releases {
		outcomes[r.ID] = r.Outcome
	}
	require.Equal(t, workflow.OutcomeAbandoned, outcomes["stale-8d"])
	require.Equal(t, workflow.OutcomeInProgress, outcomes["exactly-7d"])
	// An abandoned release's elapsed time ends at its last update; a
	// running one's runs to now.
	for _, r := range rep.Releases {
		switch r.ID {
		case "stale-8d":
			require.Equal(t, now.Add(-8*24*time.Hour).Sub(jan1.Add(time.Hour)), r.Elapsed.D())
			require.False(t, r.ElapsedOpen)
		case "fresh-6d":
			require.Equal(t, now.Sub(jan1.Add(time.Hour)), r.Elapsed.D())
			require.True(t, r.ElapsedOpen)
		}
	}

	m, err := workflow.BuildMeasuresReport(data, workflow.ReportOptions{From: jan1, To: jan1.AddDate(0, 1, 0), Now: now})
	require.NoError(t, err)
	require.Equal(t, workflow.FailureRate{Total: 5, Finished: 3, Failed: 1, Abandoned: 2, Failures: 3, Rate: 1}, m.Releases)
}

// TestTimeZoneDecidesTheDayAndMonth: a release at 23:30 UTC on 31 January
// is February in Berlin, and a release at 03:30 UTC on 1 February is still
// January in New York.
func TestTimeZoneDecidesTheDayAndMonth(t *testing.T) {
	t.Parallel()
	late := time.Date(2026, 1, 31, 23, 30, 0, 0, time.UTC)
	early := time.Date(2026, 2, 1, 3, 30, 0, 0, time.UTC)
	data := workflow.ReportData{
		Releases: []workflow.ReleaseFact{releaseAt("late", late), releaseAt("early", early)},
		Effort: []workflow.EffortEntry{
			entry("late", "alice", workflow.RoleCaptain, "apply", workflow.EffortActive, time.Hour, late),
			entry("early", "alice", workflow.RoleCaptain, "apply", workflow.EffortActive, 2*time.Hour, early),
		},
	}
	months := func(tz string) map[string]int {
		loc, err := time.LoadLocation(tz)
		require.NoError(t, err)
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
		rep, err := workflow.BuildEffortReport(data, workflow.ReportOptions{From: from, To: from.AddDate(0, 2, 0), Location: loc, Now: early.AddDate(0, 1, 0)})
		require.NoError(t, err)
		require.Equal(t, tz, rep.TimeZone)
		out := map[string]int{}
		for _, m := range rep.ByMonth {
			out[m.Month] = int(m.Staff.D().Hours())
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
	rep, err := workflow.BuildEffortReport(data, workflow.ReportOptions{From: feb, To: feb.AddDate(0, 1, 0), Location: berlin, Now: feb.AddDate(0, 2, 0)})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Counts.Total)
	var out bytes.Buffer
	require.NoError(t, workflow.WriteReport(&out, rep, workflow.FormatTable))
	require.Contains(t, out.String(), "Period: 2026-02-01 00:00 → 2026-03-01 00:00 (time zone Europe/Berlin")
}

func TestEmptyPeriodSaysSo(t *testing.T) {
	t.Parallel()
	data := workflow.ReportData{Releases: []workflow.ReleaseFact{releaseAt("old", jan1.AddDate(0, -3, 0))}}
	rep, err := workflow.BuildEffortReport(data, workflow.ReportOptions{From: jan1, To: jan1.AddDate(0, 1, 0), Now: jan1.AddDate(0, 2, 0), Env: "prod", BaselineHoursPerRelease: 3})
	require.NoError(t, err)
	require.True(t, rep.Empty)
	for _, f := range []workflow.ReportFormat{workflow.FormatTable, workflow.FormatMarkdown, workflow.FormatHTML} {
		var out bytes.Buffer
		require.NoError(t, workflow.WriteReport(&out, rep, f))
		require.Contains(t, out.String(), "no releases in prod between 2026-01-01 00:00 and 2026-02-01 00:00 (UTC): nothing to report", f)
	}
	m, err := workflow.BuildMeasuresReport(data, workflow.ReportOptions{From: jan1, To: jan1.AddDate(0, 1, 0), Now: jan1.AddDate(0, 2, 0)})
	require.NoError(t, err)
	require.True(t, m.Empty)
	require.Contains(t, m.Message, "nothing to report")
}

func TestPersonViewIsOnesOwnHistory(t *testing.T) {
	t.Parallel()
	a, b := jan1.Add(time.Hour), jan1.Add(48*time.Hour)
	ra, rb := releaseAt("a", a), releaseAt("b", b)
	rb.Captain = "bob"
	data := workflow.ReportData{
		Releases: []workflow.ReleaseFact{ra, rb, releaseAt("c", b)},
		Effort: []workflow.EffortEntry{
			entry("a", "alice", workflow.RoleCaptain, "apply", workflow.EffortActive, 30*time.Minute, a),
			entry("a", "bob", workflow.RoleApprover, "plan-review", workflow.EffortActive, 15*time.Minute, a),
			entry("b", "alice", workflow.RoleApprover, "plan-review", workflow.EffortActive, 10*time.Minute, b),
			entry("b", "bob", workflow.RoleCaptain, "apply", workflow.EffortActive, time.Hour, b),
		},
	}
	rep, err := workflow.BuildEffortReport(data, workflow.ReportOptions{From: jan1, To: jan1.AddDate(0, 1, 0), Now: jan1.AddDate(0, 1, 0), Person: "alice", BaselineHoursPerRelease: 3})
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
		s := workflow.NewStats(c.in)
		require.Equal(t, c.median, s.Median.D())
		require.Equal(t, c.p90, s.P90.D())
	}
	require.Equal(t, workflow.Stats{}, workflow.NewStats(nil))
}

// measuresLedger is a small ledger with hand-computed measures.
func measuresLedger(t *testing.T) (workflow.ReportData, workflow.ReportOptions) {
	t.Helper()
	d1 := digestOf(t, "1")
	d2 := digestOf(t, "2")
	h := time.Hour
	failed := releaseAt("f1", jan1.Add(10*h))
	failed.Status, failed.EndedAt = workflow.ReleaseFailed, time.Time{}
	failed.Steps = []workflow.StepTime{{Kind: workflow.StepApply, Status: workflow.Failed, EndedAt: jan1.Add(11 * h)}}
	rolled := releaseAt("rb1", jan1.Add(30*h))
	rolled.Status, rolled.UpdatedAt = workflow.ReleaseRolledBack, jan1.Add(40*h)
	data := workflow.ReportData{
		Releases: []workflow.ReleaseFact{releaseAt("ok1", jan1.Add(h)), failed, rolled, releaseAt("ok2", jan1.Add(50*h))},
		Plans: []workflow.PlanFact{
			{Fingerprint: "p1", Env: "prod", CreatedAt: jan1.Add(h), AppliedAt: jan1.Add(3 * h)},    // 2 h
			{Fingerprint: "p2", Env: "prod", CreatedAt: jan1.Add(h), AppliedAt: jan1.Add(7 * h)},    // 6 h
			{Fingerprint: "p3", Env: "staging", CreatedAt: jan1.Add(h), AppliedAt: jan1.Add(5 * h)}, // 4 h
			{Fingerprint: "p4", Env: "prod", CreatedAt: jan1.Add(h)},                                // pending
		},
		Sightings: []workflow.Sighting{{Digest: d1, At: jan1}, {Digest: d2, At: jan1.Add(20 * h)}},
		Convergences: []workflow.ConvergenceRecord{
			{ReleaseID: "s", App: "web", Env: "staging", Digest: d1, At: jan1.Add(2 * h)},
			{ReleaseID: "ok1", App: "web", Env: "prod", Digest: d1, At: jan1.Add(4 * h)}, // lead 4 h
			{ReleaseID: "x", App: "web", Env: "prod", Digest: d1, At: jan1.Add(14 * h)},  // recovers f1 (3 h)
			{ReleaseID: "rb", App: "web", Env: "prod", Digest: d2, At: jan1.Add(45 * h)}, // recovers rb1 (5 h); lead 25 h
		},
		Findings: []workflow.FindingFact{
			{Scope: "ownership/prod", Code: workflow.CodeOwnershipConflict, Subject: "a", FirstSeen: jan1.Add(h), ResolvedAt: jan1.Add(25 * h)},
			{Scope: "ownership/prod", Code: workflow.CodeOwnershipConflict, Subject: "b", FirstSeen: jan1.AddDate(0, 0, 6)}, // week 2, open
			{Scope: "ownership/prod", Code: workflow.CodeOwnershipDriftLoop, Subject: "c", FirstSeen: jan1.Add(-48 * h), ResolvedAt: jan1.Add(72 * h)},
		},
	}
	return data, workflow.ReportOptions{From: jan1, To: jan1.AddDate(0, 0, 14), Now: jan1.AddDate(0, 0, 14), ProdEnv: "prod"}
}

func digestOf(t *testing.T, s string) workflow.Digest {
	t.Helper()
	d, err := workflow.ParseDigest("sha256:" + strings.Repeat(s, 64))
	require.NoError(t, err)
	return d
}

func TestMeasuresMatchHandComputedFigures(t *testing.T) {
	t.Parallel()
	data, o := measuresLedger(t)
	rep, err := workflow.BuildMeasuresReport(data, o)
	require.NoError(t, err)
	h := time.Hour
	require.Equal(t, 3, rep.PlanLeadTime.Count)
	require.Equal(t, 4*h, rep.PlanLeadTime.Median.D())
	require.Equal(t, 12*h, rep.PlanLeadTime.Total.D())
	require.Equal(t, 1, rep.PlansPending)
	require.Equal(t, 2, rep.DigestLeadTime.Count)
	require.Equal(t, 4*h, rep.DigestLeadTime.Median.D())
	require.Equal(t, 25*h, rep.DigestLeadTime.P90.D())
	require.Equal(t, workflow.FailureRate{Total: 4, Finished: 4, Failed: 1, RolledBack: 1, Failures: 2, Rate: 0.5}, rep.Releases)
	require.Equal(t, 2, rep.Recovery.Count)
	require.Equal(t, 3*h, rep.Recovery.Median.D())
	require.Equal(t, 5*h, rep.Recovery.P90.D())
	require.Equal(t, 2, rep.DriftAge.Count)
	require.Equal(t, 24*h, rep.DriftAge.Median.D())
	require.Equal(t, 120*h, rep.DriftAge.Max.D())
	require.Equal(t, 1, rep.DriftOpen)
	require.Equal(t, 8*24*h, rep.DriftOldest.D())
	// 2026-01-01 is a Thursday: weeks start 29 Dec, 5 Jan and 12 Jan.
	require.Equal(t, []workflow.ConflictWeek{
		{Week: "2026-W01", Start: time.Date(2025, 12, 29, 0, 0, 0, 0, time.UTC), Opened: 1, Resolved: 1, OpenAtEnd: 0},
		{Week: "2026-W02", Start: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), Opened: 1, Resolved: 0, OpenAtEnd: 1},
		{Week: "2026-W03", Start: time.Date(2026, 1, 12, 0, 0, 0, 0, time.UTC), Opened: 0, Resolved: 0, OpenAtEnd: 1},
	}, rep.ConflictsWeeks)

	// --env staging: the plan lead time and the digest's target change.
	o.Env = "staging"
	rep, err = workflow.BuildMeasuresReport(data, o)
	require.NoError(t, err)
	require.Equal(t, 1, rep.PlanLeadTime.Count)
	require.Equal(t, 2*h, rep.DigestLeadTime.Median.D())
	require.Equal(t, 0, rep.DriftOpen)
}

// TestCSVAndJSONCarryTheSameNumbers: generate → parse back → equal.
func TestCSVAndJSONCarryTheSameNumbers(t *testing.T) {
	t.Parallel()
	data, tr := generate(7, 97, time.Time{}, time.UTC)
	_ = tr
	effort, err := workflow.BuildEffortReport(data, workflow.ReportOptions{From: jan1, To: jan1.AddDate(0, 3, 0), Now: jan1.AddDate(0, 6, 0), BaselineHoursPerRelease: 3})
	require.NoError(t, err)
	mdata, mo := measuresLedger(t)
	measures, err := workflow.BuildMeasuresReport(mdata, mo)
	require.NoError(t, err)

	for name, c := range map[string]struct {
		rep    workflow.Report
		parsed workflow.Report
	}{"effort": {effort, &workflow.EffortReport{}}, "measures": {measures, &workflow.MeasuresReport{}}} {
		var js, cs bytes.Buffer
		require.NoError(t, workflow.WriteReport(&js, c.rep, workflow.FormatJSON), name)
		require.NoError(t, workflow.WriteReport(&cs, c.rep, workflow.FormatCSV), name)
		require.NoError(t, json.Unmarshal(js.Bytes(), c.parsed), name)
		rows, err := workflow.ParseReportCSV(&cs)
		require.NoError(t, err, name)
		require.Equal(t, c.parsed.Rows(), rows, name)
		require.Equal(t, c.rep, c.parsed, "%s: JSON round-trips exactly (seconds carry nanoseconds)", name)
	}
	// The JSON's seconds are exact: a release's staff time to the
	// nanosecond.
	var raw struct {
		Items []struct {
			ID    string  `json:"id"`
			Staff float64 `json:"staff_seconds"`
		} `json:"items"`
	}
	var js bytes.Buffer
	require.NoError(t, workflow.WriteReport(&js, effort, workflow.FormatJSON))
	require.NoError(t, json.Unmarshal(js.Bytes(), &raw))
	require.InDelta(t, effort.Releases[0].Staff.Seconds(), raw.Items[0].Staff, 1e-9)
}

var externalRef = regexp.MustCompile(`(?i)(src|href|xlink:href)\s*=\s*["']?\s*(https?:)?//`)

func TestHTMLIsSelfContained(t *testing.T) {
	t.Parallel()
	data, _ := generate(3, 1200, time.Time{}, time.UTC)
	effort, err := workflow.BuildEffortReport(data, workflow.ReportOptions{From: jan1, To: jan1.AddDate(0, 3, 0), Now: jan1.AddDate(0, 6, 0), BaselineHoursPerRelease: 3})
	require.NoError(t, err)
	mdata, mo := measuresLedger(t)
	measures, err := workflow.BuildMeasuresReport(mdata, mo)
	require.NoError(t, err)
	for _, rep := range []workflow.Report{effort, measures} {
		var out bytes.Buffer
		require.NoError(t, workflow.WriteReport(&out, rep, workflow.FormatHTML))
		page := out.String()
		require.NotContains(t, page, "http://")
		require.NotContains(t, page, "https://")
		require.NotRegexp(t, externalRef, page)
		require.NotContains(t, page, "<script")
		require.NotContains(t, page, "@import")
		require.Contains(t, page, "<svg")
	}
	var out bytes.Buffer
	require.NoError(t, workflow.WriteReport(&out, effort, workflow.FormatHTML))
	require.Contains(t, out.String(), "Staff hours per release over time (mean of each of")
	require.Contains(t, out.String(), "Effort by step")
	require.Contains(t, out.String(), "Release coordination effort, hours/month: ")
}

func TestMarkdownHasTheTables(t *testing.T) {
	t.Parallel()
	data, _ := generate(5, 30, time.Time{}, time.UTC)
	rep, err := workflow.BuildEffortReport(data, workflow.ReportOptions{From: jan1, To: jan1.AddDate(0, 3, 0), Now: jan1.AddDate(0, 6, 0), BaselineHoursPerRelease: 3})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, workflow.WriteReport(&out, rep, workflow.FormatMarkdown))
	md := out.String()
	require.Contains(t, md, "# Release coordination effort\n")
	require.Contains(t, md, "| month | releases | staff | active | off-tool | before (h) | after (h) | freed (h) |")
	require.Regexp(t, `\| 2026-01 \| \d+ \| \d+h\d\dm \|`, md)
}

func TestReportOptionsRefuseAnEmptyPeriod(t *testing.T) {
	t.Parallel()
	_, err := workflow.BuildEffortReport(workflow.ReportData{}, workflow.ReportOptions{From: jan1, To: jan1})
	require.ErrorIs(t, err, workflow.ErrUsage)
}

func TestFormatHours(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{120: "120", 40: "40", 40.5: "40.5", 1.0 / 3: "0.33", 0: "0", -0.001: "0"} {
		require.Equal(t, want, workflow.FormatHours(in), in)
	}
	require.Equal(t, "1h05m", workflow.FormatMinutes(workflow.ReportDuration(65*time.Minute+29*time.Second)))
	require.Equal(t, "1h06m", workflow.FormatMinutes(workflow.ReportDuration(65*time.Minute+30*time.Second)))
	require.Equal(t, "0m", workflow.FormatMinutes(0))
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
		s := workflow.NewStats(ds)
		require.Equal(t, workflow.NearestRank(sorted, 50), s.Median.D())
		require.Equal(t, workflow.NearestRank(sorted, 90), s.P90.D())
		require.Equal(t, sorted[n-1], s.Max.D())
	}
}
