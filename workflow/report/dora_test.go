package report_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/reportfmt"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/report/reporttest"
)

// doraLedger is four weeks of January in production (and one staging
// release), with deployments, a hotfix by break-glass, a rollback, failed
// applies, releases that never reached production and one outside the
// period. Every figure TestDORAMeasuresMatchHandComputedFigures expects is
// worked out by hand in its comments.
func doraLedger(t *testing.T) (report.Data, report.Options) {
	t.Helper()
	// at(d, h, m) is 2026-01-d h:m UTC.
	at := func(d, h, m int) time.Time { return time.Date(2026, 1, d, h, m, 0, 0, time.UTC) }
	converged := func(id, env string, kind workflow.ReleaseKind, created, ended time.Time) report.ReleaseFact {
		f := reporttest.ReleaseAt(id, created)
		f.Env, f.Kind, f.UpdatedAt, f.EndedAt = env, kind, ended, ended
		return f
	}
	a, b := reporttest.DigestOf(t, "a"), reporttest.DigestOf(t, "b")

	s1 := converged("s1", "staging", workflow.KindRelease, at(1, 8, 0), at(1, 9, 0))
	p1 := converged("p1", "prod", workflow.KindPromotion, at(2, 10, 0), at(2, 11, 0))
	p2 := converged("p2", "prod", workflow.KindRelease, at(5, 9, 0), at(5, 10, 0))
	b1 := converged("b1", "prod", workflow.KindBreakGlass, at(5, 14, 0), at(5, 15, 0))
	b1.Status = workflow.ReleaseEnded
	p3 := reporttest.ReleaseAt("p3", at(8, 9, 0))
	p3.Status, p3.UpdatedAt, p3.EndedAt = workflow.ReleaseRolledBack, at(8, 12, 0), time.Time{}
	rb1 := converged("rb1", "prod", workflow.KindRollback, at(8, 12, 0), at(8, 12, 30))
	rb1.RollbackOf = "p3"
	p4 := reporttest.ReleaseAt("p4", at(12, 9, 0))
	p4.Status, p4.UpdatedAt, p4.EndedAt = workflow.ReleaseFailed, at(12, 9, 20), time.Time{}
	p4.Steps = []report.StepTime{{Kind: workflow.StepApply, Status: workflow.Failed, EndedAt: at(12, 9, 20)}}
	p5 := converged("p5", "prod", workflow.KindRelease, at(13, 9, 0), at(13, 10, 0))
	p6 := reporttest.ReleaseAt("p6", at(15, 9, 0)) // failed at plan review: never deployed
	p6.Status, p6.UpdatedAt, p6.EndedAt = workflow.ReleaseFailed, at(15, 9, 5), time.Time{}
	p6.Steps = []report.StepTime{{Kind: workflow.StepPlanReview, Status: workflow.Failed, EndedAt: at(15, 9, 5)}}
	p7 := reporttest.ReleaseAt("p7", at(20, 9, 0)) // abandoned: never deployed
	p7.Status, p7.UpdatedAt, p7.EndedAt = workflow.ReleaseInProgress, at(20, 9, 30), time.Time{}
	p8 := reporttest.ReleaseAt("p8", at(22, 9, 0)) // failed, no step says where: counted as deployed
	p8.Status, p8.UpdatedAt, p8.EndedAt = workflow.ReleaseFailed, at(22, 10, 0), time.Time{}
	b2 := reporttest.ReleaseAt("b2", at(25, 9, 0)) // break-glass still open
	b2.Kind, b2.Status, b2.EndedAt = workflow.KindBreakGlass, workflow.ReleaseInProgress, time.Time{}
	p9 := converged("p9", "prod", workflow.KindRelease, at(27, 9, 0), at(27, 9, 40))
	late := converged("late", "prod", workflow.KindRelease, time.Date(2026, 2, 2, 9, 0, 0, 0, time.UTC), time.Date(2026, 2, 2, 10, 0, 0, 0, time.UTC))

	data := report.Data{
		Releases: []report.ReleaseFact{s1, p1, p2, b1, p3, rb1, p4, p5, p6, p7, p8, b2, p9, late},
		Convergences: []workflow.ConvergenceRecord{
			{ReleaseID: "s1", App: "web", Env: "staging", Digest: a, At: at(1, 9, 0)},
			{ReleaseID: "p1", App: "web", Env: "prod", Digest: a, At: at(2, 11, 0)},
			// Argo CD converged production again after p8, with no release.
			{App: "web", Env: "prod", Digest: b, At: at(23, 8, 0)},
		},
	}
	return data, report.Options{From: at(1, 0, 0), To: at(29, 0, 0), Now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), ProdEnv: "prod"}
}

func TestDORAMeasuresMatchHandComputedFigures(t *testing.T) {
	t.Parallel()
	rep, err := report.BuildMeasures(doraLedger(t))
	require.NoError(t, err)
	d := rep.DORA
	require.Equal(t, "prod", d.ProdEnv)

	// Deployments created in the period: p1, p2, p3, rb1, p4, p5, p8, p9.
	// p6 failed at plan review and p7 was abandoned: not deployments.
	require.Equal(t, 2, d.NotDeployed)
	// 8 deployments over 28 days: 2 a week.
	require.Equal(t, report.DeploymentFrequency{Deployments: 8, PeriodDays: 28, PerWeek: 2}, d.DeploymentFrequency)

	// Change fail rate: p2 hotfixed (b1 followed it), p3 rolled back, p4
	// failed at apply, p8 failed: 4 of 8.
	require.Equal(t, report.ChangeFailRate{Deployments: 8, Failures: 4, RolledBack: 1, Hotfixed: 1, FailedConvergence: 2, Rate: 0.5}, d.ChangeFailRate)

	// Recovery: p2 hotfix started 5th 14:00 → b1 ended 15:00 = 1h; p3
	// rollback started 8th 12:00 → rb1 converged 12:30 = 30m; p4 apply
	// failed 12th 09:20 → p5 converged 13th 10:00 = 24h40m; p8 failed
	// (last update) 22nd 10:00 → Argo CD converged 23rd 08:00 = 22h.
	// Sorted 30m, 1h, 22h, 24h40m: median rank 2, p90 rank 4.
	require.Equal(t, report.Stats{Count: 4, Median: report.Duration(time.Hour), P90: report.Duration(24*time.Hour + 40*time.Minute),
		Max: report.Duration(24*time.Hour + 40*time.Minute), Total: report.Duration(48*time.Hour + 10*time.Minute)}, d.FailedDeploymentRecoveryTime)
	require.Zero(t, d.Unrecovered)

	// Lead time, converged releases and promotions: p1 from s1's creation
	// (same digest) 1st 08:00 → 2nd 11:00 = 27h; p2 1h; p5 1h; p9 40m.
	// rb1 is a rollback: no new change. Sorted 40m, 1h, 1h, 27h.
	require.Equal(t, report.Stats{Count: 4, Median: report.Duration(time.Hour), P90: report.Duration(27 * time.Hour),
		Max: report.Duration(27 * time.Hour), Total: report.Duration(29*time.Hour + 40*time.Minute)}, d.ChangeLeadTime)

	// Rework: rb1, b1 and b2 were made because of an incident: 3 of the 8
	// deployments plus 2 break-glass sessions.
	require.Equal(t, report.ReworkRate{Deployments: 10, Unplanned: 3, Rollbacks: 1, BreakGlass: 2, Rate: 0.3}, d.DeploymentReworkRate)

	var out strings.Builder
	require.NoError(t, reportfmt.Write(&out, reportfmt.Measures(rep), reportfmt.FormatTable))
	table := out.String()
	require.Contains(t, table, "DORA measures (production: prod)")
	for _, re := range []string{
		`change lead time\s+median 1h00m, p90 27h00m\s+4 converged deployment\(s\) of a change`,
		`deployment frequency\s+2 per week\s+8 deployment\(s\) in 28 day\(s\)`,
		`change fail rate\s+50\.0%\s+4 of 8: rolled back 1, hotfixed 1, failed 2`,
		`failed deployment recovery time\s+median 1h00m, p90 24h40m\s+4 recovered, 0 not yet`,
		`deployment rework rate\s+30\.0%\s+3 of 10: rollbacks 1, break-glass 2`,
	} {
		require.Regexp(t, re, table)
	}
	for _, def := range report.DORADefinitions {
		require.Contains(t, table, def)
	}
	require.Contains(t, table, "Drift age", "relcap's own measures stay")
	require.Contains(t, table, "Ownership conflicts per week")

	rows := reportfmt.Rows(reportfmt.Measures(rep))
	require.Contains(t, rows, reportfmt.Row{Section: "dora", Key: "change_fail_rate", Metric: "rate", Value: "0.5", Unit: "ratio"})
	require.Contains(t, rows, reportfmt.Row{Section: "dora", Key: "deployment_rework_rate", Metric: "rate", Value: "0.3", Unit: "ratio"})
	require.Contains(t, rows, reportfmt.Row{Section: "dora", Key: "deployment_frequency", Metric: "per_week", Value: "2", Unit: "per_week"})
	require.Contains(t, rows, reportfmt.Row{Section: "dora", Key: "failed_deployment_recovery_time", Metric: "median", Value: "60", Unit: "minutes"})
}
