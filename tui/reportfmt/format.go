package reportfmt

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
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
		return "", fmt.Errorf("%w: unknown report format %q (want table, md, csv, json or html)", fault.ErrUsage, s)
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

// unmeasured is how a figure nobody measured is written, in every format:
// never as 0.
const unmeasured = "unmeasured"

// FormatMeasuredMinutes is FormatMinutes of a figure that may not have
// been measured (nil).
func FormatMeasuredMinutes(d *report.Duration) string {
	if d == nil {
		return unmeasured
	}
	return FormatMinutes(*d)
}

func measuredMinutes(d *report.Duration) string {
	if d == nil {
		return unmeasured
	}
	return minutes(*d)
}

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
		fmt.Sprintf("stalled: not converged, succeeded, rolled back, ended or abandoned, and no update for more than %s; counted as failed", FormatDays(abandon)),
		"abandoned: ended on purpose before it shipped (relcap release abandon, with a reason); neither a failure nor a deployment",
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
