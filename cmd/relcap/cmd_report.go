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
it) and the before/after comparison with effort.baseline_hours_per_release.
report measures shows reviewed-change lead time, failed-release frequency,
recovery time, drift age and ownership conflicts over time.

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
		Short: "Lead time, failed releases, recovery time, drift age and ownership conflicts",
		Args:  noArgs,
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
		Person: strings.TrimSpace(f.person), BaselineHoursPerRelease: f.baseline, ProdEnv: "prod"}
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
		}
		if n := len(p.Environments); n > 0 {
			opts.ProdEnv = p.Environments[n-1].Name
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
