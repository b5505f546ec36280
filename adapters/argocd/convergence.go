package argocd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	grpc_retry "github.com/grpc-ecosystem/go-grpc-middleware/retry"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/argoproj/argo-cd/v2/pkg/apiclient/application"
	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
)

// Get returns the application's current state. Errors say whether the
// token was rejected (ErrTokenRejected), the server could not be reached
// (ErrUnreachable) or the call failed otherwise; none takes longer than
// Options.Timeout.
func (a *Adapter) Get(ctx context.Context, ref appstate.AppRef) (appstate.AppState, error) {
	app, err := a.getApp(ctx, ref)
	if err != nil {
		return appstate.AppState{}, err
	}
	return toState(app, a.clock.Now()), nil
}

func (a *Adapter) getApp(ctx context.Context, ref appstate.AppRef) (*v1alpha1.Application, error) {
	return call(ctx, a, ref, "get application", func(ctx context.Context, apps application.ApplicationServiceClient, name string, ns *string) (*v1alpha1.Application, error) {
		return apps.Get(ctx, &application.ApplicationQuery{Name: &name, AppNamespace: ns})
	})
}

// Watch streams the application's states newer than since over Argo CD's
// Watch API until ctx ends; it does not poll. When the stream drops, it
// waits (200ms doubling to 5s by default), Gets the application and emits
// it if it changed, so a transition that happened while disconnected is
// not lost, then watches again from that version. A rejected token, a
// missing application or a deleted one ends the stream with a final
// AppUpdate.Err; the channel is closed when ctx ends or after that error.
//
// argo-cd's own WatchApplicationWithRetry is not used: it sends without
// watching ctx, sleeps a fixed second and does not re-read state.
func (a *Adapter) Watch(ctx context.Context, ref appstate.AppRef, since string) (<-chan workflow.AppUpdate, error) {
	name, ns, err := a.appQuery(ref)
	if err != nil {
		return nil, err
	}
	apps, err := a.client(ctx)
	if err != nil {
		return nil, err
	}
	w := &watcher{a: a, apps: apps, ref: ref, name: name, ns: ns, last: since, out: make(chan workflow.AppUpdate)}
	stream, cancel, err := w.open(ctx)
	if err != nil {
		return nil, a.callError(ctx, "watch application", ref.Name, err)
	}
	go w.run(ctx, stream, cancel)
	return w.out, nil
}

// watcher is one Watch call's state, owned by its goroutine.
type watcher struct {
	a    *Adapter
	apps application.ApplicationServiceClient
	ref  appstate.AppRef
	name string
	ns   *string
	last string // resourceVersion of the last state emitted (or since)
	out  chan workflow.AppUpdate
}

// open starts a stream from w.last. apiclient's retry interceptor would
// silently re-open a dropped stream with the original resourceVersion;
// it is disabled so reconnects go through run, which re-reads state.
func (w *watcher) open(ctx context.Context) (application.ApplicationService_WatchClient, context.CancelFunc, error) {
	sctx, cancel := context.WithCancel(ctx)
	rv := w.last
	stream, err := w.apps.Watch(sctx, &application.ApplicationQuery{Name: &w.name, AppNamespace: w.ns, ResourceVersion: &rv}, grpc_retry.Disable())
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return stream, cancel, nil
}

func (w *watcher) run(ctx context.Context, stream application.ApplicationService_WatchClient, cancel context.CancelFunc) {
	defer close(w.out)
	backoff := w.a.opts.MinBackoff
	for {
		received, err := w.pump(ctx, stream)
		cancel()
		if ctx.Err() != nil || errors.Is(err, errStop) {
			return
		}
		if permanent(err) {
			w.fail(ctx, w.a.callError(ctx, "watch application", w.ref.Name, err))
			return
		}
		if received {
			// The stream worked before it dropped: start backing off
			// afresh.
			backoff = w.a.opts.MinBackoff
		}
		for {
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, w.a.opts.MaxBackoff)
			// getApp reconnects if the adapter was closed; the stream must
			// use the same connection.
			app, err := w.a.getApp(ctx, w.ref)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if errors.Is(err, ErrTokenRejected) || errors.Is(err, fault.ErrNotFound) || errors.Is(err, fault.ErrUsage) {
					w.fail(ctx, err)
					return
				}
				continue
			}
			if !w.emit(ctx, app) {
				return
			}
			if w.apps, err = w.a.client(ctx); err != nil {
				continue
			}
			stream, cancel, err = w.open(ctx)
			if err != nil {
				continue
			}
			break
		}
	}
}

// errStop ends the watch without an error: the consumer went away or the
// application was deleted and that was reported.
var errStop = errors.New("watch stopped")

// pump forwards events until the stream fails; received says whether any
// event arrived.
func (w *watcher) pump(ctx context.Context, stream application.ApplicationService_WatchClient) (received bool, err error) {
	for {
		ev, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				// The server ended the stream cleanly (a restart, an idle
				// timeout at a proxy); reconnect as for any drop.
				err = status.Error(codes.Unavailable, "watch stream ended by the server")
			}
			return received, err
		}
		received = true
		if ev.Type == "DELETED" {
			w.fail(ctx, fmt.Errorf("argo cd application %s on %s was deleted: %w", w.ref.Name, w.a.server, fault.ErrNotFound))
			return received, errStop
		}
		if !w.emit(ctx, &ev.Application) {
			return received, errStop
		}
	}
}

// emit sends app's state unless it is not newer than the last one sent;
// false means ctx ended.
func (w *watcher) emit(ctx context.Context, app *v1alpha1.Application) bool {
	if !newer(app.ResourceVersion, w.last) {
		return true
	}
	w.last = app.ResourceVersion
	select {
	case w.out <- workflow.AppUpdate{State: toState(app, w.a.clock.Now())}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *watcher) fail(ctx context.Context, err error) {
	select {
	case w.out <- workflow.AppUpdate{Err: err}:
	case <-ctx.Done():
	}
}

// newer compares resourceVersions. Kubernetes calls them opaque, but Argo
// CD's own server compares them as integers (its Watch skips older ones),
// and so does this; non-numeric versions only compare for equality.
func newer(v, last string) bool {
	if last == "" {
		return true
	}
	nv, err1 := strconv.ParseUint(v, 10, 64)
	nl, err2 := strconv.ParseUint(last, 10, 64)
	if err1 == nil && err2 == nil {
		return nv > nl
	}
	return v != last
}

// permanent says a stream error will not go away by reconnecting.
func permanent(err error) bool {
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied, codes.NotFound, codes.Unimplemented, codes.InvalidArgument:
		return true
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// toState translates an Application into what the domain judges.
func toState(app *v1alpha1.Application, now time.Time) appstate.AppState {
	st := appstate.AppState{
		Name:          app.Name,
		Version:       app.ResourceVersion,
		SyncStatus:    appstate.SyncStatus(app.Status.Sync.Status),
		SyncRevision:  app.Status.Sync.Revision,
		Health:        appstate.HealthStatus(app.Status.Health.Status),
		HealthMessage: app.Status.Health.Message,
		Images:        slices.Clone(app.Status.Summary.Images),
		ObservedAt:    now,
	}
	if st.SyncStatus == "" {
		st.SyncStatus = appstate.SyncUnknown
	}
	if st.SyncRevision == "" && len(app.Status.Sync.Revisions) > 0 {
		// A multi-source application: its first source is the one relcap
		// pins (the environment repository).
		st.SyncRevision = app.Status.Sync.Revisions[0]
	}
	if st.Health == "" {
		st.Health = appstate.HealthUnknown
	}
	if app.Status.ReconciledAt != nil {
		st.ReconciledAt = app.Status.ReconciledAt.Time
	}
	if p := app.Spec.SyncPolicy; p != nil && p.Automated != nil {
		st.AutoSync, st.SelfHeal = true, p.Automated.SelfHeal
	}
	st.Operation, st.OperationMsg = operation(app)
	if last := app.Status.OperationState; last != nil {
		st.OperationRetries = int(last.RetryCount)
		if last.SyncResult != nil {
			st.OperationRevision = last.SyncResult.Revision
		} else if last.Operation.Sync != nil {
			st.OperationRevision = last.Operation.Sync.Revision
		}
	}
	for _, r := range app.Status.Resources {
		res := appstate.AppResource{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Status: appstate.SyncStatus(r.Status)}
		if r.Health != nil {
			res.Health, res.Message = appstate.HealthStatus(r.Health.Status), r.Health.Message
		}
		st.Resources = append(st.Resources, res)
	}
	if st.HealthMessage == "" && st.Health != appstate.HealthHealthy {
		// Argo CD leaves the application's health message empty; the
		// resource that made it unhealthy says why.
		for _, r := range st.Resources {
			if r.Health == st.Health && r.Message != "" {
				st.HealthMessage = fmt.Sprintf("%s %s: %s", r.Kind, r.Name, r.Message)
				break
			}
		}
	}
	return st
}

// retrySuffix is what Argo CD's controller appends to the message of a
// failed operation it will retry, whatever the failure was ("due to
// application controller sync timeout" even for a rejected manifest); the
// attempt count travels as AppState.OperationRetries instead.
var retrySuffix = regexp.MustCompile(` due to application controller sync timeout\. Retrying attempt #\d+ at [^.]*\.$`)

// operation reports the last operation's phase the way argocd app wait
// judges "operation in progress": a requested operation not yet picked
// up, or a finished one the controller has not reconciled since (argo-cd
// #5592: sync and health lag the operation until then), count as Running.
func operation(app *v1alpha1.Application) (phase appstate.OperationPhase, msg string) {
	last := app.Status.OperationState
	if app.Operation != nil && !app.Operation.DryRun() {
		if last != nil && appstate.OperationPhase(last.Phase) == appstate.OperationRunning {
			// The controller has the operation in hand (app.operation
			// stays set while it runs and while it waits to retry): its
			// state says how it goes.
			return appstate.OperationRunning, retrySuffix.ReplaceAllString(last.Message, "")
		}
		return appstate.OperationRunning, "operation requested; waiting for the application controller"
	}
	if last == nil {
		return "", ""
	}
	phase, msg = appstate.OperationPhase(last.Phase), retrySuffix.ReplaceAllString(last.Message, "")
	switch phase {
	case "Terminating":
		return appstate.OperationRunning, "terminating: " + msg
	case appstate.OperationSucceeded:
		reconciled := app.Status.ReconciledAt
		if last.FinishedAt != nil && !last.Operation.DryRun() && (reconciled == nil || reconciled.Before(last.FinishedAt)) {
			return appstate.OperationRunning, "operation succeeded; waiting for the controller to refresh the application"
		}
	}
	return phase, msg
}

// Refresh asks Argo CD for a normal refresh of the application (what
// `argocd app get --refresh` does) and waits up to within for the
// application controller to perform it: Argo CD's server answers only once
// the controller has cleared the request. No answer in time is
// fault.ErrNotReconciled: the controller is stopped, crashed or stuck.
func (a *Adapter) Refresh(ctx context.Context, ref appstate.AppRef, within time.Duration) error {
	name, ns, err := a.appQuery(ref)
	if err != nil {
		return err
	}
	apps, err := a.client(ctx)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	refresh := string(v1alpha1.RefreshTypeNormal)
	// No retries: a second request would only wait for the same answer.
	_, err = apps.Get(rctx, &application.ApplicationQuery{Name: &name, AppNamespace: ns, Refresh: &refresh}, grpc_retry.Disable())
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return a.callError(ctx, "refresh application", ref.Name, err)
	case errors.Is(rctx.Err(), context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded ||
		strings.Contains(status.Convert(err).Message(), "refresh deadline exceeded"):
		return fmt.Errorf("argo cd application %s on %s: no reconciliation within %s of a refresh request: %w", ref.Name, a.server, within, fault.ErrNotReconciled)
	}
	return a.callError(ctx, "refresh application", ref.Name, err)
}

// TerminateOperation ends the application's running operation (what
// `argocd app terminate-op` does). A rollback uses it to stop Argo CD
// retrying a failed sync of a bad revision, which holds back every newer
// revision until its retries run out.
func (a *Adapter) TerminateOperation(ctx context.Context, ref appstate.AppRef) error {
	_, err := call(ctx, a, ref, "terminate operation of", func(ctx context.Context, apps application.ApplicationServiceClient, name string, ns *string) (*application.OperationTerminateResponse, error) {
		return apps.TerminateOperation(ctx, &application.OperationTerminateRequest{Name: &name, AppNamespace: ns})
	})
	return err
}
