package render_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/adapters/render"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/ownership"
)

// envRepo is a real environment repository: a base and a prod overlay with
// a strategic-merge patch, a JSON patch, an image override, a name prefix
// and a namespace; a directory of plain manifests (multi-document); a Helm
// values file; a kustomization that inflates a chart.
var envRepo = map[string]string{
	"apps/web/base/kustomization.yaml": `resources:
  - deployment.yaml
  - service.yaml
`,
	"apps/web/base/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.example/web:1.0
          ports: [{containerPort: 8080}]
`,
	"apps/web/base/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`,
	"apps/web/prod/kustomization.yaml": `resources:
  - ../base
namespace: web-prod
namePrefix: prod-
images:
  - name: registry.example/web
    digest: sha256:` + strings.Repeat("a", 64) + `
patches:
  - path: replicas.yaml
  - target: {kind: Service, name: web}
    patch: |-
      - op: add
        path: /metadata/annotations
        value: {team: payments}
`,
	"apps/web/prod/replicas.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
`,
	"apps/plain/deploy.yaml": `# two objects in one file
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: web
data:
  mode: fast
---
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
  namespace: web
spec:
  replicas: 2
`,
	"apps/plain/extra.json": `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token", "namespace": "web"}, "stringData": {"token": "hunter2"}}]}`,
	"apps/plain/README.md":  "not a manifest\n",
	"apps/plain/nested/ignored.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: nested}
`,
	"apps/chart/values.yaml": "image:\n  repository: registry.example/web\n  digest: sha256:abc\nreplicaCount: 2\n",
	"apps/inflate/kustomization.yaml": `helmCharts:
  - name: web
    repo: https://charts.example
    version: 1.0.0
`,
}

// snapshot commits envRepo to a real Git repository and reads it back
// through the environment repository adapter.
func snapshot(t *testing.T) render.Snapshot {
	t.Helper()
	dir := t.TempDir()
	for name, content := range envRepo {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "env"}} {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	a, err := gitrepo.New(gitrepo.Options{})
	require.NoError(t, err)
	return func(ctx context.Context, tg workflow.EnvRepoTarget) (map[string][]byte, string, error) {
		tg.Path = dir
		s, err := a.Snapshot(ctx, tg)
		return s.Files, s.Revision, err
	}
}

func env(file, format string) workflow.Environment {
	return workflow.Environment{Name: "prod",
		EnvRepo: workflow.EnvRepoTarget{Path: "/unused", Branch: "main", File: file, Image: "registry.example/web", Format: format, ValuesPath: "image.digest"},
		ArgoCD:  workflow.ArgoCDTarget{App: "web-prod"}}
}

func byKey(objs []ownership.ManagedObject) map[string]ownership.ManagedObject {
	m := map[string]ownership.ManagedObject{}
	for _, o := range objs {
		m[o.KubeKey()] = o
	}
	return m
}

func TestKustomizeOverlayRendersAsArgoCDWould(t *testing.T) {
	t.Parallel()
	src := render.New(snapshot(t), nil)
	d, err := src.DesiredObjects(t.Context(), env("apps/web/prod/kustomization.yaml", workflow.FormatKustomize))
	require.NoError(t, err)
	require.Empty(t, d.Unverified)
	require.Equal(t, "web-prod", d.App)
	require.Regexp(t, `^kustomize apps/web/prod at [0-9a-f]{7}$`, d.Source)
	objs := byKey(d.Objects)
	require.Len(t, objs, 2)
	dep, ok := objs["apps/Deployment web-prod/prod-web"]
	require.True(t, ok, "namespace and namePrefix applied: %v", objs)
	require.Equal(t, ownership.OwnerArgoCD, dep.Manager)
	require.Equal(t, "web-prod", dep.App)
	require.Contains(t, dep.Fields, "spec.replicas", "the patch's field")
	require.Contains(t, dep.Fields, "spec.template.spec.containers[web].image")
	require.Contains(t, dep.Fields, "spec.template.spec.containers[web].ports[0].containerPort")
	svc, ok := objs["core/Service web-prod/prod-web"]
	require.True(t, ok)
	require.Contains(t, svc.Fields, "metadata.annotations.team", "the JSON patch's field")
	for _, o := range d.Objects {
		for _, f := range o.Fields {
			require.NotContains(t, f, "config.kubernetes.io", "kustomize's build annotations are not desired state")
		}
	}
}

func TestPlainManifestsDirectoryReadsEveryDocument(t *testing.T) {
	t.Parallel()
	src := render.New(snapshot(t), nil)
	d, err := src.DesiredObjects(t.Context(), env("apps/plain/deploy.yaml", workflow.FormatManifest))
	require.NoError(t, err)
	require.Empty(t, d.Unverified)
	objs := byKey(d.Objects)
	keys := make([]string, 0, len(objs))
	for k := range objs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	require.Equal(t, []string{"apps/Deployment web/worker", "core/ConfigMap web/settings", "core/Secret web/token"}, keys, "both documents, the List's item, no nested directory")
	require.Equal(t, []string{"data.mode"}, objs["core/ConfigMap web/settings"].Fields)
	require.Equal(t, []string{"stringData.token"}, objs["core/Secret web/token"].Fields, "paths only, never values")
}

// Without a Helm renderer (relcap-argocd renders charts) a Helm
// application is unverified, with what was read.
func TestHelmApplicationWithoutARendererIsUnverified(t *testing.T) {
	t.Parallel()
	src := render.New(snapshot(t), nil)
	d, err := src.DesiredObjects(t.Context(), env("apps/chart/values.yaml", workflow.FormatHelmValues))
	require.NoError(t, err)
	require.Empty(t, d.Objects)
	require.Equal(t, "the chart's templates are not rendered here (values file apps/chart/values.yaml read: top-level keys image, replicaCount)", d.Unverified)

	d, err = src.DesiredObjects(t.Context(), env("apps/inflate/kustomization.yaml", workflow.FormatKustomize))
	require.NoError(t, err)
	require.Contains(t, d.Unverified, "inflates Helm charts")
}

func TestRenderRefusesBrokenSourcesNamingTheFile(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{
		"a/bad.yaml":           []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: c2VjcmV0}\n---\nkey: [unclosed\n"),
		"b/kustomization.yaml": []byte("resources: [missing.yaml]\n"),
		"c/values.yaml":        []byte("- a list\n"),
	}
	_, err := render.Render(t.Context(), files, workflow.EnvRepoTarget{File: "a/bad.yaml", Format: workflow.FormatManifest}, "app", nil)
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Equal(t, "invalid input: a/bad.yaml: document 2 is not YAML relcap can read; fix it in the environment repository", err.Error())
	_, err = render.Render(t.Context(), files, workflow.EnvRepoTarget{File: "b/kustomization.yaml", Format: workflow.FormatKustomize}, "app", nil)
	require.ErrorContains(t, err, "kustomize build b:")
	_, err = render.Render(t.Context(), files, workflow.EnvRepoTarget{File: "c/values.yaml", Format: workflow.FormatHelmValues}, "app", nil)
	require.ErrorContains(t, err, "c/values.yaml is not a mapping of values")
	_, err = render.Render(t.Context(), files, workflow.EnvRepoTarget{File: "z/kustomization.yaml", Format: workflow.FormatKustomize}, "app", nil)
	require.ErrorContains(t, err, "z has no kustomization.yaml")
}
