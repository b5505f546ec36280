package argocd_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd"
	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
)

func TestResourceTreeShowsPodFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	getUntil(t, ctx, e, 2*time.Second, convergedAt(e.rev1, "v1"))
	require.NoError(t, e.sim.FailImagePull(e.ref.Name))

	tree, err := e.adapter.ResourceTree(ctx, e.ref)
	require.NoError(t, err)
	var kinds []string
	var pod appstate.AppResource
	for _, r := range tree {
		kinds = append(kinds, r.Kind)
		if r.Kind == "Pod" {
			pod = r
		}
	}
	require.Equal(t, []string{"Deployment", "ReplicaSet", "Pod"}, kinds)
	require.Equal(t, appstate.HealthDegraded, pod.Health)
	require.Contains(t, pod.Message, `Back-off pulling image "`+imageRef("v1")+`"`)
	require.Equal(t, "web", pod.Namespace)
}

func TestManagedResourcesShowTargetAndLiveState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	getUntil(t, ctx, e, 2*time.Second, convergedAt(e.rev1, "v1"))

	rs, err := e.adapter.ManagedResources(ctx, e.ref)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	r := rs[0]
	require.Equal(t, argocd.ManagedResource{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", TargetState: r.TargetState, LiveState: r.LiveState}, r)
	require.JSONEq(t, r.TargetState, r.LiveState)
	require.Contains(t, r.TargetState, imageRef("v1"))

	require.NoError(t, e.sim.Drift(e.ref.Name, "spec.replicas"))
	rs, err = e.adapter.ManagedResources(ctx, e.ref)
	require.NoError(t, err)
	require.True(t, rs[0].Modified)
	var live struct {
		Spec struct{ Replicas int } `json:"spec"`
	}
	require.NoError(t, json.Unmarshal([]byte(rs[0].LiveState), &live))
	require.Equal(t, 4, live.Spec.Replicas)
}

func TestSyncPolicyRoundTrips(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()

	p, err := e.adapter.SyncPolicy(ctx, e.ref)
	require.NoError(t, err)
	require.Equal(t, argocd.SyncPolicy{Automated: true}, p)

	for _, want := range []argocd.SyncPolicy{{Automated: true, SelfHeal: true, Prune: true}, {}, {Automated: true, SelfHeal: true}} {
		require.NoError(t, e.adapter.SetSyncPolicy(ctx, e.ref, want))
		got, err := e.adapter.SyncPolicy(ctx, e.ref)
		require.NoError(t, err)
		require.Equal(t, want, got)
		st, err := e.adapter.Get(ctx, e.ref)
		require.NoError(t, err)
		require.Equal(t, want.Automated, st.AutoSync)
		require.Equal(t, want.SelfHeal, st.SelfHeal)
	}
	require.ErrorIs(t, e.adapter.SetSyncPolicy(ctx, e.ref, argocd.SyncPolicy{SelfHeal: true}), fault.ErrUsage)
}

// TestPausedSyncPolicyHoldsACommit is what break-glass relies on: with
// automation off, a commit is seen but not deployed until it is back on.
func TestPausedSyncPolicyHoldsACommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	require.NoError(t, e.adapter.SetSyncPolicy(ctx, e.ref, argocd.SyncPolicy{}))
	rev2 := e.repo.Pin(t, "v2")
	st := getUntil(t, ctx, e, 2*time.Second, func(s appstate.AppState) bool { return s.SyncRevision == rev2 })
	require.Equal(t, appstate.SyncOutOfSync, st.SyncStatus)
	require.Equal(t, []string{imageRef("v1")}, st.Images)

	require.NoError(t, e.adapter.SetSyncPolicy(ctx, e.ref, argocd.SyncPolicy{Automated: true}))
	getUntil(t, ctx, e, 3*time.Second, convergedAt(rev2, "v2"))
}

func TestHistoryListsFullSyncsButNotSelfHeals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *argosim.AppConfig) { c.SelfHeal = true })
	ctx := t.Context()
	rev2 := e.repo.Pin(t, "v2")
	getUntil(t, ctx, e, 3*time.Second, convergedAt(rev2, "v2"))
	require.NoError(t, e.sim.Drift(e.ref.Name, "spec.replicas"))
	require.Eventually(t, func() bool {
		objs, err := e.adapter.AppObjects(ctx, e.ref)
		return err == nil && len(objs) == 1 && objs[0].SelfHealSyncs == 1
	}, 3*time.Second, 20*time.Millisecond, "the self-heal is seen in the last operation")
	rev3 := e.repo.Pin(t, "v3")
	getUntil(t, ctx, e, 3*time.Second, convergedAt(rev3, "v3"))

	h, err := e.adapter.History(ctx, e.ref)
	require.NoError(t, err)
	require.Equal(t, []string{e.rev1, rev2, rev3}, []string{h[0].Revision, h[1].Revision, h[2].Revision},
		"as Argo CD 2.x: the self-heal of rev2, a partial sync, is not in history")
	require.Equal(t, []int64{0, 1, 2}, []int64{h[0].ID, h[1].ID, h[2].ID})
	require.True(t, h[1].Automated)
	require.True(t, h[2].Automated)
	require.False(t, h[1].DeployedAt.Before(h[1].DeployStartedAt))
	require.False(t, h[2].DeployedAt.Before(h[1].DeployedAt))
}
