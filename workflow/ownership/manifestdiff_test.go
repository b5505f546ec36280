package ownership_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/ownership"
)

func deployment(replicas int, image string) map[string]any {
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "web-staging"},
		"spec": map[string]any{"replicas": float64(replicas), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": image}}}}}}
}

func TestManifestChangesNameTheFieldsAndTheirValues(t *testing.T) {
	got := ownership.ManifestChanges(deployment(5, "registry.invalid/terraform/web:5"), deployment(2, "registry.test/web@sha256:aa"), nil)
	var lines []string
	for _, c := range got {
		lines = append(lines, c.String())
	}
	require.Equal(t, []string{
		"spec.replicas 5 → 2",
		`spec.template.spec.containers[web].image "registry.invalid/terraform/web:5" → "registry.test/web@sha256:aa"`,
	}, lines)

	added := deployment(2, "x")
	added["spec"].(map[string]any)["paused"] = true
	got = ownership.ManifestChanges(deployment(2, "x"), added, nil)
	require.Equal(t, []ownership.FieldChange{{Field: "spec.paused", After: "true"}}, got)
	require.Equal(t, "spec.paused (absent) → true", got[0].String())
	require.Empty(t, ownership.ManifestChanges(added, added, nil))
}

func TestManifestChangesNeverShowASecretsValue(t *testing.T) {
	secret := func(pw string) map[string]any {
		return map[string]any{"kind": "Secret", "metadata": map[string]any{"name": "db", "labels": map[string]any{"v": pw[:1]}},
			"data": map[string]any{"password": pw}, "stringData": map[string]any{"token": pw}}
	}
	got := ownership.ManifestChanges(secret("aHVudGVyMg=="), secret("c3dvcmRmaXNo"), nil)
	require.Equal(t, []ownership.FieldChange{
		{Field: "data.password", Masked: true},
		{Field: "metadata.labels.v", Before: `"a"`, After: `"c"`},
		{Field: "stringData.token", Masked: true},
	}, got)
	// A value the caller knows to be secret is masked in any kind.
	cm := func(v string) map[string]any {
		return map[string]any{"kind": "ConfigMap", "data": map[string]any{"url": v}}
	}
	got = ownership.ManifestChanges(cm("postgres://u:hunter2@db"), cm("postgres://u:swordfish@db"),
		func(s string) bool { return strings.Contains(s, "hunter2") || strings.Contains(s, "swordfish") })
	require.Equal(t, []ownership.FieldChange{{Field: "data.url", Masked: true}}, got)
	require.Equal(t, "data.url changed (value masked)", got[0].String())
}
