package reportfmt_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/reportfmt"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/report/reporttest"
)

// TestTableSaysTheManagersLineAndItsConditions is the example: 40
// releases of 1 h of staff time each against a 3 h baseline.
func TestTableSaysTheManagersLineAndItsConditions(t *testing.T) {
	t.Parallel()
	rep, err := report.BuildEffort(reporttest.ManagerForm())
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, reportfmt.Write(&out, reportfmt.Effort(rep), reportfmt.FormatTable))
	text := out.String()
	require.Contains(t, text, "Release coordination effort, hours/month: 120 → 40, 80 freed (over 40 of 40 releases)\n  if: comparable scope")
	require.Contains(t, text, "same review and approval requirements")
	require.Contains(t, text, "costs not included")
	require.Contains(t, text, "time zone UTC")
}

func TestCSVAndJSONCarryTheSameNumbers(t *testing.T) {
	t.Parallel()
	data, tr := reporttest.Generate(7, 97, time.UTC)
	_ = tr
	effort, err := report.BuildEffort(data, report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 3, 0), Now: reporttest.Jan1.AddDate(0, 6, 0), BaselineHoursPerRelease: 3})
	require.NoError(t, err)
	mdata, mo := reporttest.MeasuresLedger(t)
	measures, err := report.BuildMeasures(mdata, mo)
	require.NoError(t, err)

	parsedEffort, parsedMeasures := &report.Effort{}, &report.Measures{}
	for name, c := range map[string]struct {
		built, parsed any
		rep, reparsed reportfmt.Report
	}{
		"effort":   {effort, parsedEffort, reportfmt.Effort(effort), reportfmt.Effort(parsedEffort)},
		"measures": {measures, parsedMeasures, reportfmt.Measures(measures), reportfmt.Measures(parsedMeasures)},
	} {
		var js, cs bytes.Buffer
		require.NoError(t, reportfmt.Write(&js, c.rep, reportfmt.FormatJSON), name)
		require.NoError(t, reportfmt.Write(&cs, c.rep, reportfmt.FormatCSV), name)
		require.NoError(t, json.Unmarshal(js.Bytes(), c.parsed), name)
		rows, err := reportfmt.ParseCSV(&cs)
		require.NoError(t, err, name)
		require.Equal(t, reportfmt.Rows(c.reparsed), rows, name)
		require.Equal(t, c.built, c.parsed, "%s: JSON round-trips exactly (seconds carry nanoseconds)", name)
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
	require.NoError(t, reportfmt.Write(&js, reportfmt.Effort(effort), reportfmt.FormatJSON))
	require.NoError(t, json.Unmarshal(js.Bytes(), &raw))
	require.InDelta(t, effort.Releases[0].Staff.Seconds(), raw.Items[0].Staff, 1e-9)
}

var externalRef = regexp.MustCompile(`(?i)(src|href|xlink:href)\s*=\s*["']?\s*(https?:)?//`)

func TestHTMLIsSelfContained(t *testing.T) {
	t.Parallel()
	data, _ := reporttest.Generate(3, 1200, time.UTC)
	effort, err := report.BuildEffort(data, report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 3, 0), Now: reporttest.Jan1.AddDate(0, 6, 0), BaselineHoursPerRelease: 3})
	require.NoError(t, err)
	mdata, mo := reporttest.MeasuresLedger(t)
	measures, err := report.BuildMeasures(mdata, mo)
	require.NoError(t, err)
	for _, rep := range []reportfmt.Report{reportfmt.Effort(effort), reportfmt.Measures(measures)} {
		var out bytes.Buffer
		require.NoError(t, reportfmt.Write(&out, rep, reportfmt.FormatHTML))
		page := out.String()
		require.NotContains(t, page, "http://")
		require.NotContains(t, page, "https://")
		require.NotRegexp(t, externalRef, page)
		require.NotContains(t, page, "<script")
		require.NotContains(t, page, "@import")
		require.Contains(t, page, "<svg")
	}
	var out bytes.Buffer
	require.NoError(t, reportfmt.Write(&out, reportfmt.Effort(effort), reportfmt.FormatHTML))
	require.Contains(t, out.String(), "Staff hours per release over time (mean of each of")
	require.Contains(t, out.String(), "Effort by step")
	require.Contains(t, out.String(), "Release coordination effort, hours/month: ")
}

func TestMarkdownHasTheTables(t *testing.T) {
	t.Parallel()
	data, _ := reporttest.Generate(5, 30, time.UTC)
	rep, err := report.BuildEffort(data, report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 3, 0), Now: reporttest.Jan1.AddDate(0, 6, 0), BaselineHoursPerRelease: 3})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, reportfmt.Write(&out, reportfmt.Effort(rep), reportfmt.FormatMarkdown))
	md := out.String()
	require.Contains(t, md, "# Release coordination effort\n")
	require.Contains(t, md, "| month | releases | measured | staff | active | off-tool | before (h) | after (h) | freed (h) |")
	require.Regexp(t, `\| 2026-01 \| \d+ \| \d+ \| \d+h\d\dm \|`, md)
}

func TestEveryFormatSaysAnEmptyPeriodAndTheTimeZone(t *testing.T) {
	t.Parallel()
	data := report.Data{Releases: []report.ReleaseFact{reporttest.ReleaseAt("old", reporttest.Jan1.AddDate(0, -3, 0))}}
	rep, err := report.BuildEffort(data, report.Options{From: reporttest.Jan1, To: reporttest.Jan1.AddDate(0, 1, 0), Now: reporttest.Jan1.AddDate(0, 2, 0), Env: "prod", BaselineHoursPerRelease: 3})
	require.NoError(t, err)
	for _, f := range []reportfmt.Format{reportfmt.FormatTable, reportfmt.FormatMarkdown, reportfmt.FormatHTML} {
		var out bytes.Buffer
		require.NoError(t, reportfmt.Write(&out, reportfmt.Effort(rep), f))
		require.Contains(t, out.String(), "no releases in prod between 2026-01-01 00:00 and 2026-02-01 00:00 (UTC): nothing to report", f)
	}

	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	feb := time.Date(2026, 2, 1, 0, 0, 0, 0, berlin)
	data = report.Data{Releases: []report.ReleaseFact{reporttest.ReleaseAt("a", feb.Add(time.Hour))}}
	rep, err = report.BuildEffort(data, report.Options{From: feb, To: feb.AddDate(0, 1, 0), Location: berlin, Now: feb.AddDate(0, 2, 0)})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, reportfmt.Write(&out, reportfmt.Effort(rep), reportfmt.FormatTable))
	require.Contains(t, out.String(), "Period: 2026-02-01 00:00 → 2026-03-01 00:00 (time zone Europe/Berlin")
}

// TestTheSeedsTableInEveryFormat is the engagement's table: 40 releases a
// month of 1 h staff time each against a 3 h baseline read 3 → 1 h a
// release and 120 → 40 h a month, 80 freed, in every format; with a
// configured rate of 50 releases a month, 150 → 50. Two releases left
// unmeasured are not in it, and the table says over how many it is.
func TestTheSeedsTableInEveryFormat(t *testing.T) {
	t.Parallel()
	data, o := reporttest.ManagerForm()
	for i := range 2 {
		id := "unmeasured-" + string(rune('a'+i))
		data.Releases = append(data.Releases, reporttest.ReleaseAt(id, reporttest.Jan1.Add(time.Duration(i)*time.Hour)))
		data.Effort = append(data.Effort, reporttest.Entry(id, "alice", effort.RoleCaptain, "plan-review", effort.Unmeasured, 0, reporttest.Jan1))
	}
	rep, err := report.BuildEffort(data, o)
	require.NoError(t, err)
	c := rep.Comparison
	require.NotNil(t, c)
	require.Equal(t, report.BeforeAfter{Before: 3, After: 1, Difference: 2}, c.PerRelease)
	require.Equal(t, 42.0, c.ReleasesPerMonth, "the period's own rate: 42 releases in January")
	require.Equal(t, report.BeforeAfter{Before: 126, After: 42, Difference: 84}, c.AtRate)
	require.Equal(t, 40, c.MeasuredReleases)

	o.ReleasesPerMonth, o.RateSource = 50, "effort.releases_per_month in relcap.yaml"
	rep, err = report.BuildEffort(data, o)
	require.NoError(t, err)
	require.Equal(t, report.BeforeAfter{Before: 150, After: 50, Difference: 100}, rep.Comparison.AtRate)

	out := map[reportfmt.Format]string{}
	for _, f := range []reportfmt.Format{reportfmt.FormatTable, reportfmt.FormatMarkdown, reportfmt.FormatCSV, reportfmt.FormatJSON, reportfmt.FormatHTML} {
		var b bytes.Buffer
		require.NoError(t, reportfmt.Write(&b, reportfmt.Effort(rep), f))
		out[f] = b.String()
	}
	out[reportfmt.FormatHTML] = regexp.MustCompile(`<[^>]+>`).ReplaceAllString(out[reportfmt.FormatHTML], " ")
	for _, f := range []reportfmt.Format{reportfmt.FormatTable, reportfmt.FormatMarkdown, reportfmt.FormatHTML} {
		require.Contains(t, out[f], reportfmt.BeforeAfterTitle, f)
		require.Regexp(t, `per release\W+3\W+1\W+2 freed`, out[f], f)
		require.Regexp(t, `per month at 50 releases\W+150\W+50\W+100 freed`, out[f], f)
		require.Contains(t, out[f], "over 40 measured of 42 releases", f)
		require.Contains(t, out[f], "effort.releases_per_month in relcap.yaml", f)
	}
	require.Contains(t, out[reportfmt.FormatCSV], "comparison,Release coordination effort,per_release_after,1,hours")
	require.Contains(t, out[reportfmt.FormatCSV], "comparison,Release coordination effort,per_month_at_rate_before,150,hours")
	var js struct {
		Comparison struct {
			PerRelease report.BeforeAfter `json:"per_release"`
			AtRate     report.BeforeAfter `json:"per_month_at_rate"`
			Rate       float64            `json:"releases_per_month"`
		} `json:"comparison"`
	}
	require.NoError(t, json.Unmarshal([]byte(out[reportfmt.FormatJSON]), &js))
	require.Equal(t, report.BeforeAfter{Before: 3, After: 1, Difference: 2}, js.Comparison.PerRelease)
	require.Equal(t, report.BeforeAfter{Before: 150, After: 50, Difference: 100}, js.Comparison.AtRate)
	require.Equal(t, 50.0, js.Comparison.Rate)
}
