package workflow

import (
	"context"
	"errors"
	"time"
)

// Release returns a stored release; UIs read releases through the Service.
func (s *Service) Release(ctx context.Context, id string) (*Release, error) {
	return s.d.Ledger.LoadRelease(ctx, id)
}

// Plan returns a reviewed plan by fingerprint.
func (s *Service) Plan(ctx context.Context, fingerprint string) (PlanSummary, error) {
	return s.d.Ledger.LoadPlan(ctx, fingerprint)
}

// PlanApprovals counts the approvals of a plan against its environment's
// policy, as apply will.
func (s *Service) PlanApprovals(ctx context.Context, p PlanSummary) (ApprovalCheck, error) {
	env, err := s.d.Project.Env(p.Env)
	if err != nil {
		return ApprovalCheck{}, err
	}
	all, err := s.d.Ledger.Approvals(ctx, ApprovePlan, p.Fingerprint)
	if err != nil {
		return ApprovalCheck{}, err
	}
	return CountApprovals(ApprovePlan, p.Fingerprint, p.Author, env.Approvals.Plan, env.Approvals.DistinctFromAuthor, all), nil
}

// Effort returns the effort recorded against a release.
func (s *Service) Effort(ctx context.Context, releaseID string) ([]EffortEntry, error) {
	return s.d.Ledger.Effort(ctx, releaseID)
}

// Project is the loaded configuration the Service runs.
func (s *Service) Project() *Project { return s.d.Project }

// Actor is who this Service acts as.
func (s *Service) Actor() string { return s.d.Actor }

// Touch records that the actor is engaged with step of a release, for the
// effort clock of a UI that sees keystrokes: call it on input and focus.
// The time is flushed to the ledger by FlushEffort.
func (s *Service) Touch(releaseID, role string, step StepKind) {
	s.uiEffort(releaseID).Touch(s.d.Actor, role, step.String())
}

// FlushEffort stores the effort measured by Touch so far.
func (s *Service) FlushEffort(ctx context.Context, releaseID string) error {
	entries := s.uiEffort(releaseID).Drain()
	if len(entries) == 0 {
		return nil
	}
	return s.d.Ledger.RecordEffort(ctx, entries)
}

// uiEffort is the effort clock UIs feed for a release.
func (s *Service) uiEffort(releaseID string) *EffortClock {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clocks == nil {
		s.clocks = map[string]*EffortClock{}
	}
	c, ok := s.clocks[releaseID]
	if !ok {
		c = NewEffortClock(s.d.Clock, s.d.Project.Effort.IdleThreshold, releaseID)
		s.clocks[releaseID] = c
	}
	return c
}

// EffortReport builds the effort report of the project's releases created
// in the window up to now (by the Service's clock), as relcap report effort
// does, for the cockpit's effort screen. The ledger must be able to report
// (ReportSource).
func (s *Service) EffortReport(ctx context.Context, window time.Duration) (*EffortReport, error) {
	// To is exclusive: a release created this very instant belongs in.
	to := s.d.Clock.Now().Add(time.Nanosecond)
	from := to.Add(-window)
	src, ok := s.d.Ledger.(ReportSource)
	if !ok {
		return nil, errors.New("this ledger cannot produce reports")
	}
	data, err := src.ReportData(ctx, ReportQuery{App: s.d.Project.App, From: from, To: to, EffortOnly: true})
	if err != nil {
		return nil, err
	}
	prod := ""
	if n := len(s.d.Project.Environments); n > 0 {
		prod = s.d.Project.Environments[n-1].Name
	}
	return BuildEffortReport(data, ReportOptions{From: from, To: to, Now: s.d.Clock.Now(),
		BaselineHoursPerRelease: s.d.Project.Effort.BaselineHoursPerRelease, ProdEnv: prod})
}
