package workflowtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/rehearsal"
)

var _ rehearsal.Store = (*Ledger)(nil)

// SaveRehearsal stores a copy of r (as JSON, as the store does), after
// AfterRehearsalSave lets a test kill the process there.
func (l *Ledger) SaveRehearsal(_ context.Context, r *rehearsal.Rehearsal) error {
	if err := l.gate(); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.rehearsals == nil {
		l.rehearsals = map[string][]byte{}
	}
	l.rehearsals[r.ID] = b
	l.rehearsalSaves++
	n, after := l.rehearsalSaves, l.AfterRehearsalSave
	l.mu.Unlock()
	if after != nil {
		return after(n, r)
	}
	return nil
}

// LoadRehearsal returns a copy, or ErrNotFound.
func (l *Ledger) LoadRehearsal(_ context.Context, id string) (*rehearsal.Rehearsal, error) {
	l.mu.Lock()
	b, ok := l.rehearsals[id]
	l.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("rehearsal %s: %w", id, fault.ErrNotFound)
	}
	var r rehearsal.Rehearsal
	return &r, json.Unmarshal(b, &r)
}

// ListRehearsals returns the rehearsals f selects, newest first.
func (l *Ledger) ListRehearsals(ctx context.Context, f rehearsal.Filter) ([]*rehearsal.Rehearsal, error) {
	l.mu.Lock()
	ids := make([]string, 0, len(l.rehearsals))
	for id := range l.rehearsals {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	var out []*rehearsal.Rehearsal
	for _, id := range ids {
		r, err := l.LoadRehearsal(ctx, id)
		if err != nil {
			return nil, err
		}
		if (f.App != "" && r.App != f.App) || (f.Env != "" && r.Env != f.Env) || (f.Drill != "" && r.Drill != f.Drill) {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *rehearsal.Rehearsal) int { return b.StartedAt.Compare(a.StartedAt) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// TreeConvergence is the fake Convergence with a resource tree, as a
// kubelet would make it: a Pod of a landed digest that the environment's
// repository lacks cannot pull its image, and one of a digest in
// World.NeverReady fails its readiness probe.
type TreeConvergence struct{ Convergence }

var _ workflow.ResourceTreeReader = TreeConvergence{}

// ResourceTree is the application's Deployment and its Pod.
func (c TreeConvergence) ResourceTree(_ context.Context, app appstate.AppRef) ([]appstate.AppResource, error) {
	c.W.mu.Lock()
	defer c.W.mu.Unlock()
	pod := appstate.AppResource{Kind: "Pod", Namespace: "web", Name: "web-1", Health: appstate.HealthHealthy, Parent: "ReplicaSet/web/web"}
	switch c.W.podFailure(app.Env) {
	case "pull":
		pod.Health, pod.Message = appstate.HealthProgressing, "Back-off pulling image "+c.W.landedImage[app.Env]+": ImagePullBackOff"
	case "ready":
		pod.Health, pod.Message = appstate.HealthProgressing, "Readiness probe failed: HTTP probe failed with statuscode: 503"
	}
	return []appstate.AppResource{{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Health: pod.Health}, pod}, nil
}

// podFailure is how the Pods of env's landed image fail: "pull" when its
// digest is in no repository of the world, "ready" when it is NeverReady,
// "" when they run. Called with mu held.
func (w *World) podFailure(env string) string {
	img, ok := w.landedImage[env]
	if !ok {
		return ""
	}
	at := strings.LastIndexByte(img, '@')
	d, err := image.ParseDigest(img[at+1:])
	if err != nil {
		return ""
	}
	if !w.Repos[img[:at]][d] {
		return "pull"
	}
	if w.NeverReady[d] {
		return "ready"
	}
	return ""
}
