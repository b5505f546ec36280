package remote_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/remote"
	"github.com/relcap/relcap/adapters/argocd/remote/remotetest"
	"github.com/relcap/relcap/adapters/render"
	"github.com/relcap/relcap/workflow"
)

// TestAHelmChartIsRenderedInTheHelper: render.Source with the pool's
// RenderHelm renders a Helm application through the real helper, with no
// Argo CD server at all; only the chart's files cross the pipe.
func TestAHelmChartIsRenderedInTheHelper(t *testing.T) {
	t.Parallel()
	remotetest.Helper(t)
	files := map[string][]byte{
		"charts/web/Chart.yaml":                []byte("apiVersion: v2\nname: web\nversion: 1.0.0\n"),
		"charts/web/values.yaml":               []byte("replicas: 1\n"),
		"charts/web/values-prod.yaml":          []byte("replicas: 3\n"),
		"charts/web/templates/deployment.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.replicas }}\n"),
		"other/big.yaml":                       make([]byte, 1<<20),
	}
	pool := remote.NewPool(&workflow.Project{}, remote.Config{Build: testBuild})
	defer pool.Close()
	src := render.New(func(context.Context, workflow.EnvRepoTarget) (map[string][]byte, string, error) {
		return files, "abcdef0123", nil
	}, pool.RenderHelm)
	d, err := src.DesiredObjects(t.Context(), workflow.Environment{Name: "prod",
		EnvRepo: workflow.EnvRepoTarget{File: "charts/web/values-prod.yaml", Format: workflow.FormatHelmValues, ValuesPath: "image.digest"},
		ArgoCD:  workflow.ArgoCDTarget{App: "web-prod"}})
	require.NoError(t, err)
	require.Empty(t, d.Unverified)
	require.Equal(t, "helm chart charts/web with charts/web/values-prod.yaml at abcdef0", d.Source)
	require.Len(t, d.Objects, 1)
	require.Equal(t, "web-prod", d.Objects[0].Name, "the release is the application")
	require.Contains(t, d.Objects[0].Fields, "spec.replicas")

	require.Len(t, render.ChartFiles(files, "charts/web/values-prod.yaml"), 4, "the chart's files only")

	_, _, unrendered, err := pool.RenderHelm(t.Context(), files, "other/values.yaml", "x")
	require.NoError(t, err)
	require.Contains(t, unrendered, "no Chart.yaml in other or above it")
}
