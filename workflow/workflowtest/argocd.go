package workflowtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/breakglass"
)

// ArgoCD is a fake Argo CD for break-glass: applications with a sync
// policy and drift, and one project's sync windows, judged open or closed
// on Clock. It records the calls that change something.
type ArgoCD struct {
	Clock workflow.Clock

	mu      sync.Mutex
	policy  map[string]workflow.SyncPolicy
	drift   map[string][]breakglass.Drift
	windows []workflow.SyncWindow
	calls   []string
	// denyErr, when set, fails DenySync after the window is stored, as a
	// server would that keeps the window but does not report it open.
	denyErr error
	// sticky: RemoveWindow finds nothing to remove (an adapter that does
	// not recognise the window the server stored).
	sticky bool
}

var (
	_ workflow.Convergence        = (*ArgoCD)(nil)
	_ breakglass.ReconcileControl = (*ArgoCD)(nil)
	_ workflow.SyncWindows        = (*ArgoCD)(nil)
)

// NewArgoCD is a fake whose applications start automated with self-heal.
func NewArgoCD(clock workflow.Clock) *ArgoCD {
	return &ArgoCD{Clock: clock, policy: map[string]workflow.SyncPolicy{}, drift: map[string][]breakglass.Drift{}}
}

// FailDeny makes every later DenySync fail with err (nil: succeed again).
func (a *ArgoCD) FailDeny(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.denyErr = err
}

// StickyWindows makes RemoveWindow find nothing to remove and keep every
// window, as an adapter would that does not recognise what the server
// made of relcap's window.
func (a *ArgoCD) StickyWindows() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sticky = true
}

// SetDrift sets what Drift reports for app.
func (a *ArgoCD) SetDrift(app string, d ...breakglass.Drift) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.drift[app] = d
}

// Windows returns the project's windows.
func (a *ArgoCD) Windows() []workflow.SyncWindow {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.windows)
}

// Calls lists the changing calls made, e.g. "deny web-prod".
func (a *ArgoCD) Calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

// Get returns a bare state of app.
func (a *ArgoCD) Get(_ context.Context, app appstate.AppRef) (appstate.AppState, error) {
	return appstate.AppState{Name: app.Name}, nil
}

// Watch returns a channel that closes when ctx ends.
func (a *ArgoCD) Watch(ctx context.Context, _ appstate.AppRef, _ string) (<-chan workflow.AppUpdate, error) {
	ch := make(chan workflow.AppUpdate)
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}

// SyncPolicy returns app's policy (automated with self-heal unless set).
func (a *ArgoCD) SyncPolicy(_ context.Context, app appstate.AppRef) (workflow.SyncPolicy, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.policy[app.Name]; ok {
		return p, nil
	}
	return workflow.SyncPolicy{Automated: true, SelfHeal: true}, nil
}

// SetSyncPolicy sets app's policy.
func (a *ArgoCD) SetSyncPolicy(_ context.Context, app appstate.AppRef, p workflow.SyncPolicy) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.policy[app.Name] = p
	a.calls = append(a.calls, "set-policy "+app.Name+" "+p.String())
	return nil
}

// Drift returns what SetDrift set for app.
func (a *ArgoCD) Drift(_ context.Context, app appstate.AppRef) ([]breakglass.Drift, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.drift[app.Name]), nil
}

// DenySync stores w on project "default" unless it is there.
func (a *ArgoCD) DenySync(_ context.Context, app appstate.AppRef, w workflow.SyncWindow) (workflow.SyncWindow, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, "deny "+app.Name)
	w.Project, w.Active = "default", false
	if !slices.ContainsFunc(a.windows, w.Same) {
		a.windows = append(a.windows, w)
	}
	if a.denyErr != nil {
		return workflow.SyncWindow{}, a.denyErr
	}
	return w, nil
}

// RemoveWindow removes the windows identical to w.
func (a *ArgoCD) RemoveWindow(_ context.Context, app appstate.AppRef, w workflow.SyncWindow) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, "remove "+app.Name)
	if a.sticky {
		return false, nil
	}
	n := len(a.windows)
	a.windows = slices.DeleteFunc(a.windows, w.Same)
	return len(a.windows) < n, nil
}

// ListWindows returns the windows naming app, Active on Clock.
func (a *ArgoCD) ListWindows(_ context.Context, app appstate.AppRef) ([]workflow.SyncWindow, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.Clock.Now().UTC()
	var out []workflow.SyncWindow
	for _, w := range a.windows {
		if !slices.Contains(w.Applications, app.Name) {
			continue
		}
		var minute, hour, day, month int
		if _, err := fmt.Sscanf(w.Schedule, "%d %d %d %d *", &minute, &hour, &day, &month); err != nil {
			return nil, fmt.Errorf("fake argo cd: schedule %q: %w", w.Schedule, err)
		}
		opens := time.Date(now.Year(), time.Month(month), day, hour, minute, 0, 0, time.UTC)
		w.Active = now.After(opens) && now.Before(opens.Add(w.Duration))
		out = append(out, w)
	}
	return out, nil
}

// People is a fake people file and key ring: Key(p) signs as p only,
// Verify accepts what a key of a principal still in the file signed.
type People struct {
	mu      sync.Mutex
	allowed map[string]bool
}

var _ workflow.SignatureVerifier = (*People)(nil)

// NewPeople is a people file naming principals.
func NewPeople(principals ...string) *People {
	p := &People{allowed: map[string]bool{}}
	for _, who := range principals {
		p.allowed[who] = true
	}
	return p
}

// Remove takes principal's key out of the file.
func (p *People) Remove(principal string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.allowed, principal)
}

// Verify checks sig against the file as it reads now.
func (p *People) Verify(_ context.Context, principal, namespace string, message []byte, sig approval.Signature, _ time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !p.allowed[principal]:
		return fmt.Errorf("no key of %s in the people file", principal)
	case sig != fakeSignature(principal, namespace, message):
		return errors.New("the signature does not match the statement")
	}
	return nil
}

// Key is the signing key of one principal.
type Key string

var _ workflow.Signer = Key("")

// Sign signs as principal if this is principal's key.
func (k Key) Sign(_ context.Context, principal, namespace string, message []byte) (approval.Signature, error) {
	if string(k) != principal {
		return approval.Signature{}, fmt.Errorf("the key at hand is %s's, not %s's", string(k), principal)
	}
	return fakeSignature(principal, namespace, message), nil
}
