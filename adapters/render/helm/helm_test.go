package helm_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/render"
	"github.com/relcap/relcap/adapters/render/helm"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/ownership"
)

// chart is an environment repository with a chart at charts/web: defaults
// in values.yaml, the production values beside it, a helper template, a
// hook, notes, a CRD, a vendored subchart turned on by a condition and one
// turned off.
var chart = map[string]string{
	"charts/web/Chart.yaml": `apiVersion: v2
name: web
version: 1.2.3
dependencies:
  - name: cache
    version: 0.1.0
    condition: cache.enabled
  - name: metrics
    version: 0.1.0
    condition: metrics.enabled
`,
	"charts/web/values.yaml":            "replicaCount: 1\nimage: {repository: registry.example/web, digest: sha256:000}\ncache: {enabled: true}\nmetrics: {enabled: false}\nhpa: false\n",
	"charts/web/values-prod.yaml":       "replicaCount: 3\nimage: {digest: sha256:abc}\nhpa: true\n",
	"charts/web/templates/_helpers.tpl": `{{- define "web.name" -}}{{ .Release.Name }}-web{{- end -}}`,
	"charts/web/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "web.name" . }}
spec:
  {{- if not .Values.hpa }}
  replicas: {{ .Values.replicaCount }}
  {{- end }}
  template:
    spec:
      containers:
        - name: web
          image: "{{ .Values.image.repository }}@{{ .Values.image.digest }}"
`,
	"charts/web/templates/hpa.yaml": `{{- if .Values.hpa }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "web.name" . }}
spec:
  minReplicas: 2
  maxReplicas: 5
{{- end }}
`,
	"charts/web/templates/migrate-job.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    helm.sh/hook: pre-install
`,
	"charts/web/templates/NOTES.txt":     "Thanks for installing {{ .Release.Name }}.\n",
	"charts/web/crds/widgets.yaml":       "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n",
	"charts/web/charts/cache/Chart.yaml": "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
	"charts/web/charts/cache/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cache
data:
  size: "64"
`,
	"charts/web/charts/metrics/Chart.yaml":         "apiVersion: v2\nname: metrics\nversion: 0.1.0\n",
	"charts/web/charts/metrics/templates/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: metrics\n",
	"apps/other/values.yaml":                       "replicaCount: 2\n",
	"charts/remote/Chart.yaml":                     "apiVersion: v2\nname: remote\nversion: 1.0.0\ndependencies:\n  - name: postgresql\n    version: 15.0.0\n    repository: https://charts.example\n",
	"charts/remote/values.yaml":                    "{}\n",
	"charts/broken/Chart.yaml":                     "apiVersion: v2\nname: broken\nversion: 1.0.0\n",
	"charts/broken/templates/x.yaml":               "{{ required \"set .Values.host\" .Values.host }}\n",
	"charts/broken/values.yaml":                    "{}\n",
}

func files() map[string][]byte {
	out := map[string][]byte{}
	for k, v := range chart {
		out[k] = []byte(v)
	}
	return out
}

func kinds(objs []map[string]any) []string {
	var out []string
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		out = append(out, o["kind"].(string)+" "+md["name"].(string))
	}
	slices.Sort(out)
	return out
}

func TestRenderIsHelmTemplateOfTheChartTheValuesConfigure(t *testing.T) {
	t.Parallel()
	objs, dir, unrendered, err := helm.Render(files(), "charts/web/values-prod.yaml", "web-prod")
	require.NoError(t, err)
	require.Empty(t, unrendered)
	require.Equal(t, "charts/web", dir)
	require.Equal(t, []string{
		"ConfigMap web-prod-cache",
		"CustomResourceDefinition widgets.example.com",
		"Deployment web-prod-web",
		"HorizontalPodAutoscaler web-prod-web",
	}, kinds(objs), "the release is the app; the condition's subchart on, the other off; the CRD in, the hook and the notes out")
	for _, o := range objs {
		if o["kind"] == "Deployment" {
			spec := o["spec"].(map[string]any)
			require.NotContains(t, spec, "replicas", "the production values hand replicas to the HPA")
		}
	}

	objs, _, _, err = helm.Render(files(), "charts/web/values.yaml", "web-staging")
	require.NoError(t, err)
	require.Equal(t, []string{"ConfigMap web-staging-cache", "CustomResourceDefinition widgets.example.com", "Deployment web-staging-web"}, kinds(objs))
}

func TestWhatCannotBeRenderedOfflineIsSaidNotGuessed(t *testing.T) {
	t.Parallel()
	for values, want := range map[string]string{
		"apps/other/values.yaml":    "no Chart.yaml in apps/other or above it",
		"charts/remote/values.yaml": "chart charts/remote depends on postgresql, not vendored in its charts/ directory",
		"charts/broken/values.yaml": "helm template of chart charts/broken failed offline: ",
	} {
		objs, _, unrendered, err := helm.Render(files(), values, "app")
		require.NoError(t, err, values)
		require.Empty(t, objs, values)
		require.Contains(t, unrendered, want, values)
	}
	bad := files()
	bad["charts/web/values-prod.yaml"] = []byte("- a list\n")
	_, _, _, err := helm.Render(bad, "charts/web/values-prod.yaml", "app")
	require.ErrorContains(t, err, "charts/web/values-prod.yaml: ")
}

// The renderer plugged into render.Source: the Helm application's objects
// and field paths, compared as any other application's.
func TestRenderSourceWithHelmGivesTheChartsObjects(t *testing.T) {
	t.Parallel()
	fs := files()
	snapshot := func(context.Context, workflow.EnvRepoTarget) (map[string][]byte, string, error) {
		return fs, "0123456789abcdef", nil
	}
	src := render.New(snapshot, func(_ context.Context, files map[string][]byte, valuesFile, release string) ([]map[string]any, string, string, error) {
		return helm.Render(files, valuesFile, release)
	})
	d, err := src.DesiredObjects(t.Context(), workflow.Environment{Name: "prod",
		EnvRepo: workflow.EnvRepoTarget{File: "charts/web/values-prod.yaml", Format: workflow.FormatHelmValues, ValuesPath: "image.digest"},
		ArgoCD:  workflow.ArgoCDTarget{App: "web-prod"}})
	require.NoError(t, err)
	require.Empty(t, d.Unverified)
	require.Equal(t, "helm chart charts/web with charts/web/values-prod.yaml at 0123456", d.Source)
	var dep ownership.ManagedObject
	for _, o := range d.Objects {
		if o.Kind == "Deployment" {
			dep = o
		}
	}
	require.Equal(t, "web-prod", dep.App)
	require.Contains(t, dep.Fields, "spec.template.spec.containers[web].image")
	for _, o := range d.Objects {
		for _, f := range o.Fields {
			require.False(t, strings.Contains(f, "sha256"), "paths only, never values")
		}
	}
}
