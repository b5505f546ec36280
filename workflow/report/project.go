package report

import "github.com/relcap/relcap/workflow"

// DefaultProdEnv is the production environment a report assumes when no
// relcap.yaml names the promotion order.
const DefaultProdEnv = "prod"

// UseProject takes what a report reads from the project: its production
// environment (the last of the promotion order) and, unless the baseline
// was given on the command line (baselineGiven), the baseline of its
// relcap.yaml. An Env the project does not name is an error.
func (o *Options) UseProject(p *workflow.Project, baselineGiven bool) error {
	if !baselineGiven {
		o.BaselineHoursPerRelease = p.Effort.BaselineHoursPerRelease
		o.BaselineSource = "effort.baseline_hours_per_release in " + p.File
	}
	if p.Effort.ReleasesPerMonth > 0 {
		o.ReleasesPerMonth = p.Effort.ReleasesPerMonth
		o.RateSource = "effort.releases_per_month in " + p.File
	}
	if prod := p.ProdEnv(); prod != "" {
		o.ProdEnv = prod
	}
	if o.Env != "" {
		if _, err := p.Env(o.Env); err != nil {
			return err
		}
	}
	return nil
}
