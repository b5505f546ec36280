package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/tui/reportfmt"
	"github.com/relcap/relcap/workflow/report"
)

// reportOptions are the flags both reports take, and which report.
type reportOptions struct {
	f                         Factory
	from, to, tz, env, format string
	person                    string
	baseline                  float64
	// formatGiven, baselineGiven: --format, --baseline were given.
	formatGiven, baselineGiven bool
	effort                     bool
}

func newCmdReport(a Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Coordination-effort reports and the operating measures",
		Long: `report effort shows the staff time releases cost (median, p90 and total per
release, by role and by step, off-tool coordination apart, elapsed time beside
it), how many releases were measured, and the before/after comparison with
effort.baseline_hours_per_release over the measured releases alone: hours per
release and per month at effort.releases_per_month (or the period's own rate).
Sandbox (relcap demo) and rehearsal releases are never counted.
report measures shows the five DORA measures (change lead time, deployment
frequency, failed deployment recovery time, change fail rate, deployment rework
rate), reviewed-plan lead time, drift age and ownership conflicts over time.

Periods are in the --tz time zone (default UTC): --from is inclusive, --to
names the last day (or month) included. Formats: table (default), md, csv,
json (exact seconds), html (one self-contained file with charts).`,
	}
	cmd.AddCommand(newCmdReportEffort(a, nil), newCmdReportMeasures(a, nil))
	return readOnlyCommand(cmd)
}

func addReportFlags(cmd *cobra.Command, f *reportOptions) {
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "first day of the period: YYYY-MM-DD, YYYY-MM or RFC 3339 (default: the first day of the month two months ago)")
	fl.StringVar(&f.to, "to", "", "last day of the period, included: YYYY-MM-DD, YYYY-MM, or an RFC 3339 instant (excluded) (default: now)")
	fl.StringVar(&f.tz, "tz", "UTC", "time zone of the period, months and weeks (IANA name, e.g. Europe/Berlin)")
	fl.StringVar(&f.env, "env", "", "only this environment")
	fl.StringVar(&f.format, "format", "table", "table, md, csv, json or html")
}

func newCmdReportEffort(a Factory, runF func(context.Context, *reportOptions) error) *cobra.Command {
	f := &reportOptions{f: a, effort: true}
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
			f.formatGiven, f.baselineGiven = cmd.Flags().Changed("format"), cmd.Flags().Changed("baseline")
			return runOr(runF, runReport)(cmd.Context(), f)
		},
	}
	addReportFlags(cmd, f)
	cmd.Flags().StringVar(&f.person, "person", "", "one person's view: their effort on releases they worked on or captained")
	cmd.Flags().Float64Var(&f.baseline, "baseline", 0, "baseline hours per release for before/after (default: effort.baseline_hours_per_release)")
	return cmd
}

func newCmdReportMeasures(a Factory, runF func(context.Context, *reportOptions) error) *cobra.Command {
	f := &reportOptions{f: a}
	cmd := &cobra.Command{
		Use:   "measures [--from DATE --to DATE] [--env E] [--tz ZONE] [--format table|md|csv|json|html]",
		Short: "The five DORA measures, plan lead time, drift age, ownership conflicts and rehearsals",
		Long: "The five DORA measures, of the production environment (the last of the promotion\n" +
			"order, or --env), over releases created in the period:\n\n" + plain.Bullets(report.DORADefinitions) +
			"\nrelcap's own: reviewed-plan lead time (plan created → applied), drift age\n" +
			"(findings first seen → resolved), ownership conflicts per week, approvals\n" +
			"signed or not, and recovery rehearsals per environment (relcap rehearse):\n" +
			"drills run, passed and failed, median time to detect (failure injected →\n" +
			"named) and to recover (named → converged on the pre-drill release again), and\n" +
			"days since each drill last passed.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.formatGiven = cmd.Flags().Changed("format")
			return runOr(runF, runReport)(cmd.Context(), f)
		},
	}
	addReportFlags(cmd, f)
	return cmd
}

// runReport builds the effort report or the measures over the ledger and
// writes it in the format asked for.
func runReport(ctx context.Context, f *reportOptions) error {
	a, effort := f.f, f.effort
	format, err := reportfmt.ParseFormat(f.format)
	if err != nil {
		return UsageError{err}
	}
	if a.Flags().JSON && !f.formatGiven {
		format = reportfmt.FormatJSON
	}
	loc, err := time.LoadLocation(f.tz)
	if err != nil {
		return UsageError{fmt.Errorf("--tz %q: unknown time zone (want an IANA name such as UTC or Europe/Berlin)", f.tz)}
	}
	now := a.Clock().Now()
	from, to, err := report.ParsePeriod(f.from, f.to, loc, now)
	if err != nil {
		return UsageError{err}
	}
	opts := report.Options{From: from, To: to, Location: loc, Now: now, Env: strings.TrimSpace(f.env),
		Person: strings.TrimSpace(f.person), BaselineHoursPerRelease: f.baseline, BaselineSource: "--baseline", ProdEnv: report.DefaultProdEnv}
	if err := opts.Validate(); err != nil {
		return err
	}
	q := report.Query{Env: opts.Env, From: from, To: to, Person: opts.Person, EffortOnly: effort}
	p, err := a.OptionalProject()
	if err != nil {
		return err
	}
	if p != nil {
		q.App = p.App
		if err := opts.UseProject(p, f.baselineGiven); err != nil {
			return err
		}
	}
	l, err := a.Ledger(ctx)
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
		emptyNotice(a, format, r.Empty, r.Message)
	} else {
		r, err := report.BuildMeasures(data, opts)
		if err != nil {
			return err
		}
		rep = reportfmt.Measures(r)
		emptyNotice(a, format, r.Empty, r.Message)
	}
	return reportfmt.Write(a.IO().Out, rep, format)
}

// emptyNotice repeats "nothing to report" on stderr for machine formats,
// whose stdout a script parses and a person may never read.
func emptyNotice(a Factory, f reportfmt.Format, empty bool, msg string) {
	if empty && (f == reportfmt.FormatCSV || f == reportfmt.FormatJSON) {
		fmt.Fprintln(a.IO().Err, "relcap: "+msg)
	}
}
