package reportfmt

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/report"
)

// document is the measures report laid out for reading (Write's table,
// Markdown and HTML formats).
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
	t.notes = []string{fmt.Sprintf("production release records that are not deployments (failed before apply, stalled, abandoned, in progress): %d", x.NotDeployed)}
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
		header: []string{"env", "run", "passed", "failed", "abandoned", "median detect", "median recover", "median state restore"}}
	fresh := docTable{title: "Days since each drill last passed", header: []string{"env", "drill", "last passed", "days since"}}
	if len(rs) == 0 {
		sum.header, sum.notes = nil, []string{"no drills run: relcap rehearse --env ENV --all"}
		return []docTable{sum}
	}
	for _, f := range rs {
		sum.rows = append(sum.rows, []string{f.Env, strconv.Itoa(f.Run), strconv.Itoa(f.Passed), strconv.Itoa(f.Failed), strconv.Itoa(f.Abandoned),
			medianSeconds(f.TimeToDetect), medianSeconds(f.TimeToRecover), medianSeconds(f.TimeToRestore)})
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
		Row{"failed_releases", "", "stalled", strconv.Itoa(fr.Stalled), "count"},
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
			Row{"rehearsals", f.Env, "recover_median", seconds(f.TimeToRecover.Median), "seconds"},
			Row{"rehearsals", f.Env, "state_restore_median", seconds(f.TimeToRestore.Median), "seconds"})
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
