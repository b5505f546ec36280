package reportfmt

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/report"
)

// Format is an output format of `relcap report`.
type Format string

// Report formats.
const (
	FormatTable    Format = "table"
	FormatMarkdown Format = "md"
	FormatCSV      Format = "csv"
	FormatJSON     Format = "json"
	FormatHTML     Format = "html"
)

// Formats lists every format, for flag help and validation.
var Formats = []Format{FormatTable, FormatMarkdown, FormatCSV, FormatJSON, FormatHTML}

// ParseFormat validates a --format value.
func ParseFormat(s string) (Format, error) {
	f := Format(strings.ToLower(strings.TrimSpace(s)))
	if f == "markdown" {
		f = FormatMarkdown
	}
	if !slices.Contains(Formats, f) {
		return "", fmt.Errorf("%w: unknown report format %q (want table, md, csv, json or html)", workflow.ErrUsage, s)
	}
	return f, nil
}

// Report is a built report as the renderers see it: Effort or Measures.
type Report interface {
	// document lays the report out as a title, headline lines and tables,
	// shared by the table, Markdown and HTML formats so they never
	// disagree.
	document() reportDoc
	// rows is the report as long-format CSV rows (section, key, metric,
	// value, unit), durations in whole minutes. The JSON document holds the
	// same numbers (durations in exact seconds).
	rows() []Row
	// charts are the HTML page's inline SVG charts.
	charts() []chart
	// data is what the JSON format encodes.
	data() any
}

type (
	effortView   struct{ *report.Effort }
	measuresView struct{ *report.Measures }
)

// Effort renders an effort report.
func Effort(r *report.Effort) Report { return effortView{r} }

// Measures renders a measures report.
func Measures(r *report.Measures) Report { return measuresView{r} }

func (v effortView) data() any   { return v.Effort }
func (v measuresView) data() any { return v.Measures }

// Rows is rep as long-format CSV rows, as Write's CSV format writes them.
func Rows(rep Report) []Row { return rep.rows() }

// Row is one number of a report in long format, the CSV layout:
// spreadsheets pivot it, and a reader needs no knowledge of the sections.
type Row struct {
	Section string
	Key     string
	Metric  string
	Value   string
	Unit    string
}

// CSVHeader is the first CSV line.
var CSVHeader = []string{"section", "key", "metric", "value", "unit"}

// Write prints rep in format f.
func Write(w io.Writer, rep Report, f Format) error {
	switch f {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep.data())
	case FormatCSV:
		cw := csv.NewWriter(w)
		if err := cw.Write(CSVHeader); err != nil {
			return err
		}
		for _, r := range rep.rows() {
			if err := cw.Write([]string{r.Section, r.Key, r.Metric, r.Value, r.Unit}); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	case FormatMarkdown:
		return rep.document().markdown(w)
	case FormatHTML:
		return writeHTML(w, rep)
	default:
		return rep.document().text(w)
	}
}

// ParseCSV reads rows written by WriteReport in CSV format.
func ParseCSV(r io.Reader) ([]Row, error) {
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 || !slices.Equal(recs[0], CSVHeader) {
		return nil, fmt.Errorf("report csv: want header %v", CSVHeader)
	}
	out := make([]Row, 0, len(recs)-1)
	for _, rec := range recs[1:] {
		out = append(out, Row{rec[0], rec[1], rec[2], rec[3], rec[4]})
	}
	return out, nil
}

// reportDoc is a report laid out for reading.
type reportDoc struct {
	title    string
	headline []string // short lines under the title
	empty    string   // set when the period is empty: printed instead of tables
	tables   []docTable
	charts   []chart // HTML only
}

type docTable struct {
	title  string
	header []string
	rows   [][]string
	notes  []string // printed under the table
}

func (d reportDoc) text(w io.Writer) error {
	var b strings.Builder
	b.WriteString(d.title + "\n")
	for _, h := range d.headline {
		b.WriteString(h + "\n")
	}
	if d.empty != "" {
		b.WriteString("\n" + d.empty + "\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	for _, t := range d.tables {
		b.WriteString("\n" + t.title + "\n")
		if len(t.header) > 0 {
			tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  "+strings.Join(upper(t.header), "\t"))
			for _, r := range t.rows {
				fmt.Fprintln(tw, "  "+strings.Join(r, "\t"))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		for _, n := range t.notes {
			b.WriteString("  " + n + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (d reportDoc) markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# " + d.title + "\n\n")
	for _, h := range d.headline {
		b.WriteString(h + "  \n")
	}
	if d.empty != "" {
		b.WriteString("\n**" + d.empty + "**\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	for _, t := range d.tables {
		b.WriteString("\n## " + t.title + "\n\n")
		if len(t.header) > 0 {
			b.WriteString("| " + strings.Join(mdCells(t.header), " | ") + " |\n")
			b.WriteString("|" + strings.Repeat(" --- |", len(t.header)) + "\n")
			for _, r := range t.rows {
				b.WriteString("| " + strings.Join(mdCells(r), " | ") + " |\n")
			}
			if len(t.notes) > 0 {
				b.WriteString("\n")
			}
		}
		for _, n := range t.notes {
			b.WriteString("- " + n + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdCells(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return out
}

func upper(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToUpper(s)
	}
	return out
}

// FormatMinutes prints a duration to the minute (rounded to the nearest):
// "0m", "45m", "1h05m", "26h00m". Hours are not folded into days, because
// effort is read in hours.
func FormatMinutes(d report.Duration) string {
	m := d.Minutes()
	if m < 60 {
		return fmt.Sprintf("%dm", m)
	}
	return fmt.Sprintf("%dh%02dm", m/60, m%60)
}

func statsCells(s report.Stats) []string {
	if s.Count == 0 {
		return []string{"0", "-", "-", "-", "0m"}
	}
	return []string{strconv.Itoa(s.Count), FormatMinutes(s.Median), FormatMinutes(s.P90), FormatMinutes(s.Max), FormatMinutes(s.Total)}
}

var statsHeader = []string{"releases", "median", "p90", "max", "total"}

// statsRows is a Stats in long format.
func statsRows(section, key string, s report.Stats) []Row {
	return []Row{
		{section, key, "count", strconv.Itoa(s.Count), "count"},
		{section, key, "median", minutes(s.Median), "minutes"},
		{section, key, "p90", minutes(s.P90), "minutes"},
		{section, key, "max", minutes(s.Max), "minutes"},
		{section, key, "total", minutes(s.Total), "minutes"},
	}
}

func minutes(d report.Duration) string { return strconv.FormatInt(d.Minutes(), 10) }

func seconds(d report.Duration) string {
	return strconv.FormatFloat(d.D().Seconds(), 'f', -1, 64)
}

func hours(h float64) string { return strconv.FormatFloat(h, 'f', -1, 64) }

func periodLine(from, to time.Time, tz, by string) string {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	return fmt.Sprintf("Period: %s → %s (time zone %s; from inclusive, to exclusive, %s)",
		from.In(loc).Format("2006-01-02 15:04"), to.In(loc).Format("2006-01-02 15:04"), tz, by)
}

// definitions are printed at the foot of every report, so nobody has to
// guess what a number means.
func definitions(abandon report.Duration) docTable {
	return docTable{title: "Definitions", notes: []string{
		"median and p90: nearest rank — sort ascending, take the value at rank ⌈p/100 × n⌉ (an observed value; the lower middle for an even count)",
		"staff effort = active (engaged with relcap, per step, per person) + off-tool (logged meetings and chat); machine wait and elapsed time are shown beside it, never added",
		fmt.Sprintf("abandoned: not converged, rolled back or ended, and no update for more than %s; counted as failed", FormatDays(abandon)),
		"durations are rounded to the nearest minute here; the JSON format carries exact seconds",
	}}
}

// FormatDays prints whole days as "7 days", anything else to the minute.
func FormatDays(d report.Duration) string {
	if dd := d.D(); dd%(24*time.Hour) == 0 && dd > 0 {
		n := int(dd / (24 * time.Hour))
		if n == 1 {
			return "1 day"
		}
		return fmt.Sprintf("%d days", n)
	}
	return FormatMinutes(d)
}

func (v effortView) document() reportDoc {
	r := v.Effort
	d := reportDoc{title: "Release coordination effort"}
	d.headline = append(d.headline, periodLine(r.From, r.To, r.TimeZone, "by release creation"))
	if r.Env != "" {
		d.headline = append(d.headline, "Environment: "+r.Env)
	}
	if r.Person != "" {
		d.headline = append(d.headline, "Person: "+r.Person+" (their own effort on releases they worked on or captained)")
	}
	if r.Empty {
		d.empty = r.Message
		return d
	}
	c := r.Counts
	kinds := make([]string, 0, len(c.ByKind))
	for _, k := range releaseKinds {
		if n := c.ByKind[k]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	d.headline = append(d.headline, fmt.Sprintf("Releases: %d (%s) — succeeded %d, failed %d, rolled back %d, abandoned %d, in progress %d",
		c.Total, strings.Join(kinds, ", "), c.Succeeded, c.Failed, c.RolledBack, c.Abandoned, c.InProgress))
	if c.BreakGlassExcluded > 0 {
		d.headline = append(d.headline, fmt.Sprintf("Break-glass records left out (not releases): %d", c.BreakGlassExcluded))
	}
	d.headline = append(d.headline, coverageLines(r.Coverage)...)
	if r.Comparison != nil {
		d.headline = append(d.headline, "", r.Comparison.Line)
		for _, cond := range r.Comparison.Conditions {
			d.headline = append(d.headline, "  if: "+cond)
		}
	} else if r.ComparisonNote != "" {
		d.headline = append(d.headline, "", r.ComparisonNote)
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
		row := []string{name, strconv.Itoa(m.Releases), strconv.Itoa(m.Measured), FormatMinutes(m.Staff), FormatMinutes(m.Active), FormatMinutes(m.OffTool)}
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
		d.tables = append(d.tables, engagementTable(r))
	}

	people := docTable{title: "People", header: []string{"person", "releases", "measured", "unmeasured", "active", "off-tool", "staff"}}
	for _, p := range r.People {
		people.rows = append(people.rows, []string{p.Person, strconv.Itoa(p.Releases), strconv.Itoa(p.MeasuredReleases), strconv.Itoa(p.UnmeasuredReleases),
			FormatMinutes(p.Active), FormatMinutes(p.OffTool), FormatMinutes(p.Staff)})
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
		{"releases", "", "abandoned", strconv.Itoa(r.Counts.Abandoned), "count"},
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
			Row{"by_month", m.Month, "staff", minutes(m.Staff), "minutes"},
			Row{"by_month", m.Month, "active", minutes(m.Active), "minutes"},
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
			Row{"comparison", c.Measure, "difference", hours(c.Difference), c.Unit})
	}
	for _, p := range r.People {
		rows = append(rows,
			Row{"people", p.Person, "releases", strconv.Itoa(p.Releases), "count"},
			Row{"people", p.Person, "measured_releases", strconv.Itoa(p.MeasuredReleases), "count"},
			Row{"people", p.Person, "unmeasured_releases", strconv.Itoa(p.UnmeasuredReleases), "count"},
			Row{"people", p.Person, "active", minutes(p.Active), "minutes"},
			Row{"people", p.Person, "off_tool", minutes(p.OffTool), "minutes"},
			Row{"people", p.Person, "staff", minutes(p.Staff), "minutes"})
	}
	for _, x := range r.Releases {
		rows = append(rows,
			Row{"release", x.ID, "outcome", string(x.Outcome), "outcome"},
			Row{"release", x.ID, "coverage", string(x.Coverage), "coverage"},
			Row{"release", x.ID, "month", x.Month, "month"},
			Row{"release", x.ID, "staff", minutes(x.Staff), "minutes"},
			Row{"release", x.ID, "active", minutes(x.Active), "minutes"},
			Row{"release", x.ID, "off_tool", minutes(x.OffTool), "minutes"},
			Row{"release", x.ID, "machine_wait", minutes(x.Wait), "minutes"},
			Row{"release", x.ID, "elapsed", minutes(x.Elapsed), "minutes"})
	}
	return rows
}

// releaseKinds is the order release kinds are listed in.
var releaseKinds = []workflow.ReleaseKind{workflow.KindRelease, workflow.KindPromotion, workflow.KindRollback}

// orderedKeys lists m's keys: those of order first, in that order, then
// the rest sorted.
func orderedKeys[K ~string, V any](m map[K]V, order []K) []K {
	out := make([]K, 0, len(m))
	for _, k := range order {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	var rest []K
	for k := range m {
		if !slices.Contains(order, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

func (v measuresView) document() reportDoc {
	r := v.Measures
	d := reportDoc{title: "Operating measures"}
	d.headline = append(d.headline, periodLine(r.From, r.To, r.TimeZone, "each measure by when it ended: applied, converged, resolved; releases by creation"))
	if r.Env != "" {
		d.headline = append(d.headline, "Environment: "+r.Env)
	}
	if r.Empty {
		d.empty = r.Message
		return d
	}
	lead := docTable{title: "Reviewed-change lead time (relcap's own)", header: append([]string{"measure"}, "count", "median", "p90", "max", "total")}
	lead.rows = append(lead.rows,
		append([]string{"plan created → applied"}, statsCells(r.PlanLeadTime)...),
		append([]string{"digest first seen → converged in " + r.ProdEnv}, statsCells(r.DigestLeadTime)...))
	lead.notes = append(lead.notes, fmt.Sprintf("plans created in the period and not applied: %d", r.PlansPending))
	if r.DigestsUnseen > 0 {
		lead.notes = append(lead.notes, fmt.Sprintf("digests converged in %s with no registry sighting before: %d (left out)", r.ProdEnv, r.DigestsUnseen))
	}
	// The failed-release frequency and recovery time of earlier versions
	// stay in the JSON and CSV; the DORA table supersedes them here.
	drift := docTable{title: "Drift age (ownership and drift findings, first seen → resolved)",
		header: append([]string{"measure"}, "count", "median", "p90", "max", "total"),
		rows:   [][]string{append([]string{"resolved in period"}, statsCells(r.DriftAge)...)},
		notes:  []string{fmt.Sprintf("still open at the end of the period: %d (oldest %s)", r.DriftOpen, FormatMinutes(r.DriftOldest))}}
	conf := docTable{title: "Ownership conflicts per week", header: []string{"week", "starts", "opened", "resolved", "open at end"}}
	loc, err := time.LoadLocation(r.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	for _, w := range r.ConflictsWeeks {
		conf.rows = append(conf.rows, []string{w.Week, w.Start.In(loc).Format("2006-01-02"), strconv.Itoa(w.Opened), strconv.Itoa(w.Resolved), strconv.Itoa(w.OpenAtEnd)})
	}
	defs := definitions(r.AbandonAfter)
	defs.notes = append(defs.notes, report.DORADefinitions...)
	d.tables = append(d.tables, doraTable(r.DORA), lead, drift, conf, approvalsTable(r.Approvals, loc))
	d.tables = append(d.tables, rehearsalTables(r.Rehearsals, loc)...)
	d.tables = append(d.tables, defs)
	d.charts = v.charts()
	return d
}

// DORATitle is the title of the five DORA measures' table.
const DORATitle = "DORA measures (production: %s)"

// doraTable is the five DORA measures, one row each, with what each
// figure counts beside it; the definitions are at the foot of the report.
func doraTable(x report.DORA) docTable {
	pct := func(f float64) string { return fmt.Sprintf("%.1f%%", f*100) }
	lt, fd, cf, rt, rw := x.ChangeLeadTime, x.DeploymentFrequency, x.ChangeFailRate, x.FailedDeploymentRecoveryTime, x.DeploymentReworkRate
	medianP90 := func(s report.Stats) string {
		if s.Count == 0 {
			return "-"
		}
		return "median " + FormatMinutes(s.Median) + ", p90 " + FormatMinutes(s.P90)
	}
	t := docTable{title: fmt.Sprintf(DORATitle, x.ProdEnv), header: []string{"measure", "value", "over"}}
	t.rows = [][]string{
		{"change lead time", medianP90(lt), fmt.Sprintf("%d converged deployment(s) of a change", lt.Count)},
		{"deployment frequency", strconv.FormatFloat(math.Round(fd.PerWeek*100)/100, 'f', -1, 64) + " per week",
			fmt.Sprintf("%d deployment(s) in %s day(s)", fd.Deployments, strconv.FormatFloat(math.Round(fd.PeriodDays*100)/100, 'f', -1, 64))},
		{"change fail rate", pct(cf.Rate), fmt.Sprintf("%d of %d: rolled back %d, hotfixed %d, failed %d", cf.Failures, cf.Deployments, cf.RolledBack, cf.Hotfixed, cf.FailedConvergence)},
		{"failed deployment recovery time", medianP90(rt), fmt.Sprintf("%d recovered, %d not yet", rt.Count, x.Unrecovered)},
		{"deployment rework rate", pct(rw.Rate), fmt.Sprintf("%d of %d: rollbacks %d, break-glass %d", rw.Unplanned, rw.Deployments, rw.Rollbacks, rw.BreakGlass)},
	}
	t.notes = []string{fmt.Sprintf("production release records that are not deployments (failed before apply, abandoned, in progress): %d", x.NotDeployed)}
	return t
}

// approvalsTable counts the period's approvals and names every unsigned
// one: a decision that rests on a typed name, not on a person's key.
func approvalsTable(a report.ApprovalCounts, loc *time.Location) docTable {
	t := docTable{title: "Approvals (signed with the approver's own SSH key, or not)",
		notes: []string{fmt.Sprintf("signed: %d, unsigned: %d", a.Signed, len(a.Unsigned))}}
	if len(a.Unsigned) == 0 {
		return t
	}
	t.header = []string{"unsigned", "env", "subject", "approver", "at"}
	for _, u := range a.Unsigned {
		t.rows = append(t.rows, []string{string(u.Kind), u.Env, workflow.ShortHash(u.Subject), u.Approver, u.At.In(loc).Format("2006-01-02 15:04")})
	}
	return t
}

// rehearsalTables are the recovery drills per environment: how they
// ended and how fast, then how long ago each drill last passed.
func rehearsalTables(rs []report.RehearsalFigures, loc *time.Location) []docTable {
	sum := docTable{title: "Recovery rehearsals (relcap rehearse: failure injected → detected → converged on the baseline again)",
		header: []string{"env", "run", "passed", "failed", "abandoned", "median detect", "median recover"}}
	fresh := docTable{title: "Days since each drill last passed", header: []string{"env", "drill", "last passed", "days since"}}
	if len(rs) == 0 {
		sum.header, sum.notes = nil, []string{"no drills run: relcap rehearse --env ENV --all"}
		return []docTable{sum}
	}
	for _, f := range rs {
		sum.rows = append(sum.rows, []string{f.Env, strconv.Itoa(f.Run), strconv.Itoa(f.Passed), strconv.Itoa(f.Failed), strconv.Itoa(f.Abandoned),
			medianSeconds(f.TimeToDetect), medianSeconds(f.TimeToRecover)})
		for _, d := range f.Drills {
			last, days := "never", "never"
			if !d.Never() {
				last, days = d.LastPassed.In(loc).Format("2006-01-02 15:04"), strconv.Itoa(d.DaysSince)
			}
			fresh.rows = append(fresh.rows, []string{f.Env, string(d.Drill), last, days})
		}
	}
	return []docTable{sum, fresh}
}

// medianSeconds is a median of seconds-long drills, to the second.
func medianSeconds(s report.Stats) string {
	if s.Count == 0 {
		return "-"
	}
	return s.Median.D().Round(time.Second).String()
}

// Rows is the measures report in long format.
func (v measuresView) rows() []Row {
	r := v.Measures
	fr := r.Releases
	rows := []Row{
		{"period", "", "from", r.From.UTC().Format(time.RFC3339Nano), "time"},
		{"period", "", "to", r.To.UTC().Format(time.RFC3339Nano), "time"},
		{"period", "", "time_zone", r.TimeZone, "zone"},
		{"period", "", "empty", strconv.FormatBool(r.Empty), "bool"},
	}
	rows = append(rows, statsRows("lead_time", "plan", r.PlanLeadTime)...)
	rows = append(rows, Row{"lead_time", "plan", "pending", strconv.Itoa(r.PlansPending), "count"})
	rows = append(rows, statsRows("lead_time", "digest", r.DigestLeadTime)...)
	rows = append(rows, Row{"lead_time", "digest", "unseen", strconv.Itoa(r.DigestsUnseen), "count"},
		Row{"failed_releases", "", "total", strconv.Itoa(fr.Total), "count"},
		Row{"failed_releases", "", "finished", strconv.Itoa(fr.Finished), "count"},
		Row{"failed_releases", "", "failed", strconv.Itoa(fr.Failed), "count"},
		Row{"failed_releases", "", "rolled_back", strconv.Itoa(fr.RolledBack), "count"},
		Row{"failed_releases", "", "abandoned", strconv.Itoa(fr.Abandoned), "count"},
		Row{"failed_releases", "", "failures", strconv.Itoa(fr.Failures), "count"},
		Row{"failed_releases", "", "rate", strconv.FormatFloat(fr.Rate, 'f', -1, 64), "ratio"})
	rows = append(rows, statsRows("recovery", "", r.Recovery)...)
	rows = append(rows, Row{"recovery", "", "unrecovered", strconv.Itoa(r.Unrecovered), "count"})
	rows = append(rows, doraRows(r.DORA)...)
	rows = append(rows, statsRows("drift_age", "resolved", r.DriftAge)...)
	rows = append(rows, Row{"drift_age", "open", "count", strconv.Itoa(r.DriftOpen), "count"},
		Row{"drift_age", "open", "oldest", minutes(r.DriftOldest), "minutes"})
	for _, w := range r.ConflictsWeeks {
		rows = append(rows,
			Row{"ownership_conflicts", w.Week, "opened", strconv.Itoa(w.Opened), "count"},
			Row{"ownership_conflicts", w.Week, "resolved", strconv.Itoa(w.Resolved), "count"},
			Row{"ownership_conflicts", w.Week, "open_at_end", strconv.Itoa(w.OpenAtEnd), "count"})
	}
	rows = append(rows, Row{"approvals", "signed", "count", strconv.Itoa(r.Approvals.Signed), "count"},
		Row{"approvals", "unsigned", "count", strconv.Itoa(len(r.Approvals.Unsigned)), "count"})
	for _, f := range r.Rehearsals {
		rows = append(rows,
			Row{"rehearsals", f.Env, "run", strconv.Itoa(f.Run), "count"},
			Row{"rehearsals", f.Env, "passed", strconv.Itoa(f.Passed), "count"},
			Row{"rehearsals", f.Env, "failed", strconv.Itoa(f.Failed), "count"},
			Row{"rehearsals", f.Env, "abandoned", strconv.Itoa(f.Abandoned), "count"},
			Row{"rehearsals", f.Env, "detect_median", seconds(f.TimeToDetect.Median), "seconds"},
			Row{"rehearsals", f.Env, "recover_median", seconds(f.TimeToRecover.Median), "seconds"})
		for _, d := range f.Drills {
			days := "never"
			if !d.Never() {
				days = strconv.Itoa(d.DaysSince)
			}
			rows = append(rows, Row{"rehearsals", f.Env + "/" + string(d.Drill), "days_since_passed", days, "days"})
		}
	}
	return rows
}

// doraRows is the DORA measures in long format.
func doraRows(x report.DORA) []Row {
	fd, cf, rw := x.DeploymentFrequency, x.ChangeFailRate, x.DeploymentReworkRate
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	rows := statsRows("dora", "change_lead_time", x.ChangeLeadTime)
	rows = append(rows,
		Row{"dora", "deployment_frequency", "deployments", strconv.Itoa(fd.Deployments), "count"},
		Row{"dora", "deployment_frequency", "period_days", f(fd.PeriodDays), "days"},
		Row{"dora", "deployment_frequency", "per_week", f(fd.PerWeek), "per_week"},
		Row{"dora", "change_fail_rate", "deployments", strconv.Itoa(cf.Deployments), "count"},
		Row{"dora", "change_fail_rate", "failures", strconv.Itoa(cf.Failures), "count"},
		Row{"dora", "change_fail_rate", "rolled_back", strconv.Itoa(cf.RolledBack), "count"},
		Row{"dora", "change_fail_rate", "hotfixed", strconv.Itoa(cf.Hotfixed), "count"},
		Row{"dora", "change_fail_rate", "failed_convergence", strconv.Itoa(cf.FailedConvergence), "count"},
		Row{"dora", "change_fail_rate", "rate", f(cf.Rate), "ratio"})
	rows = append(rows, statsRows("dora", "failed_deployment_recovery_time", x.FailedDeploymentRecoveryTime)...)
	rows = append(rows,
		Row{"dora", "failed_deployment_recovery_time", "unrecovered", strconv.Itoa(x.Unrecovered), "count"},
		Row{"dora", "deployment_rework_rate", "deployments", strconv.Itoa(rw.Deployments), "count"},
		Row{"dora", "deployment_rework_rate", "unplanned", strconv.Itoa(rw.Unplanned), "count"},
		Row{"dora", "deployment_rework_rate", "rollbacks", strconv.Itoa(rw.Rollbacks), "count"},
		Row{"dora", "deployment_rework_rate", "break_glass", strconv.Itoa(rw.BreakGlass), "count"},
		Row{"dora", "deployment_rework_rate", "rate", f(rw.Rate), "ratio"},
		Row{"dora", "", "not_deployed", strconv.Itoa(x.NotDeployed), "count"})
	return rows
}
