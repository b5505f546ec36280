package ownership_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/ownership"
)

func liveDeployment(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("testdata/live_deployment.json")
	require.NoError(t, err)
	var live map[string]any
	require.NoError(t, json.Unmarshal(data, &live))
	return live
}

func TestLiveFieldManagersNameEachManagersFieldsInTheManifestsScheme(t *testing.T) {
	got := ownership.LiveFieldManagers(liveDeployment(t))
	require.Equal(t, []ownership.FieldManager{
		{Manager: "argocd-controller", Operation: "Apply", Time: time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC), Fields: []string{
			"metadata.finalizers",
			"metadata.labels.tier",
			`metadata.labels["app.kubernetes.io/name"]`,
			"spec.selector",
			"spec.template.metadata.labels.app",
			"spec.template.spec.containers[proxy]",
			"spec.template.spec.containers[web].args",
			"spec.template.spec.containers[web].env[MODE].value",
			"spec.template.spec.containers[web].image",
			"spec.template.spec.containers[web].ports[0].containerPort",
			"spec.template.spec.containers[web].ports[0].protocol",
			"spec.template.spec.containers[web].resources",
		}},
		{Manager: "kubectl", Operation: "Apply", Time: time.Date(2026, 12, 3, 18, 5, 0, 0, time.UTC), Fields: []string{"spec.template.spec.nodeSelector.type"}},
		{Manager: "kube-controller-manager", Operation: "Update", Subresource: "scale", Time: time.Date(2026, 12, 3, 18, 10, 0, 0, time.UTC), Fields: []string{"spec.replicas"}},
	}, got, "the status subresource's entry and the malformed one are left out")
}

// Every field a manifest sets, held by one manager, reads back as the
// manifest's own paths: the two schemes compare equal.
func TestManagedFieldPathsAgreeWithFieldPathsOfTheSameObject(t *testing.T) {
	live := liveDeployment(t)
	var all []string
	for _, fm := range ownership.LiveFieldManagers(live) {
		all = append(all, fm.Fields...)
	}
	slices.Sort(all)
	want := ownership.FieldPaths(live)
	// spec.selector is held whole by its manager (an atomic map);
	// FieldPaths descends into it, and FieldCovers relates the two.
	for _, f := range want {
		covered := slices.ContainsFunc(all, func(p string) bool { return ownership.FieldCovers(p, f) })
		if f == "metadata.annotations[\"deployment.kubernetes.io/revision\"]" {
			require.False(t, covered, "no manager in the fixture holds the revision annotation")
			continue
		}
		require.True(t, covered, "field %s of the manifest is held by a manager", f)
	}
}

func TestManagedFieldPathsOfAListElementGoneFromTheLiveObject(t *testing.T) {
	set := map[string]any{"f:spec": map[string]any{"f:containers": map[string]any{
		`k:{"name":"old"}`:      map[string]any{".": map[string]any{}, "f:image": map[string]any{}},
		`k:{"containerPort":9}`: map[string]any{"f:protocol": map[string]any{}},
		`k:not json`:            map[string]any{},
		"i:2":                   map[string]any{"f:image": map[string]any{}},
		"i:-1":                  map[string]any{},
	}}}
	require.Equal(t, []string{"spec.containers[old].image"}, ownership.ManagedFieldPaths(set, nil),
		"a named element keeps its name; one that cannot be placed is left out")
	only := map[string]any{"f:spec": map[string]any{"f:ports": map[string]any{`k:{"containerPort":9}`: map[string]any{}}}}
	require.Equal(t, []string{"spec.ports"}, ownership.ManagedFieldPaths(only, nil), "alone, it counts as the list it is in")
}

func FuzzLiveFieldManagers(f *testing.F) {
	data, err := os.ReadFile("testdata/live_deployment.json")
	require.NoError(f, err)
	f.Add(data)
	f.Add([]byte(`{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:a":{"k:{\"name\":1}":{}}}}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var live map[string]any
		if json.Unmarshal(data, &live) != nil {
			return
		}
		for _, fm := range ownership.LiveFieldManagers(live) {
			require.NotEmpty(t, fm.Fields)
			require.True(t, slices.IsSorted(fm.Fields))
		}
	})
}
