package reportfmt

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/report"
)

// document is the effort report laid out for reading (Write's table,
// Markdown and HTML formats).
func (v effortView) document() reportDoc {
	r := v.Effort
	d := reportDoc{title: "Release coordination effort", headline: EffortHeadline(r)}
	if r.Empty {
		d.empty = r.Message
		return d
	}
	per := docTable{title: "Staff effort per release", header: append([]string{"measure"}, statsHeader...)}
	per.rows = append(per.rows,
		append([]string{"staff (active + off-tool)"}, statsCells(r.Staff)...),
		append([]string{"  active in relcap"}, statsCells(r.Active)...),
		append([]string{"  off-tool coordination"}, statsCells(r.OffTool)...),
		append([]string{"machine wait (not staff)"}, statsCells(r.Wait)...),
		append([]string{"elapsed (beside, never added)"}, statsCells(r.Elapsed)...))
	per.notes = append(per.notes, fmt.Sprintf("staff and active: over the %d measured release(s); off-tool, machine wait and elapsed: over all %d",
		r.Coverage.Measured, r.Coverage.Releases))
	if r.ElapsedOpen > 0 {
		per.notes = append(per.notes, fmt.Sprintf("%d release(s) still running: their elapsed time runs to %s", r.ElapsedOpen, r.GeneratedAt.UTC().Format(time.RFC3339)))
	}
	d.tables = append(d.tables, per)

	role := docTable{title: "Active effort by role, per release", header: append([]string{"role"}, statsHeader...)}
	for _, x := range r.ByRole {
		role.rows = append(role.rows, append([]string{string(x.Role)}, statsCells(x.Active)...))
	}
	role.rows = append(role.rows, append([]string{"off-tool (all roles)"}, statsCells(r.OffTool)...))
	d.tables = append(d.tables, role)

	step := docTable{title: "Active effort by step, per release", header: append(append([]string{"step"}, statsHeader...), "machine wait", "unmeasured")}
	for _, x := range r.ByStep {
		step.rows = append(step.rows, append(append([]string{x.Step}, statsCells(x.Active)...), FormatMinutes(x.Wait), strconv.Itoa(x.UnmeasuredReleases)))
	}
	step.rows = append(step.rows, append(append([]string{"off-tool coordination"}, statsCells(r.OffTool)...), "-", "-"))
	step.notes = append(step.notes, "unmeasured: releases on which someone's work on the step happened where relcap could not measure it")
	d.tables = append(d.tables, step)

	month := docTable{title: "Hours per month (a release and all its effort belong to the month it was created in)",
		header: []string{"month", "releases", "measured", "staff", "active", "off-tool"}}
	if r.Comparison != nil {
		month.header = append(month.header, "before (h)", "after (h)", "freed (h)")
	}
	for _, m := range r.ByMonth {
		name := m.Month
		if m.Partial {
			name += " (partial)"
		}
		row := []string{name, strconv.Itoa(m.Releases), strconv.Itoa(m.Measured), FormatMeasuredMinutes(m.Staff), FormatMeasuredMinutes(m.Active), FormatMinutes(m.OffTool)}
		if r.Comparison != nil {
			if m.MonthComparison != nil {
				row = append(row, report.FormatHours(m.BeforeHours), report.FormatHours(m.AfterHours), report.FormatHours(m.FreedHours))
			} else {
				row = append(row, "-", "-", "-")
			}
		}
		month.rows = append(month.rows, row)
		if m.CoverageNote != "" {
			month.notes = append(month.notes, m.Month+": "+m.CoverageNote)
		}
	}
	if r.Comparison != nil {
		cmp := r.Comparison
		month.notes = append(month.notes, fmt.Sprintf("before = measured releases × baseline %s h; after = their measured staff hours; per month = compared total ÷ %d month(s)",
			report.FormatHours(cmp.BaselineHoursPerRelease), cmp.Months))
	} else if r.ComparisonNote != "" {
		month.notes = append(month.notes, r.ComparisonNote)
	}
	d.tables = append(d.tables, month)

	if r.Comparison != nil {
		d.tables = append(d.tables, beforeAfterTable(r.Comparison), engagementTable(r))
	}

	people := docTable{title: "People", header: []string{"person", "releases", "measured", "unmeasured", "active", "off-tool", "staff"}}
	for _, p := range r.People {
		people.rows = append(people.rows, []string{p.Person, strconv.Itoa(p.Releases), strconv.Itoa(p.MeasuredReleases), strconv.Itoa(p.UnmeasuredReleases),
			FormatMeasuredMinutes(p.Active), FormatMinutes(p.OffTool), FormatMeasuredMinutes(p.Staff)})
	}
	d.tables = append(d.tables, people, definitions(r.AbandonAfter))
	d.charts = v.charts()
	return d
}

// EngagementTitle is the engagement's table as a manager asked for it.
const EngagementTitle = "Release coordination effort, hours/month: before, after, difference"

// engagementTable is the engagement's table: before, after and difference
// per month over measured releases, the average per month, and the
// conditions under which the figures mean what they say.
func engagementTable(r *report.Effort) docTable {
	c := r.Comparison
	t := docTable{title: EngagementTitle, header: []string{"month", "measured releases", "before", "after", "difference"}}
	for _, m := range r.ByMonth {
		cov := fmt.Sprintf("%d of %d", m.Measured, m.Releases)
		switch {
		case m.MonthComparison == nil:
			t.rows = append(t.rows, []string{m.Month, cov, "-", "-", "not measured"})
			continue
		case m.Releases == 0:
			t.rows = append(t.rows, []string{m.Month, cov, "0", "0", "no releases"})
			continue
		}
		t.rows = append(t.rows, []string{m.Month, cov, report.FormatHours(m.BeforeHours), report.FormatHours(m.AfterHours), differenceText(m.FreedHours)})
	}
	t.rows = append(t.rows, []string{fmt.Sprintf("per month (%d)", c.Months), fmt.Sprintf("%d of %d", c.MeasuredReleases, c.Releases),
		report.FormatHours(c.Before), report.FormatHours(c.After), c.DifferenceText()})
	t.notes = append([]string{"conditions:"}, prefixAll("  ", c.Conditions)...)
	return t
}

// BeforeAfterTitle is the seed's table: hours per release and per month
// at the release rate, before and after, over measured releases only.
const BeforeAfterTitle = "Before and after relcap, over measured releases"

// beforeAfterTable is hours per release and hours per month at the
// release rate, before, after and the difference, with the coverage they
// are over and where the baseline and the rate come from.
func beforeAfterTable(c *report.Comparison) docTable {
	t := docTable{title: BeforeAfterTitle, header: []string{"hours", "before", "after", "difference"}}
	for _, x := range []struct {
		what string
		v    report.BeforeAfter
	}{
		{"per release", c.PerRelease},
		{"per month at " + releasesText(c.ReleasesPerMonth), c.AtRate},
	} {
		t.rows = append(t.rows, []string{x.what, report.FormatHours(x.v.Before), report.FormatHours(x.v.After), differenceText(x.v.Difference)})
	}
	t.notes = []string{
		fmt.Sprintf("over %d measured of %d releases (%s)", c.MeasuredReleases, c.Releases, c.Coverage),
		fmt.Sprintf("before: the baseline, %s h a release, from %s", report.FormatHours(c.BaselineHoursPerRelease), c.BaselineSource),
		"after: the measured releases' staff hours (active and off-tool) over their number",
		"releases a month: " + c.RateSource,
	}
	return t
}

// releasesText is a release rate in words: "1 release", "2.5 releases".
func releasesText(rate float64) string {
	if n := report.FormatHours(rate); n != "1" {
		return n + " releases"
	}
	return "1 release"
}

// differenceText is a month's difference as Comparison.DifferenceText
// says the period's.
func differenceText(freed float64) string {
	return (&report.Comparison{Difference: freed}).DifferenceText()
}

// coverageLines are the coverage headline: how many releases were
// measured, and who and which steps were and were not.
func coverageLines(c report.Coverage) []string {
	out := []string{c.Line}
	if l := peopleAndSteps(c.MeasuredPeople, c.MeasuredSteps); l != "" {
		out = append(out, "  measured: "+l)
	}
	if l := peopleAndSteps(c.UnmeasuredPeople, c.UnmeasuredSteps); l != "" {
		out = append(out, "  not measured: "+l)
	}
	for _, w := range c.Work {
		out = append(out, fmt.Sprintf("  unmeasured: %s on %s, %d release(s): %s", w.Person, w.Step, w.Releases, w.Reason))
	}
	return out
}

// peopleAndSteps is "people a, b; steps x, y", leaving out an empty list.
func peopleAndSteps(people, steps []string) string {
	var parts []string
	if len(people) > 0 {
		parts = append(parts, "people "+strings.Join(people, ", "))
	}
	if len(steps) > 0 {
		parts = append(parts, "steps "+strings.Join(steps, ", "))
	}
	return strings.Join(parts, "; ")
}

func prefixAll(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}

// Rows is the effort report in long format.
func (v effortView) rows() []Row {
	r := v.Effort
	rows := []Row{
		{"period", "", "from", r.From.UTC().Format(time.RFC3339Nano), "time"},
		{"period", "", "to", r.To.UTC().Format(time.RFC3339Nano), "time"},
		{"period", "", "time_zone", r.TimeZone, "zone"},
		{"period", "", "empty", strconv.FormatBool(r.Empty), "bool"},
		{"releases", "", "total", strconv.Itoa(r.Counts.Total), "count"},
		{"releases", "", "succeeded", strconv.Itoa(r.Counts.Succeeded), "count"},
		{"releases", "", "failed", strconv.Itoa(r.Counts.Failed), "count"},
		{"releases", "", "rolled_back", strconv.Itoa(r.Counts.RolledBack), "count"},
		{"releases", "", "stalled", strconv.Itoa(r.Counts.Stalled), "count"},
		{"releases", "", "abandoned", strconv.Itoa(r.Counts.Abandoned), "count"},
		{"releases", "", "sandbox_excluded", strconv.Itoa(r.Counts.SandboxExcluded), "count"},
		{"releases", "", "in_progress", strconv.Itoa(r.Counts.InProgress), "count"},
		{"releases", "", "failures", strconv.Itoa(r.Counts.Failures), "count"},
		{"releases", "", "break_glass_excluded", strconv.Itoa(r.Counts.BreakGlassExcluded), "count"},
	}
	for _, k := range orderedKeys(r.Counts.ByKind, releaseKinds) {
		rows = append(rows, Row{"releases", string(k), "count", strconv.Itoa(r.Counts.ByKind[k]), "count"})
	}
	cv := r.Coverage
	rows = append(rows,
		Row{"coverage", "", "releases", strconv.Itoa(cv.Releases), "count"},
		Row{"coverage", "", "measured", strconv.Itoa(cv.Measured), "count"},
		Row{"coverage", "", "partly_measured", strconv.Itoa(cv.PartlyMeasured), "count"},
		Row{"coverage", "", "unmeasured", strconv.Itoa(cv.Unmeasured), "count"})
	for _, p := range cv.MeasuredPeople {
		rows = append(rows, Row{"coverage", p, "measured_person", "true", "bool"})
	}
	for _, w := range cv.Work {
		rows = append(rows, Row{"coverage_unmeasured", w.Person + " on " + w.Step, w.Reason, strconv.Itoa(w.Releases), "releases"})
	}
	for _, p := range cv.UnmeasuredPeople {
		rows = append(rows, Row{"coverage", p, "unmeasured_person", "true", "bool"})
	}
	for _, s := range cv.MeasuredSteps {
		rows = append(rows, Row{"coverage", s, "measured_step", "true", "bool"})
	}
	for _, s := range cv.UnmeasuredSteps {
		rows = append(rows, Row{"coverage", s, "unmeasured_step", "true", "bool"})
	}
	for _, id := range cv.NotMeasured {
		rows = append(rows, Row{"coverage", id, "not_measured_release", "true", "bool"})
	}
	rows = append(rows, statsRows("per_release", "staff", r.Staff)...)
	rows = append(rows, statsRows("per_release", "active", r.Active)...)
	rows = append(rows, statsRows("per_release", "off_tool", r.OffTool)...)
	rows = append(rows, statsRows("per_release", "machine_wait", r.Wait)...)
	rows = append(rows, statsRows("per_release", "elapsed", r.Elapsed)...)
	rows = append(rows, Row{"per_release", "elapsed", "open", strconv.Itoa(r.ElapsedOpen), "count"})
	for _, x := range r.ByRole {
		rows = append(rows, statsRows("by_role", string(x.Role), x.Active)...)
	}
	for _, x := range r.ByStep {
		rows = append(rows, statsRows("by_step", x.Step, x.Active)...)
		rows = append(rows, Row{"by_step", x.Step, "machine_wait_total", minutes(x.Wait), "minutes"},
			Row{"by_step", x.Step, "measured_releases", strconv.Itoa(x.MeasuredReleases), "count"},
			Row{"by_step", x.Step, "unmeasured_releases", strconv.Itoa(x.UnmeasuredReleases), "count"})
	}
	for _, m := range r.ByMonth {
		rows = append(rows,
			Row{"by_month", m.Month, "partial", strconv.FormatBool(m.Partial), "bool"},
			Row{"by_month", m.Month, "releases", strconv.Itoa(m.Releases), "count"},
			Row{"by_month", m.Month, "staff", measuredMinutes(m.Staff), "minutes"},
			Row{"by_month", m.Month, "active", measuredMinutes(m.Active), "minutes"},
			Row{"by_month", m.Month, "off_tool", minutes(m.OffTool), "minutes"},
			Row{"by_month", m.Month, "measured_releases", strconv.Itoa(m.Measured), "count"},
			Row{"by_month", m.Month, "partly_measured_releases", strconv.Itoa(m.PartlyMeasured), "count"},
			Row{"by_month", m.Month, "unmeasured_releases", strconv.Itoa(m.Unmeasured), "count"},
			Row{"by_month", m.Month, "measured_staff", minutes(m.MeasuredStaff), "minutes"},
			Row{"by_month", m.Month, "compared", strconv.FormatBool(m.Compared), "bool"})
		if m.MonthComparison != nil {
			rows = append(rows,
				Row{"by_month", m.Month, "before", hours(m.BeforeHours), "hours"},
				Row{"by_month", m.Month, "after", hours(m.AfterHours), "hours"},
				Row{"by_month", m.Month, "freed", hours(m.FreedHours), "hours"})
		}
	}
	if c := r.Comparison; c != nil {
		rows = append(rows,
			Row{"comparison", c.Measure, "baseline_per_release", hours(c.BaselineHoursPerRelease), "hours"},
			Row{"comparison", c.Measure, "baseline_source", c.BaselineSource, "text"},
			Row{"comparison", c.Measure, "releases", strconv.Itoa(c.Releases), "count"},
			Row{"comparison", c.Measure, "measured_releases", strconv.Itoa(c.MeasuredReleases), "count"},
			Row{"comparison", c.Measure, "months", strconv.Itoa(c.Months), "count"},
			Row{"comparison", c.Measure, "before", hours(c.Before), c.Unit},
			Row{"comparison", c.Measure, "after", hours(c.After), c.Unit},
			Row{"comparison", c.Measure, "difference", hours(c.Difference), c.Unit},
			Row{"comparison", c.Measure, "per_release_before", hours(c.PerRelease.Before), "hours"},
			Row{"comparison", c.Measure, "per_release_after", hours(c.PerRelease.After), "hours"},
			Row{"comparison", c.Measure, "per_release_difference", hours(c.PerRelease.Difference), "hours"},
			Row{"comparison", c.Measure, "releases_per_month", hours(c.ReleasesPerMonth), "count"},
			Row{"comparison", c.Measure, "rate_source", c.RateSource, "text"},
			Row{"comparison", c.Measure, "per_month_at_rate_before", hours(c.AtRate.Before), "hours"},
			Row{"comparison", c.Measure, "per_month_at_rate_after", hours(c.AtRate.After), "hours"},
			Row{"comparison", c.Measure, "per_month_at_rate_difference", hours(c.AtRate.Difference), "hours"})
	}
	for _, p := range r.People {
		rows = append(rows,
			Row{"people", p.Person, "releases", strconv.Itoa(p.Releases), "count"},
			Row{"people", p.Person, "measured_releases", strconv.Itoa(p.MeasuredReleases), "count"},
			Row{"people", p.Person, "unmeasured_releases", strconv.Itoa(p.UnmeasuredReleases), "count"},
			Row{"people", p.Person, "active", measuredMinutes(p.Active), "minutes"},
			Row{"people", p.Person, "off_tool", minutes(p.OffTool), "minutes"},
			Row{"people", p.Person, "staff", measuredMinutes(p.Staff), "minutes"})
	}
	for _, x := range r.Releases {
		rows = append(rows,
			Row{"release", x.ID, "outcome", string(x.Outcome), "outcome"},
			Row{"release", x.ID, "coverage", string(x.Coverage), "coverage"},
			Row{"release", x.ID, "month", x.Month, "month"},
			Row{"release", x.ID, "staff", measuredMinutes(x.Staff), "minutes"},
			Row{"release", x.ID, "active", measuredMinutes(x.Active), "minutes"},
			Row{"release", x.ID, "off_tool", minutes(x.OffTool), "minutes"},
			Row{"release", x.ID, "machine_wait", minutes(x.Wait), "minutes"},
			Row{"release", x.ID, "elapsed", minutes(x.Elapsed), "minutes"})
		for _, w := range x.Unmeasured {
			rows = append(rows, Row{"release_unmeasured", x.ID, w.Person + " on " + w.Step, w.Reason, "reason"})
		}
	}
	return rows
}

// EffortHeadline is the effort report's opening lines: its period, scope,
// releases, coverage and before/after. The cockpit's effort screen opens
// with the same lines, so the two state a figure the same way.
func EffortHeadline(r *report.Effort) []string {
	lines := []string{periodLine(r.From, r.To, r.TimeZone, "by release creation")}
	if r.Env != "" {
		lines = append(lines, "Environment: "+r.Env)
	}
	if r.Person != "" {
		lines = append(lines, "Person: "+r.Person+" (their own effort on releases they worked on or captained)")
	}
	c := r.Counts
	if r.Empty {
		if c.SandboxExcluded > 0 {
			lines = append(lines, fmt.Sprintf("Sandbox releases left out (relcap demo: practice, not releases, saved hours or deployments): %d", c.SandboxExcluded))
		}
		return lines
	}
	kinds := make([]string, 0, len(c.ByKind))
	for _, k := range releaseKinds {
		if n := c.ByKind[k]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	lines = append(lines, fmt.Sprintf("Releases: %d (%s) — succeeded %d, failed %d, rolled back %d, stalled %d, abandoned %d, in progress %d",
		c.Total, strings.Join(kinds, ", "), c.Succeeded, c.Failed, c.RolledBack, c.Stalled, c.Abandoned, c.InProgress))
	if c.BreakGlassExcluded > 0 {
		lines = append(lines, fmt.Sprintf("Break-glass records left out (not releases): %d", c.BreakGlassExcluded))
	}
	if c.SandboxExcluded > 0 {
		lines = append(lines, fmt.Sprintf("Sandbox releases left out (relcap demo: practice, not releases, saved hours or deployments): %d", c.SandboxExcluded))
	}
	lines = append(lines, coverageLines(r.Coverage)...)
	if r.Comparison != nil {
		lines = append(lines, "", r.Comparison.Line)
		for _, cond := range r.Comparison.Conditions {
			lines = append(lines, "  if: "+cond)
		}
	} else if r.ComparisonNote != "" {
		lines = append(lines, "", r.ComparisonNote)
	}
	return lines
}
