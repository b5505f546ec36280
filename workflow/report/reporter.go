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

// Effort builds the effort report relcap report effort prints with no
// flags: the same default period (ParsePeriod), baseline and production
// environment (UseProject), in UTC, so the cockpit's effort screen and the
// command never disagree on a figure.
func (r Reporter) Effort(ctx context.Context) (*Effort, error) {
	now := r.Clock.Now()
	from, to, err := ParsePeriod("", "", time.UTC, now)
	if err != nil {
		return nil, err
	}
	o := Options{From: from, To: to, Location: time.UTC, Now: now, ProdEnv: DefaultProdEnv}
	if err := o.UseProject(r.Project, false); err != nil {
		return nil, err
	}
	data, err := r.Source.ReportData(ctx, Query{App: r.Project.App, From: from, To: to, EffortOnly: true})
	if err != nil {
		return nil, err
	}
	return BuildEffort(data, o)
}
