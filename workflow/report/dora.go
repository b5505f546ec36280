package report

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/image"
)

// DORA is the five software delivery measures as DORA defines them today
// (change lead time, deployment frequency, failed deployment recovery
// time, change fail rate, deployment rework rate), computed from what the
// ledger knows of production deployments. DORADefinitions says, in the
// words the report's help prints, exactly which records count.
//
// A production deployment is a release record (release, promotion or
// rollback) in the production environment, created in the period, that
// reached production: it converged, was rolled back, or failed at apply
// or convergence (a failed release with no failed step recorded counts
// too, rather than be left out). Releases that failed before apply,
// stalled, were abandoned or are still running changed nothing in
// production; they are
// counted in NotDeployed.
type DORA struct {
	ProdEnv string `json:"prod_env"`
	// ChangeLeadTime: for converged deployments of a change (releases and
	// promotions, not rollbacks), the first release record of the change
	// (its digest, in any environment) created → converged in production.
	ChangeLeadTime      Stats               `json:"change_lead_time"`
	DeploymentFrequency DeploymentFrequency `json:"deployment_frequency"`
	ChangeFailRate      ChangeFailRate      `json:"change_fail_rate"`
	// FailedDeploymentRecoveryTime: for each failed deployment (those
	// ChangeFailRate counts), when it failed → when production was next
	// converged by another release, a break-glass session ended, or Argo CD
	// recorded a convergence of the app there. Unrecovered counts failed
	// deployments with none of these yet.
	FailedDeploymentRecoveryTime Stats      `json:"failed_deployment_recovery_time"`
	Unrecovered                  int        `json:"failed_deployments_unrecovered"`
	DeploymentReworkRate         ReworkRate `json:"deployment_rework_rate"`
	// NotDeployed counts production release records of the period that
	// are not deployments: failed before apply, abandoned, in progress.
	NotDeployed int `json:"not_deployed"`
}

// DeploymentFrequency is how often production was deployed: Deployments
// over the period's length in days (up to the report's Now), and per week.
type DeploymentFrequency struct {
	Deployments int     `json:"deployments"`
	PeriodDays  float64 `json:"period_days"`
	PerWeek     float64 `json:"per_week"`
}

// ChangeFailRate is Failures ÷ Deployments: deployments that needed
// remediation. RolledBack: rolled back by relcap rollback; Hotfixed:
// converged, then a break-glass session in production followed it before
// the next deployment; FailedConvergence: failed at apply or convergence.
type ChangeFailRate struct {
	Deployments       int     `json:"deployments"`
	Failures          int     `json:"failures"`
	RolledBack        int     `json:"rolled_back"`
	Hotfixed          int     `json:"hotfixed"`
	FailedConvergence int     `json:"failed_convergence"`
	Rate              float64 `json:"rate"`
}

// ReworkRate is Unplanned ÷ Deployments, where Deployments are the
// production deployments plus the break-glass sessions in production, and
// Unplanned are the rollbacks among the deployments plus those break-glass
// sessions: deployments made because of a production incident.
type ReworkRate struct {
	Deployments int     `json:"deployments"`
	Unplanned   int     `json:"unplanned"`
	Rollbacks   int     `json:"rollbacks"`
	BreakGlass  int     `json:"break_glass"`
	Rate        float64 `json:"rate"`
}

// DORADefinitions are the five measures' definitions, for the report's
// help and its Definitions table: one text, so they never disagree.
var DORADefinitions = []string{
	"production deployment: a release, promotion or rollback in the production environment, created in the period, that converged, was rolled back, or failed at apply or convergence; failed before apply, abandoned or still running is not a deployment",
	"change lead time: relcap does not see commits; it measures from the first release record of the change (the same digest, in any environment the period's ledger holds) to its convergence in production, for converged releases and promotions (rollbacks deploy no new change)",
	"deployment frequency: production deployments ÷ the period's length in weeks (up to now)",
	"change fail rate: deployments that needed remediation ÷ deployments; remediation is a rollback of it, a failure at apply or convergence, or a hotfix (a break-glass session in production after it converged and before the next deployment)",
	"failed deployment recovery time: from a failed deployment (the rollback's start, the failed step's end, or the hotfix's break-glass start) to the next time production converged: another release converged, a break-glass session ended, or Argo CD recorded a convergence of the app; not from any incident",
	"deployment rework rate: unplanned deployments ÷ (deployments + break-glass sessions in production); unplanned are the relcap rollback records among the deployments and the break-glass records in production created in the period, because each is made only in answer to a production incident; a fix shipped as an ordinary release cannot be told from planned work and is not counted",
}

// deployedFailure reports whether a failed release reached production:
// its first failed step is apply or convergence, or no step says.
func deployedFailure(f ReleaseFact) bool {
	var first *StepTime
	for i := range f.Steps {
		s := &f.Steps[i]
		if s.Status != workflow.Failed && s.Status != workflow.Blocked {
			continue
		}
		if first == nil || (!s.EndedAt.IsZero() && (first.EndedAt.IsZero() || s.EndedAt.Before(first.EndedAt))) {
			first = s
		}
	}
	return first == nil || first.Kind == workflow.StepApply || first.Kind == workflow.StepConvergence
}

// buildDORA computes the five measures of the production environment prod
// over releases created in [o.From, o.To).
func buildDORA(data Data, o Options, prod string) DORA {
	rep := DORA{ProdEnv: prod}
	byID := make(map[string]int, len(data.Releases)) // index in data.Releases
	var prodReleases, breakGlass []ReleaseFact
	for i, f := range data.Releases {
		if _, dup := byID[f.ID]; dup {
			continue
		}
		byID[f.ID] = i
		if f.Env != prod {
			continue
		}
		switch {
		case f.Kind == workflow.KindBreakGlass:
			breakGlass = append(breakGlass, f)
		case Counted(f):
			prodReleases = append(prodReleases, f)
		}
	}
	byCreation := func(a, b ReleaseFact) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	}
	slices.SortFunc(prodReleases, byCreation)
	slices.SortFunc(breakGlass, byCreation)
	// rolledBackBy: a rollback names the release it undid.
	rolledBackBy := map[string]ReleaseFact{}
	for _, f := range data.Releases {
		if f.Kind == workflow.KindRollback && f.RollbackOf != "" {
			if prev, ok := rolledBackBy[f.RollbackOf]; !ok || f.CreatedAt.Before(prev.CreatedAt) {
				rolledBackBy[f.RollbackOf] = f
			}
		}
	}

	// Deployments, in creation order per app, so "the next deployment"
	// and "the deployment a break-glass session followed" are neighbours.
	type deployment struct {
		f       ReleaseFact
		outcome ReleaseOutcome
	}
	var deps []deployment
	for _, f := range prodReleases {
		out := OutcomeOf(f, o.Now, o.abandonAfter())
		switch {
		case out == OutcomeSucceeded || out == OutcomeRolledBack:
		case out == OutcomeFailed && deployedFailure(f):
		default:
			if in(f.CreatedAt, o.From, o.To) {
				rep.NotDeployed++
			}
			continue
		}
		deps = append(deps, deployment{f, out})
	}

	// The deployment each break-glass session followed: the app's last
	// deployment created before it. If that one converged, the session
	// hotfixed it.
	hotfix := map[string]time.Time{}        // release ID → break-glass start
	depsByApp := map[string][]*deployment{} // in creation order, as deps
	for i := range deps {
		depsByApp[deps[i].f.App] = append(depsByApp[deps[i].f.App], &deps[i])
	}
	for _, b := range breakGlass {
		var last *deployment
		ds := depsByApp[b.App]
		// The first created at or after b; the one before it is the last
		// created before b.
		if i, _ := slices.BinarySearchFunc(ds, b.CreatedAt, func(d *deployment, t time.Time) int { return d.f.CreatedAt.Compare(t) }); i > 0 {
			last = ds[i-1]
		}
		if last != nil && last.outcome == OutcomeSucceeded {
			if _, rolled := rolledBackBy[last.f.ID]; !rolled {
				if t, ok := hotfix[last.f.ID]; !ok || b.CreatedAt.Before(t) {
					hotfix[last.f.ID] = b.CreatedAt
				}
			}
		}
		if in(b.CreatedAt, o.From, o.To) {
			rep.DeploymentReworkRate.BreakGlass++
		}
	}

	// Recoveries: when production of an app converged, other than by the
	// failed deployment itself.
	type recovery struct {
		at        time.Time
		releaseID string
	}
	recoveries := map[string][]recovery{} // by app
	for _, f := range prodReleases {
		if OutcomeOf(f, o.Now, o.abandonAfter()) == OutcomeSucceeded && !f.EndedAt.IsZero() {
			recoveries[f.App] = append(recoveries[f.App], recovery{f.EndedAt, f.ID})
		}
	}
	for _, b := range breakGlass {
		if b.Status == workflow.ReleaseEnded && !b.EndedAt.IsZero() {
			recoveries[b.App] = append(recoveries[b.App], recovery{b.EndedAt, b.ID})
		}
	}
	for _, c := range data.Convergences {
		if c.Env == prod {
			recoveries[c.App] = append(recoveries[c.App], recovery{c.At, c.ReleaseID})
		}
	}
	// Sorted, so each failure finds its recovery by binary search: a scan
	// per failure is quadratic on a large ledger.
	for _, rs := range recoveries {
		slices.SortFunc(rs, func(a, b recovery) int { return a.at.Compare(b.at) })
	}
	recoveredAt := func(f ReleaseFact, failed time.Time) (time.Time, bool) {
		rs := recoveries[f.App]
		i, _ := slices.BinarySearchFunc(rs, failed, func(r recovery, t time.Time) int { return r.at.Compare(t) })
		for ; i < len(rs); i++ {
			if rs[i].releaseID != f.ID {
				return rs[i].at, true
			}
		}
		return time.Time{}, false
	}

	// The first release record of each change: releases by the digest
	// their convergences carry.
	digestOf := map[string]image.Digest{}
	for _, c := range data.Convergences {
		if _, ok := digestOf[c.ReleaseID]; !ok && c.ReleaseID != "" && !c.Digest.IsZero() {
			digestOf[c.ReleaseID] = c.Digest
		}
	}
	firstOfChange := map[image.Digest]time.Time{}
	for id, d := range digestOf {
		if i, ok := byID[id]; ok && Counted(data.Releases[i]) {
			f := data.Releases[i]
			if t, seen := firstOfChange[d]; !seen || f.CreatedAt.Before(t) {
				firstOfChange[d] = f.CreatedAt
			}
		}
	}

	var lead, recover []time.Duration
	cfr := &rep.ChangeFailRate
	for _, d := range deps {
		f := d.f
		if !in(f.CreatedAt, o.From, o.To) {
			continue
		}
		cfr.Deployments++
		if f.Kind == workflow.KindRollback {
			rep.DeploymentReworkRate.Rollbacks++
		}
		var failedAt time.Time
		rb, rolled := rolledBackBy[f.ID]
		switch {
		case d.outcome == OutcomeRolledBack || rolled:
			cfr.RolledBack++
			failedAt = FailureDetectedAt(f)
			if rolled {
				failedAt = rb.CreatedAt
			}
		case d.outcome == OutcomeFailed:
			cfr.FailedConvergence++
			failedAt = FailureDetectedAt(f)
		default:
			if t, ok := hotfix[f.ID]; ok {
				cfr.Hotfixed++
				failedAt = t
			}
		}
		if !failedAt.IsZero() {
			cfr.Failures++
			if at, ok := recoveredAt(f, failedAt); ok {
				recover = append(recover, at.Sub(failedAt))
			} else {
				rep.Unrecovered++
			}
		}
		if d.outcome == OutcomeSucceeded && f.Kind != workflow.KindRollback && !f.EndedAt.IsZero() {
			start := f.CreatedAt
			if dg, known := digestOf[f.ID]; known {
				if t, ok := firstOfChange[dg]; ok && t.Before(start) {
					start = t
				}
			}
			lead = append(lead, f.EndedAt.Sub(start))
		}
	}
	if cfr.Deployments > 0 {
		cfr.Rate = float64(cfr.Failures) / float64(cfr.Deployments)
	}
	rep.ChangeLeadTime = NewStats(lead)
	rep.FailedDeploymentRecoveryTime = NewStats(recover)

	end := o.To
	if !o.Now.IsZero() && o.Now.Before(end) && o.Now.After(o.From) {
		end = o.Now
	}
	df := &rep.DeploymentFrequency
	df.Deployments = cfr.Deployments
	df.PeriodDays = end.Sub(o.From).Hours() / 24
	if df.PeriodDays > 0 {
		df.PerWeek = float64(df.Deployments) / (df.PeriodDays / 7)
	}

	rw := &rep.DeploymentReworkRate
	rw.Deployments = cfr.Deployments + rw.BreakGlass
	rw.Unplanned = rw.Rollbacks + rw.BreakGlass
	if rw.Deployments > 0 {
		rw.Rate = float64(rw.Unplanned) / float64(rw.Deployments)
	}
	return rep
}
