package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/adapters/argocd/argosim/argosimtest"
)

// handMadeRelease writes a release repository with two Terraform roots
// (dev, prod, which uses a local module that is not a root) and, beside
// it, an environment repository with kustomize overlays, committed on
// main. It returns the release repository.
func handMadeRelease(t *testing.T) string {
	t.Helper()
	parent := t.TempDir()
	release, env := filepath.Join(parent, "release"), filepath.Join(parent, "env")
	files := map[string]string{
		"release/infra/dev/main.tf":            "terraform {\n  backend \"local\" {}\n}\nresource \"terraform_data\" \"web\" {\n  input = \"dev\"\n}\n",
		"release/infra/prod/main.tf":           "terraform {\n  required_providers {\n  }\n}\nmodule \"net\" {\n  source = \"../../modules/net\"\n}\n",
		"release/modules/net/main.tf":          "resource \"terraform_data\" \"net\" {}\n",
		"release/infra/prod/variables.tf":      "variable \"replicas\" {\n  default = 2\n}\n",
		"env/base/kustomization.yaml":          "resources: [deployment.yaml]\n",
		"env/base/deployment.yaml":             "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers: [{name: web, image: web}]\n",
		"env/overlays/dev/kustomization.yaml":  "resources: [../../base]\nimages:\n  - name: web\n    newName: registry.example.com/dev/web\n    newTag: \"1.0\"\n",
		"env/overlays/prod/kustomization.yaml": "resources: [../../base]\nimages:\n  - name: web\n    newName: registry.example.com/prod/web\n    newTag: \"1.0\"\n",
	}
	for name, content := range files {
		p := filepath.Join(parent, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	gitRun(t, env, "init", "-q", "-b", "main")
	gitRun(t, env, "add", ".")
	gitRun(t, env, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "env")
	return release
}

func TestInitYesWritesWhatValidateAccepts(t *testing.T) {
	t.Parallel()
	release := handMadeRelease(t)
	data := t.TempDir()
	code, out, errOut := invoke(t, data, "init", "--yes", "--dir", release)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "Terraform roots: 2")
	require.Contains(t, out, "dev → prod")

	cfg, err := os.ReadFile(filepath.Join(release, "relcap.yaml"))
	require.NoError(t, err)
	s := string(cfg)
	require.True(t, strings.HasPrefix(s, "# yaml-language-server: $schema=https://"), s)
	for _, want := range []string{
		"dir: infra/dev", "dir: infra/prod", "path: ../env", "branch: main",
		"file: overlays/prod/kustomization.yaml", "repository: registry.example.com/prod/web",
		"format: kustomize", "app: web-dev", "production: true",
		// Commented key by key, from the loader's reference.
		"# The root module's directory, relative to this file.\n",
	} {
		require.Contains(t, s, want)
	}
	require.NotContains(t, s, "modules/net", "a module is not a root")

	code, out, errOut = invoke(t, data, "-c", filepath.Join(release, "relcap.yaml"), "validate")
	require.Equal(t, 0, code, out+errOut)
	_, err = os.Stat(filepath.Join(data, "relcap"))
	require.ErrorIs(t, err, os.ErrNotExist, "init records nothing: no ledger")
}

func TestInitRefusesToOverwrite(t *testing.T) {
	t.Parallel()
	release := handMadeRelease(t)
	data := t.TempDir()
	mine := []byte("# the captain's own\n")
	require.NoError(t, os.WriteFile(filepath.Join(release, "ownership.yaml"), mine, 0o644))

	code, out, errOut := invoke(t, data, "init", "--yes", "--dir", release)
	require.Equal(t, exitUsage, code, out+errOut)
	require.Contains(t, errOut, "ownership.yaml exists and was not overwritten")
	require.Contains(t, errOut, "--force")
	got, err := os.ReadFile(filepath.Join(release, "ownership.yaml"))
	require.NoError(t, err)
	require.Equal(t, mine, got)
	_, err = os.Stat(filepath.Join(release, "relcap.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing is written when one file may not be")

	// Answering no is the same refusal; --force replaces.
	code, out, errOut = invokeStdin(t, data, "n\n", "init", "--dir", release)
	require.Equal(t, exitUsage, code, out+errOut)
	code, out, errOut = invoke(t, data, "init", "--yes", "--force", "--dir", release)
	require.Equal(t, 0, code, out+errOut)
	got, err = os.ReadFile(filepath.Join(release, "ownership.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(got), "owner: terraform")
}

func TestInitTakesAnswersFromStdin(t *testing.T) {
	t.Parallel()
	release := handMadeRelease(t)
	data := t.TempDir()
	// app, envrepo path, environments, then per environment: terraform
	// dir, file, format, image, repository, argocd app, production.
	answers := strings.Join([]string{
		"shop", "", "dev, prod",
		"", "", "", "", "registry.example.com/team/dev/web", "shop-dev-app", "",
		"", "", "", "", "", "", "y",
	}, "\n") + "\n"
	code, out, errOut := invokeStdin(t, data, answers, "init", "--dir", release, "--schema-url", "../schema.json")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "Application name [web]: ")
	cfg, err := os.ReadFile(filepath.Join(release, "relcap.yaml"))
	require.NoError(t, err)
	s := string(cfg)
	require.True(t, strings.HasPrefix(s, "# yaml-language-server: $schema=../schema.json\n"), s)
	for _, want := range []string{"app: shop\n", "repository: registry.example.com/team/dev/web", "app: shop-dev-app", "app: shop-prod"} {
		require.Contains(t, s, want)
	}
	code, out, errOut = invoke(t, data, "-c", filepath.Join(release, "relcap.yaml"), "validate")
	require.Equal(t, 0, code, out+errOut)

	// A bad answer is asked again, and input that ends is an error.
	code, out, errOut = invokeStdin(t, data, "Not An App!\n", "init", "--force", "--dir", release)
	require.Equal(t, exitUsage, code, out+errOut)
	require.Contains(t, out, "want letters, digits")
	require.Contains(t, errOut, "the input ended; pass --yes")
}

func TestInitListsApplicationsFromArgoCD(t *testing.T) {
	t.Parallel()
	release := handMadeRelease(t)
	repo, _ := argosimtest.NewRepo(t, "v1")
	// The server's applications follow the overlays: their names are not
	// the web-<env> init would guess.
	var apps []argosim.AppConfig
	for _, env := range []string{"dev", "prod"} {
		c := repo.App("storefront-" + env + "-eu")
		apps = append(apps, c)
	}
	sim, addr := argosimtest.Start(t, apps...)
	data := t.TempDir()
	io, out, errb := testIO("XDG_DATA_HOME="+data, "USER=captain", "ARGOCD_SERVER="+addr, "ARGOCD_AUTH_TOKEN="+sim.Token())
	code := run(t.Context(), io, []string{"init", "--yes", "--argocd-plaintext", "--dir", release})
	require.Equal(t, 0, code, out.String()+errb.String())
	require.Contains(t, out.String(), "Argo CD at "+addr+": 2 applications")
	cfg, err := os.ReadFile(filepath.Join(release, "relcap.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(cfg), "app: storefront-dev-eu")
	require.Contains(t, string(cfg), "app: storefront-prod-eu")
	require.Contains(t, string(cfg), "server: "+strings.TrimPrefix(addr, "http://"))
	require.Contains(t, out.String(), "inferred "+filepath.Join(release, "ownership.yaml")+" from who writes each field",
		"the first map is inferred from the cluster Argo CD reads (here the simulator, which keeps no field managers)")
	own, err := os.ReadFile(filepath.Join(release, "ownership.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(own), "It is the first map, written by relcap init")
	require.Contains(t, string(own), "match: {app: storefront-dev-eu}")
	code, vout, verr := invoke(t, data, "-c", filepath.Join(release, "relcap.yaml"), "validate")
	require.Equal(t, 0, code, "validate accepts the inferred first map:\n%s%s", vout, verr)
}

// invokeStdin is invoke with answers on stdin.
func invokeStdin(t *testing.T, dataHome, stdin string, args ...string) (int, string, string) {
	t.Helper()
	io, out, errb := testIO("XDG_DATA_HOME="+dataHome, "USER=captain")
	io.In = bytes.NewBufferString(stdin)
	code := run(t.Context(), io, args)
	return code, out.String(), errb.String()
}
