package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/adapters/terraform"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/setup"
)

// TestInitOnTheLabLayout runs relcap init's use case, with the adapters
// relcap init wires, on the layout relcap-lab up writes (its Terraform
// roots, and its bare environment repository of plain manifests under
// git/), made by the lab's own renderers without starting a lab. What it
// writes is what relcap validate accepts, and finds what the lab's own
// relcap.yaml names.
func TestInitOnTheLabLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := testLab()
	l.Dir, l.EnvRepo = dir, filepath.Join(dir, "git", EnvRepoName)
	for _, env := range Envs {
		p := filepath.Join(dir, "infra", env, "main.tf")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(RenderTerraformRoot(env)), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(l.EnvRepo), 0o755))
	files := map[string]string{}
	for _, env := range Envs {
		files[ManifestPath(env)] = RenderDeployment(env, l.repository(env)+"@sha256:"+strings.Repeat("ab", 32))
	}
	_, err := CreateEnvRepo(t.Context(), l.EnvRepo, files)
	require.NoError(t, err)

	res, err := setup.Run(t.Context(), setup.Request{Dir: dir, Schema: "relcap.schema.json"},
		setup.Finders{Terraform: terraform.RootFinder{}, EnvRepos: gitrepo.Surveyor{}}, setup.Defaults{})
	require.NoError(t, err)
	require.Len(t, res.Written, 2)

	proj, err := config.Load(filepath.Join(dir, "relcap.yaml"))
	require.NoError(t, err, "relcap validate accepts what init wrote on the lab's layout")
	require.Len(t, proj.Environments, len(Envs))
	for i, env := range Envs {
		e := proj.Environments[i]
		require.Equal(t, env, e.Name)
		require.Equal(t, env == "prod", e.Production)
		require.Equal(t, l.EnvRepo, e.EnvRepo.Path)
		require.Equal(t, "main", e.EnvRepo.Branch)
		require.Equal(t, ManifestPath(env), e.EnvRepo.File)
		require.Equal(t, "manifest", e.EnvRepo.Format)
		require.Equal(t, AppName, e.EnvRepo.Image)
		require.Equal(t, l.repository(env), e.Registry.Repository)
		require.Equal(t, ArgoApp(env), e.ArgoCD.App)
		require.Equal(t, filepath.Join(dir, "infra", env), e.Terraform.Dir)
	}
}
