package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/relcap/relcap/adapters/argocd"
	"github.com/relcap/relcap/workflow"
)

// argoByEnv is the Convergence port over one Argo CD adapter per
// environment, since environments may live on different Argo CD servers
// with different tokens. Adapters are created on first use.
type argoByEnv struct {
	project *workflow.Project
	getenv  func(string) string

	mu       sync.Mutex
	adapters map[string]*argocd.Adapter
}

var (
	_ workflow.Convergence         = (*argoByEnv)(nil)
	_ workflow.ResourceTreeReader  = (*argoByEnv)(nil)
	_ workflow.Refresher           = (*argoByEnv)(nil)
	_ workflow.OperationTerminator = (*argoByEnv)(nil)
	_ workflow.ReconcileControl    = (*argoByEnv)(nil)
	_ workflow.OwnershipSource     = (*argoByEnv)(nil)
)

func (a *app) argoCD(p *workflow.Project) *argoByEnv {
	if a.argo == nil {
		a.argo = &argoByEnv{project: p, getenv: a.io.getenv, adapters: map[string]*argocd.Adapter{}}
	}
	return a.argo
}

func (m *argoByEnv) adapter(envName string) (*argocd.Adapter, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ad, ok := m.adapters[envName]; ok {
		return ad, nil
	}
	env, err := m.project.Env(envName)
	if err != nil {
		return nil, err
	}
	opts, err := argocd.OptionsFor(env.ArgoCD, m.getenv)
	if err != nil {
		return nil, fmt.Errorf("argo cd for %s: %w", envName, err)
	}
	ad, err := argocd.New(opts)
	if err != nil {
		return nil, fmt.Errorf("argo cd for %s: %w", envName, err)
	}
	m.adapters[envName] = ad
	return ad, nil
}

// Get reads the application of app.Env.
func (m *argoByEnv) Get(ctx context.Context, app workflow.AppRef) (workflow.AppState, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return workflow.AppState{}, err
	}
	return ad.Get(ctx, app)
}

// Watch watches the application of app.Env.
func (m *argoByEnv) Watch(ctx context.Context, app workflow.AppRef, since string) (<-chan workflow.AppUpdate, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return nil, err
	}
	return ad.Watch(ctx, app, since)
}

// ResourceTree reads the resource tree of app.Env's application.
func (m *argoByEnv) ResourceTree(ctx context.Context, app workflow.AppRef) ([]workflow.AppResource, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return nil, err
	}
	return ad.ResourceTree(ctx, app)
}

// Refresh asks app.Env's Argo CD to reconcile the application now.
func (m *argoByEnv) Refresh(ctx context.Context, app workflow.AppRef, within time.Duration) error {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return err
	}
	return ad.Refresh(ctx, app, within)
}

// TerminateOperation ends the running operation of app.Env's application.
func (m *argoByEnv) TerminateOperation(ctx context.Context, app workflow.AppRef) error {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return err
	}
	return ad.TerminateOperation(ctx, app)
}

// SyncPolicy reads the sync policy of app.Env's application.
func (m *argoByEnv) SyncPolicy(ctx context.Context, app workflow.AppRef) (workflow.SyncPolicy, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return workflow.SyncPolicy{}, err
	}
	return ad.SyncPolicy(ctx, app)
}

// SetSyncPolicy sets the sync policy of app.Env's application.
func (m *argoByEnv) SetSyncPolicy(ctx context.Context, app workflow.AppRef, p workflow.SyncPolicy) error {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return err
	}
	return ad.SetSyncPolicy(ctx, app, p)
}

// Drift reads the drift of app.Env's application.
func (m *argoByEnv) Drift(ctx context.Context, app workflow.AppRef) ([]workflow.Drift, error) {
	ad, err := m.adapter(app.Env)
	if err != nil {
		return nil, err
	}
	return ad.Drift(ctx, app)
}

// ManagedObjects reads what the environment's Argo CD application manages,
// through that environment's adapter: the Argo CD side of the ownership
// check.
func (m *argoByEnv) ManagedObjects(ctx context.Context, env workflow.Environment) ([]workflow.ManagedObject, error) {
	ad, err := m.adapter(env.Name)
	if err != nil {
		return nil, err
	}
	return ad.OwnershipSource().ManagedObjects(ctx, env)
}

func (m *argoByEnv) close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ad := range m.adapters {
		_ = ad.Close()
	}
}
