package argocd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/ownership"
)

// Pool is the Convergence port (and its optional abilities) over one
// Adapter per environment, since environments may live on different Argo
// CD servers with different tokens. Adapters are created on first use,
// from the environment's argocd settings and getenv (its token variable).
// It is safe for concurrent use.
type Pool struct {
	project *workflow.Project
	getenv  func(string) string

	mu       sync.Mutex
	adapters map[string]*Adapter
}

// NewPool makes a pool over project's environments.
func NewPool(project *workflow.Project, getenv func(string) string) *Pool {
	return &Pool{project: project, getenv: getenv, adapters: map[string]*Adapter{}}
}

var (
	_ workflow.Convergence         = (*Pool)(nil)
	_ workflow.ResourceTreeReader  = (*Pool)(nil)
	_ workflow.Refresher           = (*Pool)(nil)
	_ workflow.OperationTerminator = (*Pool)(nil)
	_ breakglass.ReconcileControl  = (*Pool)(nil)
	_ workflow.SyncWindows         = (*Pool)(nil)
	_ workflow.OwnershipSource     = (*Pool)(nil)
)

func (m *Pool) adapter(envName string) (*Adapter, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ad, ok := m.adapters[envName]; ok {
		return ad, nil
	}
	env, err := m.project.Env(envName)
	if err != nil {
		return nil, err
	}
	opts, err := OptionsFor(env.ArgoCD, m.getenv)
	if err != nil {
		return nil, fmt.Errorf("argo cd for %s: %w", envName, err)
	}
	ad, err := New(opts)
	if err != nil {
		return nil, fmt.Errorf("argo cd for %s: %w", envName, err)
	}
	m.adapters[envName] = ad
	return ad, nil
}

// Get reads the application of app.Env.
func (m *Pool) Get(ctx context.Context, app appstate.AppRef) (appstate.AppState, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return appstate.AppState{}, err
	}
	return ad.Get(ctx, app)
}

// Watch watches the application of app.Env.
func (m *Pool) Watch(ctx context.Context, app appstate.AppRef, since string) (<-chan workflow.AppUpdate, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return nil, err
	}
	return ad.Watch(ctx, app, since)
}

// ResourceTree reads the resource tree of app.Env's application.
func (m *Pool) ResourceTree(ctx context.Context, app appstate.AppRef) ([]appstate.AppResource, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return nil, err
	}
	return ad.ResourceTree(ctx, app)
}

// Refresh asks app.Env's Argo CD to reconcile the application now.
func (m *Pool) Refresh(ctx context.Context, app appstate.AppRef, within time.Duration) error {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return err
	}
	return ad.Refresh(ctx, app, within)
}

// TerminateOperation ends the running operation of app.Env's application.
func (m *Pool) TerminateOperation(ctx context.Context, app appstate.AppRef) error {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return err
	}
	return ad.TerminateOperation(ctx, app)
}

// SyncPolicy reads the sync policy of app.Env's application.
func (m *Pool) SyncPolicy(ctx context.Context, app appstate.AppRef) (workflow.SyncPolicy, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return workflow.SyncPolicy{}, err
	}
	return ad.SyncPolicy(ctx, app)
}

// SetSyncPolicy sets the sync policy of app.Env's application.
func (m *Pool) SetSyncPolicy(ctx context.Context, app appstate.AppRef, p workflow.SyncPolicy) error {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return err
	}
	return ad.SetSyncPolicy(ctx, app, p)
}

// Drift reads the drift of app.Env's application.
func (m *Pool) Drift(ctx context.Context, app appstate.AppRef) ([]breakglass.Drift, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return nil, err
	}
	return ad.Drift(ctx, app)
}

// DenySync adds a deny window to the project of app.Env's application.
func (m *Pool) DenySync(ctx context.Context, app appstate.AppRef, w workflow.SyncWindow) (workflow.SyncWindow, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return workflow.SyncWindow{}, err
	}
	return ad.DenySync(ctx, app, w)
}

// RemoveWindow removes a window from the project of app.Env's application.
func (m *Pool) RemoveWindow(ctx context.Context, app appstate.AppRef, w workflow.SyncWindow) (bool, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return false, err
	}
	return ad.RemoveWindow(ctx, app, w)
}

// ListWindows lists the windows that apply to app.Env's application.
func (m *Pool) ListWindows(ctx context.Context, app appstate.AppRef) ([]workflow.SyncWindow, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return nil, err
	}
	return ad.ListWindows(ctx, app)
}

// ManagedObjects reads what the environment's Argo CD application manages,
// through that environment's adapter: the Argo CD side of the ownership
// check.
func (m *Pool) ManagedObjects(ctx context.Context, env workflow.Environment) ([]ownership.ManagedObject, error) {
	if env.ArgoCD.App == "" {
		return nil, nil // an environment without an application manages nothing through Argo CD
	}
	ad, err := m.adapter(env.Name)
	if err != nil {
		return nil, err
	}
	return ad.OwnershipSource().ManagedObjects(ctx, env)
}

// Close closes every adapter the pool opened.
func (m *Pool) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, ad := range m.adapters {
		errs = append(errs, ad.Close())
	}
	return errors.Join(errs...)
}
