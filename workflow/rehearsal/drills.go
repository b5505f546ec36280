package rehearsal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// DrillsRequest runs drills in order in one environment: one named
// drill, or all of them (--all).
type DrillsRequest struct {
	Env    string
	Drills []Drill
	// All: a drill that cannot run here, or is refused before it changed
	// anything, is skipped and the others still run.
	All     bool
	IKnow   string
	Timeout time.Duration
	// Skipped hears of each drill skipped, as it is skipped.
	Skipped func(DrillSkipped)
}

// DrillSkipped is a drill of an --all run that did not run (How "not
// run": not configured here) or was refused before it changed anything
// (How "refused").
type DrillSkipped struct {
	Drill Drill
	Env   string
	How   string
	Err   error
}

// RehearseDrills runs the requested drills and returns their records; runErr
// is what stopped a drill (the run stops there), notRun what was skipped.
func (s *Service) RehearseDrills(ctx context.Context, req DrillsRequest, sink workflow.EventSink) (records []*Rehearsal, runErr, notRun error) {
	for _, d := range req.Drills {
		rh, err := s.Rehearse(ctx, Request{Env: req.Env, Drill: d, IKnow: req.IKnow, Timeout: req.Timeout}, sink)
		records = Append(records, rh)
		if err == nil {
			continue
		}
		skip := DrillSkipped{Drill: d, Env: req.Env, Err: err}
		switch {
		case req.All && rh == nil && errors.Is(err, fault.ErrUsage):
			// Not runnable here (not configured): said, and counted
			// against the run, but the other drills still run.
			skip.How = "not run"
		case req.All && rh != nil && rh.State == StateAbandoned && errors.Is(err, fault.ErrBlocked):
			// Refused before it changed anything (failed-apply on a root
			// with pending changes): it left nothing behind, so the
			// other drills still run.
			skip.How = "refused"
		default:
			return records, err, notRun
		}
		if req.Skipped != nil {
			req.Skipped(skip)
		}
		notRun = errors.Join(notRun, fmt.Errorf("%s %s: %w", d, skip.How, err))
	}
	return records, nil, notRun
}

// Append appends rh to rs when there is one.
func Append(rs []*Rehearsal, rh *Rehearsal) []*Rehearsal {
	if rh == nil {
		return rs
	}
	return append(rs, rh)
}

// Outcome is nil when every drill passed, else an error for the
// exit code: a failed drill is "not converged" (4), an abandoned one
// blocked (3).
func Outcome(rs []*Rehearsal) error {
	var failed, abandoned []string
	for _, rh := range rs {
		switch rh.State {
		case StateFailed:
			failed = append(failed, fmt.Sprintf("%s (%s): %s", rh.Drill, rh.ID, rh.Failure))
		case StateAbandoned:
			abandoned = append(abandoned, fmt.Sprintf("%s (%s)", rh.Drill, rh.ID))
		}
	}
	switch {
	case len(failed) > 0:
		return fmt.Errorf("%w: drill failed: %s", fault.ErrNotConverged, strings.Join(failed, "; "))
	case len(abandoned) > 0:
		return fmt.Errorf("%w: rehearsal abandoned, so it proves nothing: %s", fault.ErrBlocked, strings.Join(abandoned, ", "))
	}
	return nil
}

// WatchTimeout is the convergence watch's bound for a rehearsal in p:
// the phase timeout given, else the longest phase of any environment, so
// that the phase's bound is what ends a drill that is not detected.
func WatchTimeout(p *workflow.Project, phase time.Duration) time.Duration {
	if phase != 0 {
		return phase
	}
	for _, e := range p.Environments {
		phase = max(phase, e.Rehearsal.PhaseTimeout())
	}
	return phase
}
