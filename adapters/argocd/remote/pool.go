package remote

import (
	"context"
	"time"

	"github.com/relcap/relcap/adapters/render"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/ownership"
)

// Pool is adapters/argocd's Pool (the Convergence port and its optional
// abilities, one Argo CD connection per environment) served by a
// relcap-argocd helper of its own, started on the first call. It is safe
// for concurrent use.
type Pool struct {
	h *helper
}

var (
	_ workflow.Convergence            = (*Pool)(nil)
	_ workflow.ResourceTreeReader     = (*Pool)(nil)
	_ workflow.Refresher              = (*Pool)(nil)
	_ workflow.OperationTerminator    = (*Pool)(nil)
	_ breakglass.ReconcileControl     = (*Pool)(nil)
	_ workflow.SyncWindows            = (*Pool)(nil)
	_ workflow.OwnershipSource        = (*Pool)(nil)
	_ workflow.ClusterOwnershipSource = (*Pool)(nil)
)

// NewPool makes a pool over project's environments; the helper reads
// each environment's token from its own environment (cfg.Env).
func NewPool(project *workflow.Project, cfg Config) *Pool {
	hello := HelloArgs{Build: cfg.Build}
	for _, e := range project.Environments {
		hello.Envs = append(hello.Envs, EnvTarget{Env: e.Name, Target: e.ArgoCD})
	}
	return &Pool{h: &helper{cfg: cfg, hello: hello}}
}

// appCall makes a call about one application.
func appCall[R any](ctx context.Context, m *Pool, method, op string, app appstate.AppRef, reply *R, fault func(*R) *Fault) error {
	c := m.h.newCall(ctx)
	if err := m.h.call(ctx, method, op, c.ID, AppArgs{Call: c, App: app}, reply); err != nil {
		return err
	}
	return fault(reply).Err()
}

// Get reads the application of app.Env.
func (m *Pool) Get(ctx context.Context, app appstate.AppRef) (appstate.AppState, error) {
	var r GetReply
	err := appCall(ctx, m, "Get", "get "+app.Name, app, &r, func(r *GetReply) *Fault { return r.Fault })
	return r.State, err
}

// watchWait is how long one Next waits for an update before asking again.
const watchWait = 10 * time.Second

// Watch watches the application of app.Env until ctx ends: the helper
// keeps the stream, and a goroutine here asks it for the next updates.
func (m *Pool) Watch(ctx context.Context, app appstate.AppRef, since string) (<-chan workflow.AppUpdate, error) {
	c := m.h.newCall(ctx)
	var r WatchReply
	if err := m.h.call(ctx, "Watch", "watch "+app.Name, c.ID, WatchArgs{Call: c, App: app, Since: since}, &r); err != nil {
		return nil, err
	}
	if r.Fault != nil {
		return nil, r.Fault.Err()
	}
	out := make(chan workflow.AppUpdate)
	go m.follow(ctx, app, r.Stream, out)
	return out, nil
}

// follow passes the stream's updates on until it ends, ctx ends (then it
// stops the stream) or the helper does (then a last update says so).
func (m *Pool) follow(ctx context.Context, app appstate.AppRef, stream uint64, out chan<- workflow.AppUpdate) {
	defer close(out)
	for {
		var r NextReply
		err := m.h.invoke(ctx, "Next", "watch "+app.Name, 0, NextArgs{Stream: stream, Wait: watchWait}, &r)
		if ctx.Err() != nil {
			m.h.client.Go(Service+".Stop", StreamArgs{Stream: stream}, &Empty{}, nil)
			return
		}
		if err != nil {
			select {
			case out <- workflow.AppUpdate{Err: err}:
			case <-ctx.Done():
			}
			return
		}
		for _, u := range r.Updates {
			select {
			case out <- workflow.AppUpdate{State: u.State, Err: u.Fault.Err()}:
			case <-ctx.Done():
				m.h.client.Go(Service+".Stop", StreamArgs{Stream: stream}, &Empty{}, nil)
				return
			}
		}
		if r.Done {
			return
		}
	}
}

// ResourceTree reads the resource tree of app.Env's application.
func (m *Pool) ResourceTree(ctx context.Context, app appstate.AppRef) ([]appstate.AppResource, error) {
	var r TreeReply
	err := appCall(ctx, m, "ResourceTree", "resource tree of "+app.Name, app, &r, func(r *TreeReply) *Fault { return r.Fault })
	return r.Resources, err
}

// Refresh asks app.Env's Argo CD to reconcile the application now.
func (m *Pool) Refresh(ctx context.Context, app appstate.AppRef, within time.Duration) error {
	c := m.h.newCall(ctx)
	var r Empty
	if err := m.h.call(ctx, "Refresh", "refresh "+app.Name, c.ID, RefreshArgs{Call: c, App: app, Within: within}, &r); err != nil {
		return err
	}
	return r.Fault.Err()
}

// TerminateOperation ends the running operation of app.Env's application.
func (m *Pool) TerminateOperation(ctx context.Context, app appstate.AppRef) error {
	var r Empty
	return appCall(ctx, m, "TerminateOperation", "terminate the operation of "+app.Name, app, &r, func(r *Empty) *Fault { return r.Fault })
}

// SyncPolicy reads the sync policy of app.Env's application.
func (m *Pool) SyncPolicy(ctx context.Context, app appstate.AppRef) (workflow.SyncPolicy, error) {
	var r PolicyReply
	err := appCall(ctx, m, "SyncPolicy", "sync policy of "+app.Name, app, &r, func(r *PolicyReply) *Fault { return r.Fault })
	return r.Policy, err
}

// SetSyncPolicy sets the sync policy of app.Env's application.
func (m *Pool) SetSyncPolicy(ctx context.Context, app appstate.AppRef, p workflow.SyncPolicy) error {
	c := m.h.newCall(ctx)
	var r Empty
	if err := m.h.call(ctx, "SetSyncPolicy", "set the sync policy of "+app.Name, c.ID, PolicyArgs{Call: c, App: app, Policy: p}, &r); err != nil {
		return err
	}
	return r.Fault.Err()
}

// Drift reads the drift of app.Env's application.
func (m *Pool) Drift(ctx context.Context, app appstate.AppRef) ([]breakglass.Drift, error) {
	var r DriftReply
	err := appCall(ctx, m, "Drift", "drift of "+app.Name, app, &r, func(r *DriftReply) *Fault { return r.Fault })
	return r.Drift, err
}

// windowCall makes a call about one sync window.
func windowCall[R any](ctx context.Context, m *Pool, method, op string, app appstate.AppRef, w workflow.SyncWindow, reply *R, fault func(*R) *Fault) error {
	c := m.h.newCall(ctx)
	if err := m.h.call(ctx, method, op, c.ID, WindowArgs{Call: c, App: app, Window: w}, reply); err != nil {
		return err
	}
	return fault(reply).Err()
}

// DenySync adds a deny window to the project of app.Env's application.
func (m *Pool) DenySync(ctx context.Context, app appstate.AppRef, w workflow.SyncWindow) (workflow.SyncWindow, error) {
	var r WindowReply
	err := windowCall(ctx, m, "DenySync", "deny sync of "+app.Name, app, w, &r, func(r *WindowReply) *Fault { return r.Fault })
	return r.Window, err
}

// RemoveWindow removes a window from the project of app.Env's application.
func (m *Pool) RemoveWindow(ctx context.Context, app appstate.AppRef, w workflow.SyncWindow) (bool, error) {
	var r RemovedReply
	err := windowCall(ctx, m, "RemoveWindow", "remove a sync window of "+app.Name, app, w, &r, func(r *RemovedReply) *Fault { return r.Fault })
	return r.Removed, err
}

// ListWindows lists the windows that apply to app.Env's application.
func (m *Pool) ListWindows(ctx context.Context, app appstate.AppRef) ([]workflow.SyncWindow, error) {
	var r WindowsReply
	err := appCall(ctx, m, "ListWindows", "sync windows of "+app.Name, app, &r, func(r *WindowsReply) *Fault { return r.Fault })
	return r.Windows, err
}

// ManagedObjects reads what the environment's Argo CD application
// manages: the Argo CD side of the ownership check. An environment
// without an application manages nothing through Argo CD, and starts no
// helper.
func (m *Pool) ManagedObjects(ctx context.Context, env workflow.Environment) ([]ownership.ManagedObject, error) {
	if env.ArgoCD.App == "" {
		return nil, nil
	}
	c := m.h.newCall(ctx)
	var r ObjectsReply
	err := m.h.call(ctx, "ManagedObjects", "managed objects of "+env.ArgoCD.App, c.ID, EnvArgs{Call: c, Env: EnvTarget{Env: env.Name, Target: env.ArgoCD}}, &r)
	if err != nil {
		return nil, err
	}
	return r.Objects, r.Fault.Err()
}

// ReadsCluster marks the pool as the cluster's ownership source, as
// adapters/argocd's Pool is.
func (*Pool) ReadsCluster() {}

// Close stops the helper, if one was started.
func (m *Pool) Close() error {
	if m == nil {
		return nil
	}
	return m.h.close()
}

// RenderHelm renders the chart a Helm values file configures, in the
// helper (render.HelmRenderer): Helm's engine links Kubernetes' client
// packages, whose start-up relcap does not pay. Only the chart's files
// cross the pipe.
func (m *Pool) RenderHelm(ctx context.Context, files map[string][]byte, valuesFile, release string) (objects []map[string]any, chartDir, unrendered string, err error) {
	c := m.h.newCall(ctx)
	var r HelmReply
	if err := m.h.call(ctx, "RenderHelm", "render the Helm chart of "+valuesFile, c.ID, HelmArgs{Call: c, Files: render.ChartFiles(files, valuesFile), ValuesFile: valuesFile, Release: release}, &r); err != nil {
		return nil, "", "", err
	}
	return r.Objects, r.ChartDir, r.Unrendered, r.Fault.Err()
}
