package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/reportfmt"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/report/reporttest"
)

// drill is a rehearsal that started at start, was detected after ttd and
// recovered ttr later, ending in state.
func drill(env string, d rehearsal.Drill, state rehearsal.State, start time.Time, ttd, ttr time.Duration) rehearsal.Rehearsal {
	r := rehearsal.Rehearsal{ID: "rh-" + env + "-" + start.Format("0102150405"), App: "web", Env: env, Drill: d, State: state,
		StartedAt: start, InjectedAt: start.Add(10 * time.Second)}
	if ttd > 0 {
		r.DetectedAt = r.InjectedAt.Add(ttd)
	}
	if ttr > 0 {
		r.RecoveredAt = r.DetectedAt.Add(ttr)
	}
	r.FinishedAt = start.Add(10*time.Second + ttd + ttr + time.Second)
	return r
}

func TestMeasuresRehearsalFigures(t *testing.T) {
	t.Parallel()
	jan := reporttest.Jan1
	data := report.Data{Rehearsals: []rehearsal.Rehearsal{
		// December: before the period; only its pass counts, for freshness.
		drill("staging", rehearsal.DrillFailedReadiness, rehearsal.StatePassed, jan.AddDate(0, 0, -20), 30*time.Second, time.Minute),
		drill("staging", rehearsal.DrillUnavailableImage, rehearsal.StatePassed, jan.AddDate(0, 0, 2), 10*time.Second, 40*time.Second),
		drill("staging", rehearsal.DrillUnavailableImage, rehearsal.StatePassed, jan.AddDate(0, 0, 5), 20*time.Second, 60*time.Second),
		drill("staging", rehearsal.DrillUnavailableImage, rehearsal.StateFailed, jan.AddDate(0, 0, 9), 90*time.Second, 80*time.Second),
		drill("staging", rehearsal.DrillInterruptedReconc, rehearsal.StateAbandoned, jan.AddDate(0, 0, 10), 0, 0),
		drill("prod", rehearsal.DrillUnavailableImage, rehearsal.StatePassed, jan.AddDate(0, 0, 20), 12*time.Second, 30*time.Second),
		// After the period's end: not in this report at all.
		drill("staging", rehearsal.DrillFailedReadiness, rehearsal.StatePassed, jan.AddDate(0, 2, 0), time.Second, time.Second),
	}}
	now := jan.AddDate(0, 1, 0) // Feb 1
	m, err := report.BuildMeasures(data, report.Options{From: jan, To: jan.AddDate(0, 1, 0), Now: now})
	require.NoError(t, err)
	require.False(t, m.Empty)
	require.Len(t, m.Rehearsals, 2)
	prod, staging := m.Rehearsals[0], m.Rehearsals[1]
	require.Equal(t, "prod", prod.Env)
	require.Equal(t, "staging", staging.Env)

	require.Equal(t, 4, staging.Run)
	require.Equal(t, 2, staging.Passed)
	require.Equal(t, 1, staging.Failed)
	require.Equal(t, 1, staging.Abandoned)
	require.Equal(t, 3, staging.TimeToDetect.Count, "the abandoned drill was never detected")
	require.Equal(t, 20*time.Second, staging.TimeToDetect.Median.D(), "median of 10s, 20s, 90s")
	require.Equal(t, 60*time.Second, staging.TimeToRecover.Median.D(), "median of 40s, 60s, 80s")

	days := map[rehearsal.Drill]int{}
	for _, d := range staging.Drills {
		days[d.Drill] = d.DaysSince
	}
	require.Equal(t, map[rehearsal.Drill]int{
		rehearsal.DrillFailedApply:       -1, // never
		rehearsal.DrillStateRestore:      -1,
		rehearsal.DrillUnavailableImage:  25, // passed Jan 6 00:01:21; Feb 1 is 25 whole days later
		rehearsal.DrillFailedReadiness:   50, // passed Dec 12, before the period
		rehearsal.DrillInterruptedReconc: -1, // abandoned, never passed
	}, days)

	var buf bytes.Buffer
	require.NoError(t, reportfmt.Write(&buf, reportfmt.Measures(m), reportfmt.FormatTable))
	text := buf.String()
	require.Contains(t, text, "Recovery rehearsals")
	require.Regexp(t, `staging\s+4\s+2\s+1\s+1\s+20s\s+1m0s`, text)
	require.Regexp(t, `staging\s+failed-apply\s+never\s+never`, text)
	require.Regexp(t, `staging\s+unavailable-image\s+2026-01-06 00:01\s+25`, text)

	buf.Reset()
	require.NoError(t, reportfmt.Write(&buf, reportfmt.Measures(m), reportfmt.FormatCSV))
	csv := buf.String()
	require.Contains(t, csv, "rehearsals,staging,run,4,count\n")
	require.Contains(t, csv, "rehearsals,staging,detect_median,20,seconds\n")
	require.Contains(t, csv, "rehearsals,staging/failed-apply,days_since_passed,never,days\n")
	require.Contains(t, csv, "rehearsals,prod/unavailable-image,days_since_passed,10,days\n")

	for _, f := range []reportfmt.Format{reportfmt.FormatMarkdown, reportfmt.FormatHTML, reportfmt.FormatJSON} {
		buf.Reset()
		require.NoError(t, reportfmt.Write(&buf, reportfmt.Measures(m), f))
		require.True(t, strings.Contains(buf.String(), "unavailable-image"), "format %v shows the drills", f)
	}
}
