package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/journal"
)

// The evidence stage: Argo CD Synced at the intended revision, Healthy and
// running the promoted digest, judged by Converged (convergence.go) over
// the convergence watch below; a failure is named with the next safe
// action.

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

	var established []evidence.Evidence
	if run.r.Kind == KindRollback {
		ev, err := run.endFailingSync(ctx, app, want)
		if err != nil {
			return StepResult{}, err
		}
		established = append(established, ev...)
	}
	st, v, err := run.svc.watch(run.env, func(s appstate.AppState) {
		run.sink(Event{Time: d.Clock.Now(), Kind: EventAppState, ReleaseID: run.r.ID, Step: StepConvergence, Status: Running, App: &s})
	}).Wait(ctx, app, want)
	converged := evidence.AppConverged{IntendedRevision: want.Revision, Digest: digest, Sync: st.SyncStatus, Revision: st.SyncRevision, Health: st.Health}
	switch verr := run.svc.verdictError(app.Name, v, err); {
	case errors.Is(err, ErrWatchTimedOut):
		return StepResult{}, &TerminalError{Err: verr}
	case err != nil:
		return StepResult{}, verr
	case verr != nil:
		failed := evidence.AppNotConverged{Verdict: v.Kind, Reason: v.Reason, IntendedRevision: want.Revision, Digest: digest, Images: st.Images,
			Sync: st.SyncStatus, Revision: st.SyncRevision, Health: st.Health, NextAction: v.NextAction}
		f := finding.Finding{Severity: finding.Blocker, Code: v.Kind.FindingCode(), Subject: app.Name, Message: v.Reason, NextAction: v.NextAction, Facts: converged.Facts()}
		return StepResult{Findings: []finding.Finding{f}, Evidence: []evidence.Evidence{evidence.New(app.Name, failed)}}, &TerminalError{Err: verr}
	}
	now := d.Clock.Now()
	if err := d.Ledger.RecordConvergence(ctx, ConvergenceRecord{ReleaseID: run.r.ID, App: run.r.App, Env: run.env.Name, Digest: digest, Revision: want.Revision, At: now}); err != nil {
		return StepResult{}, fmt.Errorf("record convergence: %w", err)
	}
	if err := run.checkpoint(ctx, func(c *Checkpoints) { c.ConvergedAt = now.UTC() }); err != nil {
		return StepResult{}, err
	}
	return StepResult{Status: Succeeded, Message: fmt.Sprintf("%s synced at %s, healthy, running %s", app.Name, revOrNone(want.Revision), digest.Short()),
		Evidence: append(established, evidence.New(app.Name, converged))}, nil
}

// watch is the Service's convergence watch of env: its Convergence port
// and clock, the configured timings (env's readiness grace, when it sets
// one), and the convergence timeout.
func (s *Service) watch(env Environment, observe func(appstate.AppState)) Watch {
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
func (run *releaseRun) endFailingSync(ctx context.Context, app appstate.AppRef, want Want) ([]evidence.Evidence, error) {
	d := run.svc.d
	term, ok := d.Convergence.(OperationTerminator)
	if !ok {
		return nil, nil
	}
	st, err := d.Convergence.Get(ctx, app)
	if err != nil {
		return nil, fmt.Errorf("get application %s: %w", app.Name, err)
	}
	if st.Operation != appstate.OperationRunning || st.OperationRetries == 0 || st.OperationRevision == "" || st.OperationRevision == want.Revision {
		return nil, nil
	}
	run.progress(StepConvergence, fmt.Sprintf("ending Argo CD's retries of the failed sync of %s (attempt #%d)", revOrNone(st.OperationRevision), st.OperationRetries))
	ended := evidence.OperationTerminated{App: app.Name, Revision: st.OperationRevision, Retries: st.OperationRetries, Message: st.OperationMsg}
	if err := term.TerminateOperation(ctx, app); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// Ending the retries only saves time (the token may lack the
		// sync permission it takes): the rollback still converges once
		// they run out, so it waits rather than fails.
		run.progress(StepConvergence, fmt.Sprintf("could not end them (%v); waiting for Argo CD's retries to run out", err))
		return nil, run.svc.journal(ctx, journal.TerminateFailed{OperationTerminated: ended, Error: err.Error()})
	}
	if err := run.svc.journal(ctx, journal.OperationTerminatedRecord{OperationTerminated: ended}); err != nil {
		return nil, err
	}
	return []evidence.Evidence{evidence.New(app.Name, ended)}, nil
}

// verdictError is how a convergence watch of app ended, as relcap's error
// (the one mapping for a release's step and relcap converge): nil when
// it converged, the watch's own error when it could not watch, and
// otherwise an error wrapping ErrNotConverged that says how long it
// waited or what the verdict was, and why.
func (s *Service) verdictError(app string, v Verdict, watchErr error) error {
	switch {
	case errors.Is(watchErr, ErrWatchTimedOut):
		return fmt.Errorf("%w: %s not converged after %s: %s", fault.ErrNotConverged, app, s.d.ConvergeTimeout, v.Reason)
	case watchErr != nil:
		return watchErr
	case v.Kind != appstate.VerdictConverged:
		return fmt.Errorf("%w: %s %s: %s", fault.ErrNotConverged, v.Kind.FindingCode(), app, v.Reason)
	}
	return nil
}

// RevisionResult is how a watch of one revision outside a release ended.
type RevisionResult struct {
	App     appstate.AppState
	Verdict Verdict
	// Pinned is what the environment repo pins now: the artifact the
	// revision must run.
	Pinned image.Ref
}

// ConvergeRevision watches env's application until it runs revision, with
// the digest the environment repository pins now (relcap converge
// --revision), outside any release. It journals how the watch ended; a
// failure or timeout is an error wrapping ErrNotConverged that names the
// intended revision, the artifact, the controller's status and the next
// safe action.
func (s *Service) ConvergeRevision(ctx context.Context, envName, revision string, observe func(appstate.AppState)) (RevisionResult, error) {
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
	watched := journal.RevisionWatch{IntendedRevision: revision, Digest: pinned.Digest.String(), Sync: st.SyncStatus, Revision: st.SyncRevision,
		Health: st.Health, Images: strings.Join(st.Images, ",")}
	switch verr := s.verdictError(env.ArgoCD.App, v, err); {
	case errors.Is(err, ErrWatchTimedOut):
		return res, s.journalFailure(ctx, verr, journal.ConvergeTimeout{RevisionWatch: watched})
	case err != nil:
		return res, verr
	case verr != nil:
		watched.Verdict, watched.NextAction = v.Kind, v.NextAction
		return res, s.journalFailure(ctx, fmt.Errorf("%w\n  intended revision %s, artifact %s, controller: sync %s at %s, health %s\n  next: %s",
			verr, revision, pinned, st.SyncStatus, st.SyncRevision, st.Health, v.NextAction),
			journal.ConvergeFailed{RevisionWatch: watched})
	}
	return res, s.journal(ctx, journal.ConvergeDone{RevisionWatch: watched})
}

// The convergence watch (Watch.Wait): argo-cd's `app wait` over the
// Convergence port, each update judged by Converged, within WaitOptions.

// ErrWatchTimedOut ends a convergence watch that did not reach a verdict
// within WaitOptions.Timeout.
var ErrWatchTimedOut = fmt.Errorf("%w: timed out", fault.ErrNotConverged)

// WaitOptions are the timings of a convergence watch.
type WaitOptions struct {
	// TreeInterval is how often the watch reads the resource tree (when
	// the adapter is a ResourceTreeReader) and checks for a stall.
	TreeInterval time.Duration
	// ReadinessGrace is how long a Pod may fail readiness before the
	// rollout counts as failed.
	ReadinessGrace time.Duration
	// StallAfter is how long the application may show no change while
	// not converged before the watch asks the controller to reconcile it
	// (when the adapter is a Refresher); RefreshWithin is how long the
	// controller has to answer before the watch calls it stalled.
	StallAfter, RefreshWithin time.Duration
	// Timeout, when positive, ends the watch with ErrWatchTimedOut.
	Timeout time.Duration
}

// DefaultWaitOptions: a failure named within seconds; a stalled controller
// within about a minute. Argo CD's controller answers a refresh in well
// under a second when it runs, so 20 s without an answer is not load.
var DefaultWaitOptions = WaitOptions{TreeInterval: 2 * time.Second, ReadinessGrace: ReadinessGrace, StallAfter: 30 * time.Second, RefreshWithin: 20 * time.Second}

// Watch is one convergence watch: argo-cd's `app wait` algorithm over the
// Convergence port, timed by Clock, so tests drive it with a fake clock.
type Watch struct {
	Source Convergence
	// Clock times the watch; nil means the wall clock.
	Clock Clock
	// Options are its timings; zero means DefaultWaitOptions.
	Options WaitOptions
	// Observe, when set, sees every state the watch reads.
	Observe func(appstate.AppState)
}

// WaitConverged waits with the wall clock and DefaultWaitOptions.
func WaitConverged(ctx context.Context, c Convergence, app appstate.AppRef, want Want, observe func(appstate.AppState)) (appstate.AppState, Verdict, error) {
	return Watch{Source: c, Observe: observe}.Wait(ctx, app, want)
}

// Wait is argo-cd's `app wait` algorithm: Get first and return if already
// converged; otherwise Watch from the returned version, judge each update
// with Converged, fail fast on a terminal verdict or on Healthy → Degraded,
// and stop when ctx ends or the timeout passes. Between updates it reads
// the resource tree (Pod failures behind a Progressing application) and
// asks a quiet application's controller to reconcile (a stopped controller
// freezes the status). It returns the last state and its verdict; err is
// non-nil only when the watch itself failed, timed out or ctx ended.
func (w Watch) Wait(ctx context.Context, app appstate.AppRef, want Want) (appstate.AppState, Verdict, error) {
	clock, o := w.Clock, w.Options
	if clock == nil {
		clock = SystemClock{}
	}
	if o == (WaitOptions{}) {
		o = DefaultWaitOptions
	}
	observe := func(s appstate.AppState) {
		if w.Observe != nil {
			w.Observe(s)
		}
	}
	var timeout <-chan time.Time
	if o.Timeout > 0 {
		timeout = clock.After(o.Timeout)
	}
	st, err := w.Source.Get(ctx, app)
	if err != nil {
		return st, Verdict{}, fmt.Errorf("get application %s: %w", app.Name, err)
	}
	observe(st)
	v := Converged(st, want)
	if v.Kind == appstate.VerdictConverged || v.Terminal {
		return st, v, nil
	}
	updates, err := w.Source.Watch(ctx, app, st.Version)
	if err != nil {
		return st, v, fmt.Errorf("watch application %s: %w", app.Name, err)
	}
	wasHealthy := st.Health == appstate.HealthHealthy
	tree, _ := w.Source.(ResourceTreeReader)
	refresher, _ := w.Source.(Refresher)
	windows, _ := w.Source.(SyncWindows)
	var tick <-chan time.Time
	if tree != nil || refresher != nil || windows != nil {
		tick = clock.After(o.TreeInterval)
	}
	notReadySince := map[string]time.Time{}
	lastChange := clock.Now()
	for {
		select {
		case <-ctx.Done():
			return st, v, ctx.Err()
		case <-timeout:
			return st, v, ErrWatchTimedOut
		case <-tick:
			tick = clock.After(o.TreeInterval)
			if refresher != nil && clock.Now().Sub(lastChange) >= o.StallAfter {
				err := refresher.Refresh(ctx, app, o.RefreshWithin)
				if ctx.Err() != nil {
					return st, v, ctx.Err()
				}
				if errors.Is(err, fault.ErrNotReconciled) {
					return st, stalled(st, o.RefreshWithin, clock.Now()), nil
				}
				// Answered (or the server could not be asked, which the
				// watch reports): quiet is not a stall; ask again later.
				lastChange = clock.Now()
			}
			if windows != nil && want.Revision != "" && (st.SyncStatus != appstate.SyncSynced || st.SyncRevision != want.Revision) {
				// A deny window (break-glass) holds automated sync off:
				// the revision waits for the window, not for Argo CD.
				if pv, paused := pausedByWindow(ctx, windows, app, st); paused {
					return st, pv, nil
				}
			}
			if tree == nil {
				continue
			}
			resources, err := tree.ResourceTree(ctx, app)
			if err != nil {
				continue // the watch reports a lost server; the tree is a second opinion
			}
			now := clock.Now()
			seen := map[string]bool{}
			for _, r := range resources {
				if isReadinessFailure(r) {
					seen[r.Key()] = true
					if _, ok := notReadySince[r.Key()]; !ok {
						notReadySince[r.Key()] = now
					}
				}
			}
			for k := range notReadySince {
				if !seen[k] {
					delete(notReadySince, k)
				}
			}
			st.Tree = resources
			observe(st)
			if want.Revision != "" && (st.SyncStatus != appstate.SyncSynced || st.SyncRevision != want.Revision) {
				// The tree is still the previous revision's: the failing
				// Pods a rollback is replacing are not its failure.
				continue
			}
			if fv, failed := ResourceFailure(resources, want.Digest, func(r appstate.AppResource) time.Duration {
				return now.Sub(notReadySince[r.Key()])
			}, o.ReadinessGrace); failed {
				st.Resources = resources
				return st, fv, nil
			}
		case u, ok := <-updates:
			if !ok {
				if ctx.Err() != nil {
					return st, v, ctx.Err()
				}
				return st, v, fmt.Errorf("watch application %s: stream ended", app.Name)
			}
			if u.Err != nil {
				return st, v, fmt.Errorf("watch application %s: %w", app.Name, u.Err)
			}
			st = u.State
			lastChange = clock.Now()
			observe(st)
			v = Converged(st, want)
			// Healthy → Degraded fails fast (argo-cd's app wait), but only
			// at the intended revision: before Argo CD has synced it, the
			// health is the previous revision's (the drill or the bad
			// release a rollback replaces), not this rollout's.
			atWant := st.SyncStatus == appstate.SyncSynced && (want.Revision == "" || st.SyncRevision == want.Revision)
			if wasHealthy && st.Health == appstate.HealthDegraded && atWant {
				v.Terminal = true
			}
			if v.Kind == appstate.VerdictConverged || v.Terminal {
				return st, v, nil
			}
			wasHealthy = wasHealthy || st.Health == appstate.HealthHealthy
		}
	}
}

// stalled is the verdict on an application whose controller did not
// answer a refresh: what Argo CD reports is frozen, neither converged nor
// failed, and waiting longer changes nothing until the controller runs.
func stalled(st appstate.AppState, within time.Duration, now time.Time) Verdict {
	last := "it reports no reconciliation time"
	if !st.ReconciledAt.IsZero() {
		last = fmt.Sprintf("it last reconciled at %s (%s ago)", st.ReconciledAt.UTC().Format("15:04:05 MST"), now.Sub(st.ReconciledAt).Round(time.Second))
	}
	return Verdict{Kind: appstate.VerdictReconcileStalled, Terminal: true,
		Reason: fmt.Sprintf("Argo CD's application controller did not reconcile %s within %s of a refresh request; %s, so its status is frozen at sync %s at %s, health %s",
			st.Name, within, last, st.SyncStatus, revOrNone(st.SyncRevision), st.Health),
		NextAction: "check argocd-application-controller (is it running, what do its logs say); nothing is lost meanwhile: once it runs, relcap converge picks up where Argo CD is, " +
			"and if the half-done rollout must not finish, relcap rollback"}
}

// pausedByWindow is the verdict on an application that an active deny
// sync window keeps from syncing; false when none is active (or the
// windows cannot be read: the watch goes on).
func pausedByWindow(ctx context.Context, sw SyncWindows, app appstate.AppRef, st appstate.AppState) (Verdict, bool) {
	ws, err := sw.ListWindows(ctx, app)
	if err != nil {
		return Verdict{}, false
	}
	for _, w := range ws {
		if w.Kind != SyncWindowDeny || !w.Active {
			continue
		}
		what := w.Description
		if what == "" {
			what = "schedule " + w.Schedule + " for " + w.Duration.String()
		}
		return Verdict{Kind: appstate.VerdictReconcilePaused, Terminal: true,
			Reason: fmt.Sprintf("reconciliation paused by break-glass window (deny, %s) on project %s: %s stays at sync %s at %s, health %s",
				what, w.Project, st.Name, st.SyncStatus, revOrNone(st.SyncRevision), st.Health),
			NextAction: "end the break-glass (relcap breakglass end --env " + app.Env + ") to let Argo CD sync, or wait until the window closes"}, true
	}
	return Verdict{}, false
}
