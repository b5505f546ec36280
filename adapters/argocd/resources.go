package argocd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/argoproj/argo-cd/v2/pkg/apiclient/application"
	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/fault"
)

// ResourceTree returns every node of the application's resource tree
// (Deployments and the ReplicaSets and Pods under them, and so on) with
// its health, so failures that only Pods show — an image that cannot be
// pulled, a readiness probe that fails — can be reported. Status (sync
// status) is empty: the tree does not carry it.
func (a *Adapter) ResourceTree(ctx context.Context, ref appstate.AppRef) ([]appstate.AppResource, error) {
	tree, err := call(ctx, a, ref, "read resource tree of", func(ctx context.Context, apps application.ApplicationServiceClient, name string, ns *string) (*v1alpha1.ApplicationTree, error) {
		return apps.ResourceTree(ctx, &application.ResourcesQuery{ApplicationName: &name, AppNamespace: ns})
	})
	if err != nil {
		return nil, err
	}
	out := make([]appstate.AppResource, 0, len(tree.Nodes))
	for _, n := range tree.Nodes {
		r := appstate.AppResource{Group: n.Group, Kind: n.Kind, Namespace: n.Namespace, Name: n.Name, Images: n.Images}
		if n.Health != nil {
			r.Health, r.Message = appstate.HealthStatus(n.Health.Status), n.Health.Message
		}
		if len(n.ParentRefs) > 0 {
			p := n.ParentRefs[0]
			r.Parent = appstate.AppResource{Kind: p.Kind, Namespace: p.Namespace, Name: p.Name}.Key()
		}
		out = append(out, r)
	}
	return out, nil
}

// ManagedResource is one Kubernetes object an application manages: its
// desired state as Git renders it and its live state in the cluster.
type ManagedResource struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// TargetState is the object as rendered from Git, as JSON; empty when
	// Git no longer has it (it would be pruned).
	TargetState string `json:"target_state,omitempty"`
	// LiveState is the object in the cluster, as JSON; empty when it does
	// not exist yet.
	LiveState string `json:"live_state,omitempty"`
	// Modified is Argo CD's verdict that live differs from target.
	Modified bool `json:"modified"`
}

// ManagedResources returns the objects the application manages with their
// target and live states, for the ownership check (which fields Argo CD
// writes) and for drift evidence.
func (a *Adapter) ManagedResources(ctx context.Context, ref appstate.AppRef) ([]ManagedResource, error) {
	resp, err := call(ctx, a, ref, "read managed resources of", func(ctx context.Context, apps application.ApplicationServiceClient, name string, ns *string) (*application.ManagedResourcesResponse, error) {
		return apps.ManagedResources(ctx, &application.ResourcesQuery{ApplicationName: &name, AppNamespace: ns})
	})
	if err != nil {
		return nil, err
	}
	out := make([]ManagedResource, 0, len(resp.Items))
	for _, d := range resp.Items {
		if d == nil {
			continue
		}
		out = append(out, ManagedResource{
			Group: d.Group, Kind: d.Kind, Namespace: d.Namespace, Name: d.Name,
			TargetState: absentIfNull(d.TargetState), LiveState: absentIfNull(d.LiveState), Modified: d.Modified,
		})
	}
	return out, nil
}

// absentIfNull maps Argo CD's JSON "null" for a missing object to "".
func absentIfNull(s string) string {
	if s == "null" {
		return ""
	}
	return s
}

// SyncPolicy is an application's automated sync policy, as the domain names
// it.
type SyncPolicy = workflow.SyncPolicy

var _ breakglass.ReconcileControl = (*Adapter)(nil)

// Drift lists the managed resources whose live state differs from Git, with
// both states, for break-glass status and capture.
func (a *Adapter) Drift(ctx context.Context, ref appstate.AppRef) ([]breakglass.Drift, error) {
	resources, err := a.ManagedResources(ctx, ref)
	if err != nil {
		return nil, err
	}
	var out []breakglass.Drift
	for _, r := range resources {
		if r.Modified {
			out = append(out, breakglass.Drift{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Desired: r.TargetState, Live: r.LiveState})
		}
	}
	return out, nil
}

// SyncPolicy returns the application's automated sync policy.
func (a *Adapter) SyncPolicy(ctx context.Context, ref appstate.AppRef) (SyncPolicy, error) {
	app, err := a.getApp(ctx, ref)
	if err != nil {
		return SyncPolicy{}, err
	}
	var p SyncPolicy
	if sp := app.Spec.SyncPolicy; sp != nil && sp.Automated != nil {
		p = SyncPolicy{Automated: true, SelfHeal: sp.Automated.SelfHeal, Prune: sp.Automated.Prune}
	}
	return p, nil
}

// SetSyncPolicy sets spec.syncPolicy.automated with a JSON merge patch,
// which leaves the rest of the spec (sync options, retry) alone and needs
// only the "update" permission. Turning automation off removes the
// automated block, as argocd app set --sync-policy none does. It checks
// that the server applied the policy.
func (a *Adapter) SetSyncPolicy(ctx context.Context, ref appstate.AppRef, p SyncPolicy) error {
	if !p.Automated && (p.SelfHeal || p.Prune) {
		return fmt.Errorf("%w: application %s: self-heal and prune apply to automated sync only", fault.ErrUsage, ref.Name)
	}
	name, ns, err := a.appQuery(ref)
	if err != nil {
		return err
	}
	var automated any // nil deletes the block
	if p.Automated {
		automated = map[string]bool{"selfHeal": p.SelfHeal, "prune": p.Prune}
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"syncPolicy": map[string]any{"automated": automated}}})
	if err != nil {
		return fmt.Errorf("encode sync policy patch: %w", err)
	}
	apps, err := a.client(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := a.callContext(ctx)
	defer cancel()
	patchStr, patchType := string(patch), "merge"
	app, err := apps.Patch(cctx, &application.ApplicationPatchRequest{Name: &name, AppNamespace: ns, Patch: &patchStr, PatchType: &patchType})
	if err != nil {
		return a.callError(ctx, "set sync policy of", ref.Name, err)
	}
	var got SyncPolicy
	if sp := app.Spec.SyncPolicy; sp != nil && sp.Automated != nil {
		got = SyncPolicy{Automated: true, SelfHeal: sp.Automated.SelfHeal, Prune: sp.Automated.Prune}
	}
	if got != p {
		return fmt.Errorf("argo cd at %s did not apply the sync policy of %s: want %+v, have %+v", a.server, ref.Name, p, got)
	}
	return nil
}

// HistoryEntry is one successful sync in an application's history.
type HistoryEntry struct {
	// ID is Argo CD's history ID, the one argocd app rollback takes.
	ID       int64  `json:"id"`
	Revision string `json:"revision"`
	// DeployStartedAt is zero when the server did not record it.
	DeployStartedAt time.Time `json:"deploy_started_at,omitzero"`
	DeployedAt      time.Time `json:"deployed_at"`
	// Automated is true for automated syncs, self-heal included.
	Automated bool `json:"automated"`
	// Username is who asked for a manual sync, when Argo CD knows.
	Username string `json:"username,omitempty"`
}

// History returns the application's deployment history, oldest first, as
// Argo CD keeps it (by default its last 10 syncs).
func (a *Adapter) History(ctx context.Context, ref appstate.AppRef) ([]HistoryEntry, error) {
	app, err := a.getApp(ctx, ref)
	if err != nil {
		return nil, err
	}
	out := make([]HistoryEntry, 0, len(app.Status.History))
	for _, h := range app.Status.History {
		e := HistoryEntry{ID: h.ID, Revision: h.Revision, DeployedAt: h.DeployedAt.Time, Automated: h.InitiatedBy.Automated, Username: h.InitiatedBy.Username}
		if e.Revision == "" && len(h.Revisions) > 0 {
			e.Revision = h.Revisions[0]
		}
		if h.DeployStartedAt != nil {
			e.DeployStartedAt = h.DeployStartedAt.Time
		}
		out = append(out, e)
	}
	return out, nil
}
