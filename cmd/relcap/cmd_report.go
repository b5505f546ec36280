package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/reportfmt"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/report"
)

// reportFlags are the flags both reports take.
type reportFlags struct {
	from, to, tz, env, format string
	person                    string
	baseline                  float64
}

func (a *app) reportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Coordination-effort reports and the operating measures",
		Long: `report effort shows the staff time releases cost (median, p90 and total per
release, by role and by step, off-tool coordination apart, elapsed time beside
it), how many releases were measured, and the before/after comparison with
effort.baseline_hours_per_release over the measured releases alone.
report measures shows the five DORA measures (change lead time, deployment
frequency, failed deployment recovery time, change fail rate, deployment rework
rate), reviewed-plan lead time, drift age and ownership conflicts over time.

Periods are in the --tz time zone (default UTC): --from is inclusive, --to
names the last day (or month) included. Formats: table (default), md, csv,
json (exact seconds), html (one self-contained file with charts).`,
	}
	cmd.AddCommand(a.reportEffortCommand(), a.reportMeasuresCommand())
	return cmd
}

func addReportFlags(cmd *cobra.Command, f *reportFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "first day of the period: YYYY-MM-DD, YYYY-MM or RFC 3339 (default: the first day of the month two months ago)")
	fl.StringVar(&f.to, "to", "", "last day of the period, included: YYYY-MM-DD, YYYY-MM, or an RFC 3339 instant (excluded) (default: now)")
	fl.StringVar(&f.tz, "tz", "UTC", "time zone of the period, months and weeks (IANA name, e.g. Europe/Berlin)")
	fl.StringVar(&f.env, "env", "", "only this environment")
	fl.StringVar(&f.format, "format", "table", "table, md, csv, json or html")
}

func (a *app) reportEffortCommand() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "effort [--from DATE --to DATE] [--env E] [--person P] [--tz ZONE] [--format table|md|csv|json|html]",
		Short: "Staff effort per release, hours per month and the before/after comparison",
		Long: `Staff effort is active time in relcap plus off-tool time logged by hand;
machine wait and elapsed time are shown beside it and never added to it.

Coverage: a release is measured when relcap measured someone's active time on
it (a measured zero counts) and nobody's work on it was marked unmeasured;
partly measured when it has both; unmeasured when relcap measured no one's
active time on it (a run without a terminal, in CI or a script, is marked
unmeasured; off-tool time and machine wait alone do not measure a release).
The report says how many releases, and which people and steps, were measured.

Before/after ("Release coordination effort, hours/month: before, after,
difference"): before = measured releases × the baseline; after = their
measured staff hours; per month over the months that have a measured release
(or no release at all). Partly measured and unmeasured releases are left out
and named beside the figure; with no measured release there is no
before/after at all, because missing data is not saved time.`,
		Example: `  relcap report effort --from 2026-01 --to 2026-03
  relcap report effort --person alice --tz Europe/Berlin
  relcap report effort --format html > effort.html`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runReport(cmd, f, true)
		},
	}
	addReportFlags(cmd, &f)
	cmd.Flags().StringVar(&f.person, "person", "", "one person's view: their effort on releases they worked on or captained")
	cmd.Flags().Float64Var(&f.baseline, "baseline", 0, "baseline hours per release for before/after (default: effort.baseline_hours_per_release)")
	return cmd
}

func (a *app) reportMeasuresCommand() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "measures [--from DATE --to DATE] [--env E] [--tz ZONE] [--format table|md|csv|json|html]",
		Short: "The five DORA measures, plan lead time, drift age, ownership conflicts and rehearsals",
		Long: "The five DORA measures, of the production environment (the last of the promotion\n" +
			"order, or --env), over releases created in the period:\n\n" + wrapDefinitions(report.DORADefinitions) +
			"\nrelcap's own: reviewed-plan lead time (plan created → applied), drift age\n" +
			"(findings first seen → resolved), ownership conflicts per week, approvals\n" +
			"signed or not, and recovery rehearsals per environment (relcap rehearse):\n" +
			"drills run, passed and failed, median time to detect (failure injected →\n" +
			"named) and to recover (named → converged on the pre-drill release again), and\n" +
			"days since each drill last passed.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runReport(cmd, f, false)
		},
	}
	addReportFlags(cmd, &f)
	return cmd
}

func (a *app) runReport(cmd *cobra.Command, f reportFlags, effort bool) error {
	ctx := cmd.Context()
	format, err := reportfmt.ParseFormat(f.format)
	if err != nil {
		return usageError{err}
	}
	if a.flags.json && !cmd.Flags().Changed("format") {
		format = reportfmt.FormatJSON
	}
	loc, err := time.LoadLocation(f.tz)
	if err != nil {
		return usageError{fmt.Errorf("--tz %q: unknown time zone (want an IANA name such as UTC or Europe/Berlin)", f.tz)}
	}
	now := a.clock.Now()
	from, to, err := reportPeriod(f.from, f.to, loc, now)
	if err != nil {
		return usageError{err}
	}
	opts := report.Options{From: from, To: to, Location: loc, Now: now, Env: strings.TrimSpace(f.env),
		Person: strings.TrimSpace(f.person), BaselineHoursPerRelease: f.baseline, BaselineSource: "--baseline", ProdEnv: "prod"}
	if err := opts.Validate(); err != nil {
		return err
	}
	q := report.Query{Env: opts.Env, From: from, To: to, Person: opts.Person, EffortOnly: effort}
	p, err := a.optionalProject()
	if err != nil {
		return err
	}
	if p != nil {
		q.App = p.App
		if !cmd.Flags().Changed("baseline") {
			opts.BaselineHoursPerRelease = p.Effort.BaselineHoursPerRelease
			opts.BaselineSource = "effort.baseline_hours_per_release in " + p.File
		}
		if prod := p.ProdEnv(); prod != "" {
			opts.ProdEnv = prod
		}
		if opts.Env != "" {
			if _, err := p.Env(opts.Env); err != nil {
				return err
			}
		}
	}
	l, err := a.openLedger(ctx)
	if err != nil {
		return err
	}
	data, err := l.ReportData(ctx, q)
	if err != nil {
		return err
	}
	var rep reportfmt.Report
	if effort {
		r, err := report.BuildEffort(data, opts)
		if err != nil {
			return err
		}
		rep = reportfmt.Effort(r)
		a.emptyNotice(format, r.Empty, r.Message)
	} else {
		r, err := report.BuildMeasures(data, opts)
		if err != nil {
			return err
		}
		rep = reportfmt.Measures(r)
		a.emptyNotice(format, r.Empty, r.Message)
	}
	return reportfmt.Write(a.io.Out, rep, format)
}

// emptyNotice repeats "nothing to report" on stderr for machine formats,
// whose stdout a script parses and a person may never read.
func (a *app) emptyNotice(f reportfmt.Format, empty bool, msg string) {
	if empty && (f == reportfmt.FormatCSV || f == reportfmt.FormatJSON) {
		fmt.Fprintln(a.io.Err, "relcap: "+msg)
	}
}

// optionalProject loads relcap.yaml when there is one: reports read the
// app, the promotion order and the baseline from it, but a ledger can be
// reported on without a project (with --baseline). A relcap.yaml that
// exists but does not load is an error, never silently skipped.
func (a *app) optionalProject() (*workflow.Project, error) {
	if a.flags.config != "" {
		return a.loadProject()
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, nil //nolint:nilerr // no working directory means no project to find
	}
	path, err := config.Find(wd)
	if err != nil {
		return nil, nil //nolint:nilerr // no relcap.yaml: report on the whole ledger
	}
	p, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	a.project = p
	return p, nil
}

// reportPeriod turns --from and --to into [from, to). A date or month
// given to --to is included, so "--from 2026-01-01 --to 2026-01-31" is all
// of January; an RFC 3339 instant is the exclusive end itself.
func reportPeriod(fromS, toS string, loc *time.Location, now time.Time) (time.Time, time.Time, error) {
	var from, to time.Time
	if fromS == "" {
		n := now.In(loc)
		from = time.Date(n.Year(), n.Month()-2, 1, 0, 0, 0, 0, loc)
	} else {
		t, _, err := parseReportTime(fromS, loc)
		if err != nil {
			return from, to, fmt.Errorf("--from: %w", err)
		}
		from = t
	}
	if toS == "" {
		to = now
	} else {
		t, next, err := parseReportTime(toS, loc)
		if err != nil {
			return from, to, fmt.Errorf("--to: %w", err)
		}
		to = next(t)
	}
	if !from.Before(to) {
		return from, to, fmt.Errorf("the period is empty: --from %s is not before --to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	return from, to, nil
}

// parseReportTime reads a date, a month or an instant, and says how to get
// the exclusive end of the span it names.
func parseReportTime(s string, loc *time.Location) (time.Time, func(time.Time) time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.ParseInLocation("2006-01-02", s, loc); err == nil {
		return t, func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }, nil
	}
	if t, err := time.ParseInLocation("2006-01", s, loc); err == nil {
		return t, func(t time.Time) time.Time { return t.AddDate(0, 1, 0) }, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, func(t time.Time) time.Time { return t }, nil
	}
	return time.Time{}, nil, fmt.Errorf("%q is not YYYY-MM-DD, YYYY-MM or an RFC 3339 time", s)
}

// wrapDefinitions prints definitions as a bulleted list wrapped at 80
// columns, for help text.
func wrapDefinitions(defs []string) string {
	var b strings.Builder
	for _, d := range defs {
		line := "  -"
		for _, w := range strings.Fields(d) {
			if len(line)+1+len(w) > 80 {
				b.WriteString(line + "\n")
				line = "   "
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
