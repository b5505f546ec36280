package reportfmt

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relcap/relcap/workflow/report"
)

// The HTML report is one self-contained file: inline CSS and inline SVG,
// no scripts, fonts, images or links to anything outside it, so it opens
// the same on an air-gapped laptop as in a browser with network (issue 9).

// chart is one picture of a report.
type chart struct {
	title string
	svg   string // an inline <svg> element, already escaped
}

// maxChartPoints caps the points of the time chart: beyond it, releases
// are averaged per bucket, because 100,000 dots say less than 300.
const maxChartPoints = 300

func (v effortView) charts() []chart {
	r := v.Effort
	var out []chart
	// Measured releases only: an unmeasured one is not a point at 0.
	if items := slices.DeleteFunc(slices.Clone(r.Releases), func(x report.ReleaseEffort) bool { return x.Staff == nil }); len(items) > 0 {
		slices.SortFunc(items, func(a, b report.ReleaseEffort) int { return a.CreatedAt.Compare(b.CreatedAt) })
		xs := make([]time.Time, len(items))
		ys := make([]float64, len(items))
		for i, x := range items {
			xs[i], ys[i] = x.CreatedAt, x.Staff.D().Hours()
		}
		title := "Staff hours per release over time"
		if len(xs) > maxChartPoints {
			xs, ys = bucketMeans(xs, ys, maxChartPoints)
			title += fmt.Sprintf(" (mean of each of %d time buckets)", len(xs))
		}
		var baseline float64
		if r.Comparison != nil {
			baseline = r.Comparison.BaselineHoursPerRelease
		}
		out = append(out, chart{title: title, svg: timeChart(xs, ys, baseline, "hours")})
	}
	if len(r.ByStep) > 0 {
		var labels []string
		var active, wait []float64
		for _, s := range r.ByStep {
			labels = append(labels, s.Step)
			active = append(active, s.Active.Total.D().Hours())
			wait = append(wait, s.Wait.D().Hours())
		}
		labels = append(labels, "off-tool")
		active = append(active, r.OffTool.Total.D().Hours())
		wait = append(wait, 0)
		out = append(out, chart{title: "Effort by step (total hours in the period)",
			svg: barChart(labels, []series{{"staff (active / off-tool)", "#2f6fb0", active}, {"machine wait (not staff)", "#b9c4cf", wait}}, "h")})
	}
	if len(r.ByMonth) > 0 {
		var labels []string
		var after, before []float64
		for _, m := range r.ByMonth {
			labels = append(labels, m.Month)
			after = append(after, m.MeasuredStaff.D().Hours())
			var b float64
			if m.MonthComparison != nil {
				b = m.BeforeHours
			}
			before = append(before, b)
		}
		ss := []series{{"staff hours of measured releases", "#2f6fb0", after}}
		if r.Comparison != nil {
			ss = append([]series{{"before (releases × baseline)", "#d08c3a", before}}, ss...)
		}
		out = append(out, chart{title: "Hours per month", svg: barChart(labels, ss, "h")})
	}
	return out
}

func (v measuresView) charts() []chart {
	r := v.Measures
	if len(r.ConflictsWeeks) == 0 {
		return nil
	}
	var labels []string
	var opened, resolved, open []float64
	for _, w := range r.ConflictsWeeks {
		labels = append(labels, w.Week)
		opened = append(opened, float64(w.Opened))
		resolved = append(resolved, float64(w.Resolved))
		open = append(open, float64(w.OpenAtEnd))
	}
	return []chart{{title: "Ownership conflicts per week", svg: barChart(labels,
		[]series{{"opened", "#c0392b", opened}, {"resolved", "#27ae60", resolved}, {"open at end", "#7f8c8d", open}}, "")}}
}

// bucketMeans averages (xs, ys), sorted by x, into n equal time buckets,
// dropping empty ones; each bucket is drawn at its mean time.
func bucketMeans(xs []time.Time, ys []float64, n int) ([]time.Time, []float64) {
	lo, hi := xs[0], xs[len(xs)-1]
	span := hi.Sub(lo)
	if span <= 0 {
		span = 1
	}
	sumX := make([]float64, n)
	sumY := make([]float64, n)
	cnt := make([]int, n)
	for i, x := range xs {
		b := min(int(float64(x.Sub(lo))/float64(span)*float64(n)), n-1)
		sumX[b] += float64(x.Sub(lo))
		sumY[b] += ys[i]
		cnt[b]++
	}
	var ox []time.Time
	var oy []float64
	for b := range n {
		if cnt[b] == 0 {
			continue
		}
		ox = append(ox, lo.Add(time.Duration(sumX[b]/float64(cnt[b]))))
		oy = append(oy, sumY[b]/float64(cnt[b]))
	}
	return ox, oy
}

type series struct {
	name, colour string
	values       []float64
}

const (
	chartW, chartH = 860, 260
	padL, padR     = 56, 16
	padT, padB     = 16, 48
)

// niceMax rounds a chart's top up to 1, 2 or 5 × a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func axes(b *strings.Builder, top float64, unit string) {
	plotH := float64(chartH - padT - padB)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		y := float64(padT) + plotH - plotH*float64(i)/4
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e3e7eb"/>`, padL, y, chartW-padR, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#555">%s%s</text>`, padL-6, y+4, html.EscapeString(report.FormatHours(v)), html.EscapeString(unit))
	}
}

// timeChart draws ys against xs, with a dashed baseline when positive.
func timeChart(xs []time.Time, ys []float64, baseline float64, unit string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg role="img" viewBox="0 0 %d %d" width="%d" height="%d">`, chartW, chartH, chartW, chartH)
	top := niceMax(max(slices.Max(ys), baseline))
	axes(&b, top, "h")
	lo, hi := xs[0], xs[len(xs)-1]
	span := float64(hi.Sub(lo))
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	px := func(t time.Time) float64 {
		if span == 0 {
			return float64(padL) + plotW/2
		}
		return float64(padL) + plotW*float64(t.Sub(lo))/span
	}
	py := func(v float64) float64 { return float64(padT) + plotH - plotH*v/top }
	if baseline > 0 {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d08c3a" stroke-dasharray="6 4"/><text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#d08c3a">baseline %s h</text>`,
			padL, py(baseline), chartW-padR, py(baseline), chartW-padR, py(baseline)-4, html.EscapeString(report.FormatHours(baseline)))
	}
	var pts []string
	for i := range xs {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[i]), py(ys[i])))
	}
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#2f6fb0" stroke-width="1.5" points="%s"/>`, strings.Join(pts, " "))
	for i := range xs {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="#2f6fb0"><title>%s: %s %s</title></circle>`,
			px(xs[i]), py(ys[i]), html.EscapeString(xs[i].UTC().Format("2006-01-02 15:04 UTC")), html.EscapeString(report.FormatHours(ys[i])), unit)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#555">%s</text>`, padL, chartH-padB+18, html.EscapeString(lo.UTC().Format("2006-01-02")))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end" fill="#555">%s</text>`, chartW-padR, chartH-padB+18, html.EscapeString(hi.UTC().Format("2006-01-02")))
	b.WriteString(`</svg>`)
	return b.String()
}

// barChart draws grouped vertical bars, one group per label, with a legend.
func barChart(labels []string, ss []series, unit string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg role="img" viewBox="0 0 %d %d" width="%d" height="%d">`, chartW, chartH, chartW, chartH)
	var hi float64
	for _, s := range ss {
		if len(s.values) > 0 {
			hi = max(hi, slices.Max(s.values))
		}
	}
	top := niceMax(hi)
	axes(&b, top, unit)
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	group := plotW / float64(max(len(labels), 1))
	barW := group * 0.8 / float64(len(ss))
	every := max(1, len(labels)/20) // keep axis labels readable
	for i, l := range labels {
		x0 := float64(padL) + group*float64(i) + group*0.1
		for j, s := range ss {
			h := plotH * s.values[i] / top
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %s%s</title></rect>`,
				x0+barW*float64(j), float64(padT)+plotH-h, max(barW-1, 1), h, s.colour,
				html.EscapeString(l), html.EscapeString(s.name), html.EscapeString(report.FormatHours(s.values[i])), html.EscapeString(unit))
		}
		if i%every == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#555">%s</text>`, x0+group*0.4, chartH-padB+16, html.EscapeString(l))
		}
	}
	x := float64(padL)
	for _, s := range ss {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="10" height="10" fill="%s"/><text x="%.1f" y="%d" font-size="11" fill="#333">%s</text>`,
			x, chartH-16, s.colour, x+14, chartH-7, html.EscapeString(s.name))
		x += 24 + 7*float64(len(s.name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// htmlPage is parsed on first use, not at every start of relcap
// (docs/PERFORMANCE.md, "Start-up").
var htmlPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 920px; color: #1d2329; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .3rem; }
h2 { font-size: 1.15rem; margin-top: 2rem; border-bottom: 1px solid #dde3e8; padding-bottom: .2rem; }
p.head { margin: .15rem 0; }
p.headline { font-size: 1.25rem; font-weight: 600; margin: 1rem 0 .2rem; }
p.empty { font-size: 1.2rem; font-weight: 600; padding: 1rem; background: #fff6e0; border: 1px solid #e8cf8d; }
table { border-collapse: collapse; margin: .5rem 0; font-size: .9rem; }
th, td { padding: .25rem .7rem; border-bottom: 1px solid #e6eaee; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f5f7; }
ul.notes { color: #4a545e; font-size: .85rem; margin-top: .2rem; }
figure { margin: 1rem 0; }
figcaption { font-weight: 600; margin-bottom: .3rem; }
svg { max-width: 100%; height: auto; font-family: inherit; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{range .Headline}}{{if .Strong}}<p class="headline">{{.Text}}</p>{{else}}<p class="head">{{.Text}}</p>{{end}}
{{end}}
{{if .Empty}}<p class="empty">{{.Empty}}</p>{{else}}
{{range .Charts}}<figure><figcaption>{{.Title}}</figcaption>{{.SVG}}</figure>
{{end}}
{{range .Tables}}<h2>{{.Title}}</h2>
{{if .Header}}<table><thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody></table>{{end}}
{{if .Notes}}<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{end}}{{end}}
</body>
</html>
`))
})

func writeHTML(w io.Writer, rep Report) error {
	d := rep.document()
	type line struct {
		Text   string
		Strong bool
	}
	type tbl struct {
		Title  string
		Header []string
		Rows   [][]string
		Notes  []string
	}
	type fig struct {
		Title string
		SVG   template.HTML
	}
	page := struct {
		Title    string
		Headline []line
		Empty    string
		Charts   []fig
		Tables   []tbl
	}{Title: d.title, Empty: d.empty}
	for _, h := range d.headline {
		if h == "" {
			continue
		}
		page.Headline = append(page.Headline, line{Text: strings.TrimSpace(h), Strong: strings.HasPrefix(h, "Release coordination effort,")})
	}
	for _, c := range d.charts {
		// The SVG is built above from escaped text only.
		page.Charts = append(page.Charts, fig{Title: c.title, SVG: template.HTML(c.svg)}) //nolint:gosec // escaped when built
	}
	for _, t := range d.tables {
		page.Tables = append(page.Tables, tbl{Title: t.title, Header: t.header, Rows: t.rows, Notes: t.notes})
	}
	return htmlPage().Execute(w, page)
}
