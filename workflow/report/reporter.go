package report

import (
	"context"
	"time"

	"github.com/relcap/relcap/workflow"
)

// Reporter builds reports of one project from its ledger, as relcap report
// does, for the cockpit's effort screen.
type Reporter struct {
	Project *workflow.Project
	Source  Source
	Clock   workflow.Clock
}

// Effort builds the effort report of the project's releases created in the
// window up to now (by the Reporter's clock).
func (r Reporter) Effort(ctx context.Context, window time.Duration) (*Effort, error) {
	// To is exclusive: a release created this very instant belongs in.
	now := r.Clock.Now()
	to := now.Add(time.Nanosecond)
	from := to.Add(-window)
	data, err := r.Source.ReportData(ctx, Query{App: r.Project.App, From: from, To: to, EffortOnly: true})
	if err != nil {
		return nil, err
	}
	return BuildEffort(data, Options{From: from, To: to, Now: now,
		BaselineHoursPerRelease: r.Project.Effort.BaselineHoursPerRelease, BaselineSource: "relcap.yaml effort.baseline_hours_per_release",
		ProdEnv: r.Project.ProdEnv()})
}
