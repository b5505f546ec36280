package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/relcap/relcap/workflow/finding"
)

// The evidence stage: Argo CD Synced at the intended revision, Healthy and
// running the promoted digest, judged by Converged (convergence.go) over
// the watch of wait.go; a failure is named with the next safe action.

func (run *releaseRun) converge(ctx context.Context) (StepResult, error) {
	d := run.svc.d
	if d.Convergence == nil {
		return StepResult{}, missingPort("convergence")
	}
	digest := run.r.Checkpoints.Digest
	if digest.IsZero() {
		return StepResult{}, &TerminalError{Err: errors.New("no promoted digest to watch for")}
	}
	want := Want{Revision: run.r.Checkpoints.EnvCommit, Digest: digest}
	app := run.env.AppRef()
	run.effort.BeginWait(StepConvergence.String())
	defer run.effort.EndWait(StepConvergence.String())

	var evidence []Evidence
	if run.r.Kind == KindRollback {
		ev, err := run.endFailingSync(ctx, app, want)
		if err != nil {
			return StepResult{}, err
		}
		evidence = append(evidence, ev...)
	}
	st, v, err := run.svc.watch(run.env, func(s AppState) {
		run.sink(Event{Time: d.Clock.Now(), Kind: EventAppState, ReleaseID: run.r.ID, Step: StepConvergence, Status: Running, App: &s})
	}).Wait(ctx, app, want)
	converged := AppConverged{IntendedRevision: want.Revision, Digest: digest, Sync: st.SyncStatus, Revision: st.SyncRevision, Health: st.Health}
	switch verr := run.svc.verdictError(app.Name, v, err); {
	case errors.Is(err, ErrWatchTimedOut):
		return StepResult{}, &TerminalError{Err: verr}
	case err != nil:
		return StepResult{}, verr
	case verr != nil:
		failed := AppNotConverged{Verdict: v.Kind, Reason: v.Reason, IntendedRevision: want.Revision, Digest: digest, Images: st.Images,
			Sync: st.SyncStatus, Revision: st.SyncRevision, Health: st.Health, NextAction: v.NextAction}
		f := finding.Finding{Severity: finding.Blocker, Code: v.Kind.FindingCode(), Subject: app.Name, Message: v.Reason, NextAction: v.NextAction, Facts: converged.Facts()}
		return StepResult{Findings: []finding.Finding{f}, Evidence: []Evidence{NewEvidence(app.Name, failed)}}, &TerminalError{Err: verr}
	}
	now := d.Clock.Now()
	if err := d.Ledger.RecordConvergence(ctx, ConvergenceRecord{ReleaseID: run.r.ID, App: run.r.App, Env: run.env.Name, Digest: digest, Revision: want.Revision, At: now}); err != nil {
		return StepResult{}, fmt.Errorf("record convergence: %w", err)
	}
	if err := run.checkpoint(ctx, func(c *Checkpoints) { c.ConvergedAt = now.UTC() }); err != nil {
		return StepResult{}, err
	}
	return StepResult{Status: Succeeded, Message: fmt.Sprintf("%s synced at %s, healthy, running %s", app.Name, revOrNone(want.Revision), digest.Short()),
		Evidence: append(evidence, NewEvidence(app.Name, converged))}, nil
}

// watch is the Service's convergence watch of env: its Convergence port
// and clock, the configured timings (env's readiness grace, when it sets
// one), and the convergence timeout.
func (s *Service) watch(env Environment, observe func(AppState)) Watch {
	o := s.d.Wait
	o.Timeout = s.d.ConvergeTimeout
	if env.ArgoCD.ReadinessGrace > 0 {
		o.ReadinessGrace = env.ArgoCD.ReadinessGrace
	}
	return Watch{Source: s.d.Convergence, Clock: s.d.Clock, Options: o, Observe: observe}
}

// endFailingSync ends Argo CD's retries of a failed sync of another
// revision (the release being rolled back), which would hold the
// rollback's revision back until they run out. Only a Running operation
// that has already failed at least once is ended: a sync in progress is
// never cut short.
func (run *releaseRun) endFailingSync(ctx context.Context, app AppRef, want Want) ([]Evidence, error) {
	d := run.svc.d
	term, ok := d.Convergence.(OperationTerminator)
	if !ok {
		return nil, nil
	}
	st, err := d.Convergence.Get(ctx, app)
	if err != nil {
		return nil, fmt.Errorf("get application %s: %w", app.Name, err)
	}
	if st.Operation != OperationRunning || st.OperationRetries == 0 || st.OperationRevision == "" || st.OperationRevision == want.Revision {
		return nil, nil
	}
	run.progress(StepConvergence, fmt.Sprintf("ending Argo CD's retries of the failed sync of %s (attempt #%d)", revOrNone(st.OperationRevision), st.OperationRetries))
	ended := OperationTerminated{App: app.Name, Revision: st.OperationRevision, Retries: st.OperationRetries, Message: st.OperationMsg}
	if err := term.TerminateOperation(ctx, app); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// Ending the retries only saves time (the token may lack the
		// sync permission it takes): the rollback still converges once
		// they run out, so it waits rather than fails.
		run.progress(StepConvergence, fmt.Sprintf("could not end them (%v); waiting for Argo CD's retries to run out", err))
		return nil, run.svc.journal(ctx, TerminateFailed{OperationTerminated: ended, Error: err.Error()})
	}
	if err := run.svc.journal(ctx, ended); err != nil {
		return nil, err
	}
	return []Evidence{NewEvidence(app.Name, ended)}, nil
}

// verdictError is how a convergence watch of app ended, as relcap's error
// (the one mapping for a release's step and relcap converge): nil when
// it converged, the watch's own error when it could not watch, and
// otherwise an error wrapping ErrNotConverged that says how long it
// waited or what the verdict was, and why.
func (s *Service) verdictError(app string, v Verdict, watchErr error) error {
	switch {
	case errors.Is(watchErr, ErrWatchTimedOut):
		return fmt.Errorf("%w: %s not converged after %s: %s", ErrNotConverged, app, s.d.ConvergeTimeout, v.Reason)
	case watchErr != nil:
		return watchErr
	case v.Kind != VerdictConverged:
		return fmt.Errorf("%w: %s %s: %s", ErrNotConverged, v.Kind.FindingCode(), app, v.Reason)
	}
	return nil
}

// RevisionResult is how a watch of one revision outside a release ended.
type RevisionResult struct {
	App     AppState
	Verdict Verdict
	// Pinned is what the environment repo pins now: the artifact the
	// revision must run.
	Pinned ImageRef
}

// ConvergeRevision watches env's application until it runs revision, with
// the digest the environment repository pins now (relcap converge
// --revision), outside any release. It journals how the watch ended; a
// failure or timeout is an error wrapping ErrNotConverged that names the
// intended revision, the artifact, the controller's status and the next
// safe action.
func (s *Service) ConvergeRevision(ctx context.Context, envName, revision string, observe func(AppState)) (RevisionResult, error) {
	d := s.d
	env, err := d.Project.Env(envName)
	if err != nil {
		return RevisionResult{}, err
	}
	switch {
	case d.EnvRepo == nil:
		return RevisionResult{}, missingPort("environment-repo")
	case d.Convergence == nil:
		return RevisionResult{}, missingPort("convergence")
	}
	pinned, err := d.EnvRepo.Pinned(ctx, env.EnvRepo, env.Registry.Repository)
	if err != nil {
		return RevisionResult{}, err
	}
	want := Want{Revision: revision, Digest: pinned.Digest}
	st, v, err := s.watch(env, observe).Wait(ctx, env.AppRef(), want)
	res := RevisionResult{App: st, Verdict: v, Pinned: pinned}
	watched := RevisionWatch{IntendedRevision: revision, Digest: pinned.Digest.String(), Sync: st.SyncStatus, Revision: st.SyncRevision,
		Health: st.Health, Images: strings.Join(st.Images, ",")}
	switch verr := s.verdictError(env.ArgoCD.App, v, err); {
	case errors.Is(err, ErrWatchTimedOut):
		return res, s.journalFailure(ctx, verr, ConvergeTimeout{watched})
	case err != nil:
		return res, verr
	case verr != nil:
		watched.Verdict, watched.NextAction = v.Kind, v.NextAction
		return res, s.journalFailure(ctx, fmt.Errorf("%w\n  intended revision %s, artifact %s, controller: sync %s at %s, health %s\n  next: %s",
			verr, revision, pinned, st.SyncStatus, st.SyncRevision, st.Health, v.NextAction),
			ConvergeFailed{watched})
	}
	return res, s.journal(ctx, ConvergeDone{watched})
}
