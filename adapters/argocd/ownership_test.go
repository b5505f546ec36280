package argocd_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd"
	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/ownership"
)

const webTarget = `{"apiVersion":"apps/v1","kind":"Deployment",
 "metadata":{"name":"web","namespace":"web","labels":{"app.kubernetes.io/instance":"web-staging"}},
 "spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"web","image":"registry.example.com/web@sha256:00"},{"name":"proxy","image":"envoy:1"}]}}}}`

func TestOwnedObjectsCarryFieldsIgnoreDifferencesAndSelfHeals(t *testing.T) {
	t.Parallel()
	app := argocd.AppFacts{
		Name:   "web-staging",
		Policy: argocd.SyncPolicy{Automated: true, SelfHeal: true},
		IgnoreDifferences: []argocd.IgnoreDifference{
			{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"},
				JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "proxy") | .image`, ".metadata.annotations[\"a.b/c\"]", "not a path"}},
			{Group: "apps", Kind: "Deployment", Name: "other", JSONPointers: []string{"/spec/paused"}},
			{Kind: "Service", JSONPointers: []string{"/spec/clusterIP"}},
		},
		History: []argocd.HistoryEntry{
			{ID: 0, Revision: "r1", Automated: true},
			{ID: 1, Revision: "r2", Automated: true},
			{ID: 2, Revision: "r2", Automated: true},
			{ID: 3, Revision: "r2", Username: "alice"},
			{ID: 4, Revision: "r2", Automated: true},
			{ID: 5, Revision: "r2", Automated: true},
		},
	}
	objs, err := argocd.OwnedObjects(app, []argocd.ManagedResource{
		{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", TargetState: webTarget},
		{Kind: "Service", Namespace: "web", Name: "web", TargetState: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"name":"http","port":80}]}}`},
		{Kind: "ConfigMap", Namespace: "web", Name: "gone"},
	})
	require.NoError(t, err)
	require.Len(t, objs, 3)

	web := objs[0]
	require.Equal(t, "apps/Deployment web/web", web.KubeKey())
	require.Equal(t, []string{
		`metadata.labels["app.kubernetes.io/instance"]`, "spec.replicas",
		"spec.template.spec.containers[proxy].image", "spec.template.spec.containers[web].image",
	}, web.Fields)
	require.Equal(t, []string{"spec.replicas", "spec.template.spec.containers[proxy].image", `metadata.annotations["a.b/c"]`}, web.IgnoredFields,
		"pointers and jq paths in the same scheme; an entry for another name does not apply; an unreadable jq path is not counted")
	require.True(t, web.Automated)
	require.True(t, web.SelfHeal)
	require.Equal(t, "r2", web.Revision)
	require.Equal(t, 3, web.SelfHealSyncs, "automated repeats of r2; the first deploy and the manual sync are not self-heals")

	require.Equal(t, []string{"spec.clusterIP"}, objs[1].IgnoredFields)
	require.Equal(t, []string{"spec.ports[http].port"}, objs[1].Fields)
	require.Empty(t, objs[2].Fields, "pruned from Git: still managed, no fields known")

	_, err = argocd.OwnedObjects(app, []argocd.ManagedResource{{Kind: "Secret", Name: "s", TargetState: `{"data":{"password":"hunter2"`}})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
}

func TestJQPathField(t *testing.T) {
	t.Parallel()
	obj := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web"}}}}
	for expr, want := range map[string]string{
		".spec.replicas":                      "spec.replicas",
		".spec.containers[0].image":           "spec.containers[web].image",
		".spec.containers[].image":            "spec.containers[*].image",
		".spec.containers[]?.image":           "spec.containers[*].image",
		`.metadata.labels."a.b/c"`:            `metadata.labels["a.b/c"]`,
		`.spec.x[] | select(.name=="a") | .y`: "spec.x[a].y",
	} {
		got, ok := argocd.JQPathField(expr, obj)
		require.True(t, ok, expr)
		require.Equal(t, want, got, expr)
	}
	for _, expr := range []string{"", "map(.x)", `select(.name == "a")`, ".a | .b[x]"} {
		_, ok := argocd.JQPathField(expr, obj)
		require.False(t, ok, expr)
	}
}

// TestOwnershipSourceReadsTheAppFromTheSimulator reads an application over
// argo-cd's real apiclient, then drifts it three times: each self-heal
// re-syncs the same revision, which the history shows.
func TestOwnershipSourceReadsTheAppFromTheSimulator(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *argosim.AppConfig) { c.SelfHeal = true; c.Replicas = 2 })
	src := e.adapter.OwnershipSource()
	wenv := workflow.Environment{Name: "staging", ArgoCD: workflow.ArgoCDTarget{App: "web-staging"}}

	objs, err := src.ManagedObjects(t.Context(), wenv)
	require.NoError(t, err)
	require.Len(t, objs, 1)
	web := objs[0]
	require.Equal(t, ownership.OwnerArgoCD, web.Manager)
	require.Equal(t, "web-staging", web.App)
	require.Equal(t, "apps/Deployment web/web", web.KubeKey())
	require.Contains(t, web.Fields, "spec.replicas")
	require.Contains(t, web.Fields, "spec.template.spec.containers[web].image")
	require.True(t, web.Automated)
	require.True(t, web.SelfHeal)
	require.Equal(t, e.rev1, web.Revision)
	require.Zero(t, web.SelfHealSyncs)

	for i := range 3 {
		require.NoError(t, e.sim.Drift("web-staging", "spec.replicas"))
		require.Eventually(t, func() bool {
			objs, err := src.ManagedObjects(t.Context(), wenv)
			return err == nil && objs[0].SelfHealSyncs == i+1
		}, 10*time.Second, 50*time.Millisecond, "self-heal %d", i+1)
	}

	fs := ownership.Check(ownership.Map{File: "ownership.yaml", Rules: []ownership.Rule{
		{Line: 2, Match: ownership.Match{Kind: "Deployment"}, Owner: ownership.OwnerArgoCD},
	}}, mustObjects(t, src, wenv))
	require.Len(t, fs, 1)
	require.Equal(t, ownership.CodeDriftLoop, fs[0].Code)
	require.Equal(t, "argocd app web-staging", fs[0].Subject)

	_, err = e.adapter.OwnershipSource("no-such-app").ManagedObjects(t.Context(), wenv)
	require.ErrorIs(t, err, argocd.ErrTokenRejected, "an app that cannot be read fails the source rather than vanishing from the check")
}

func mustObjects(t *testing.T, src workflow.OwnershipSource, env workflow.Environment) []ownership.ManagedObject {
	t.Helper()
	objs, err := src.ManagedObjects(t.Context(), env)
	require.NoError(t, err)
	return objs
}

// TestSelfHealIsReadFromTheLastOperation: Argo CD 2.x keeps a self-heal
// out of history (a partial sync); its last operation says it happened
// and how many times in a row (found on the lab).
func TestSelfHealIsReadFromTheLastOperation(t *testing.T) {
	t.Parallel()
	healed := time.Date(2026, 11, 30, 17, 31, 2, 0, time.UTC)
	res := []argocd.ManagedResource{{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web"}}
	history := []argocd.HistoryEntry{{ID: 0, Revision: "r1", Automated: true}, {ID: 1, Revision: "r2", Automated: true}}
	for _, tc := range []struct {
		name  string
		last  *argocd.SyncAttempt
		heals int
		at    time.Time
	}{
		{"no operation known", nil, 0, time.Time{}},
		{"the deploy of r2 itself", &argocd.SyncAttempt{Revision: "r2", Automated: true, Succeeded: true}, 0, time.Time{}},
		{"a self-heal of r2", &argocd.SyncAttempt{Revision: "r2", Automated: true, Partial: true, SelfHealAttempts: 1, Succeeded: true, FinishedAt: healed}, 1, healed},
		{"three self-heals in a row", &argocd.SyncAttempt{Revision: "r2", Automated: true, Partial: true, SelfHealAttempts: 3, Succeeded: true, FinishedAt: healed}, 3, healed},
		{"a person's partial sync", &argocd.SyncAttempt{Revision: "r2", Partial: true, Succeeded: true, FinishedAt: healed}, 0, time.Time{}},
		{"a self-heal that failed", &argocd.SyncAttempt{Revision: "r2", Automated: true, Partial: true, SelfHealAttempts: 1, FinishedAt: healed}, 0, time.Time{}},
		{"a self-heal of another revision", &argocd.SyncAttempt{Revision: "r1", Automated: true, Partial: true, SelfHealAttempts: 1, Succeeded: true, FinishedAt: healed}, 0, time.Time{}},
		// Argo CD 3.6: a self-heal right after the deploy, from a stale
		// comparison, that applied nothing.
		{"a self-heal that changed nothing", &argocd.SyncAttempt{Revision: "r2", Automated: true, Partial: true, SelfHealAttempts: 1, Succeeded: true, FinishedAt: healed, Unchanged: true}, 0, time.Time{}},
		{"two self-heals, the latest a no-op", &argocd.SyncAttempt{Revision: "r2", Automated: true, Partial: true, SelfHealAttempts: 2, Succeeded: true, FinishedAt: healed, Unchanged: true}, 1, healed},
	} {
		objs, err := argocd.OwnedObjects(argocd.AppFacts{Name: "web", History: history, LastSync: tc.last}, res)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.heals, objs[0].SelfHealSyncs, tc.name)
		require.Equal(t, tc.at, objs[0].LastSelfHeal, tc.name)
		require.Equal(t, "r2", objs[0].Revision, tc.name)
	}
}
