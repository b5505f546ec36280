package setup

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProposeNamesOrdersAndMatchesEnvironments(t *testing.T) {
	d := Discovery{
		Dir: "/r",
		Roots: []TerraformRoot{
			{Dir: "/r/infra/prod"}, {Dir: "/r/infra/Staging"}, {Dir: "/r/stacks/dev/terraform"},
		},
		Repos: []EnvRepo{{Dir: "/env", Branch: "trunk", Files: []EnvFile{
			{Path: "apps/shop/base/deploy.yaml", Format: "manifest", Image: "shop", Repository: "registry.example.com/shop"},
			{Path: "apps/shop/staging/deploy.yaml", Format: "manifest", Image: "shop", Repository: "registry.example.com/staging/shop"},
			{Path: "apps/shop/staging/kustomization.yaml", Format: "kustomize", Image: "shop", Repository: "registry.example.com/staging/shop"},
			{Path: "charts/shop/values-prod.yaml", Format: "helm-values", Image: "shop", Repository: "registry.example.com/prod/shop", ValuesPath: "image.digest"},
		}}},
		Apps: []ArgoApp{{Name: "shop-eu-staging", Path: "apps/shop/staging"}, {Name: "prod-shop", Path: "elsewhere"}},
	}
	p := Propose(d)
	require.Equal(t, "shop", p.App)
	require.Equal(t, "../env", p.EnvRepo, "a sibling repository is named relative to relcap.yaml")
	require.Equal(t, "trunk", p.Branch)
	var names []string
	for _, e := range p.Envs {
		names = append(names, e.Name)
	}
	require.Equal(t, []string{"dev", "staging", "prod"}, names, "generic directory names skipped, promotion order")

	dev, staging, prod := p.Envs[0], p.Envs[1], p.Envs[2]
	require.Equal(t, "stacks/dev/terraform", dev.TerraformDir)
	require.Empty(t, dev.File, "no file names dev")
	require.Equal(t, "shop-dev", dev.ArgoApp)
	require.Contains(t, p.Guessed, "dev: argocd.app (no application found for it)")

	require.Equal(t, "apps/shop/staging/kustomization.yaml", staging.File, "a kustomization over a manifest")
	require.Equal(t, "shop-eu-staging", staging.ArgoApp, "the application whose source is the file's directory")
	require.False(t, staging.Production)

	require.Equal(t, "helm-values", prod.Format)
	require.Equal(t, "image.digest", prod.ValuesPath)
	require.Equal(t, "prod-shop", prod.ArgoApp, "env-app")
	require.True(t, prod.Production)
}

func TestDefaultsRefuseWhatTheyCannotPropose(t *testing.T) {
	_, err := Defaults{}.Ask(t.Context(), Question{Key: "environments[].envrepo.file", Prompt: "dev: file"})
	require.ErrorContains(t, err, "found nothing to propose for environments[].envrepo.file")
	ok, err := Defaults{}.Confirm(t.Context(), "overwrite?", false)
	require.NoError(t, err)
	require.False(t, ok)
}

// TestEnvNameReadsTheLayoutsTeamsUse: a stage name wins wherever it is in
// the path; container directories never name an environment; "live" does
// when it is all there is. A root no name fits, and a second root of one
// environment, are named in the notes rather than dropped without a word.
func TestEnvNameReadsTheLayoutsTeamsUse(t *testing.T) {
	for root, want := range map[string]string{
		"/r/terraform/live":          "live",
		"/r/terraform/dev":           "dev",
		"/r/live/staging/app":        "staging",
		"/r/infra/live/prod/network": "prod",
		"/r/infra/eu-west/Staging":   "staging",
		"/r/stacks/billing":          "billing",
		"/r/main":                    "main",
		"/r/infra/terraform":         "",
		"/r":                         "",
	} {
		require.Equal(t, want, EnvName("/r", root), root)
	}
	p := Propose(Discovery{Dir: "/r", Roots: []TerraformRoot{{Dir: "/r/terraform/dev"}, {Dir: "/r/terraform/live"},
		{Dir: "/r/infra/terraform"}, {Dir: "/r/live/prod/network"}, {Dir: "/r/live/prod/database"}}})
	var names []string
	for _, e := range p.Envs {
		names = append(names, e.Name)
	}
	require.Equal(t, []string{"dev", "prod", "live"}, names)
	require.Contains(t, p.Guessed, "infra/terraform: left out: no environment name in its path (add it to environments: by hand)")
	require.Contains(t, p.Guessed, "live/prod/database: left out: a second root for prod beside live/prod/network (relcap plans one root per environment: keep the one it should plan)")
}

// TestTheReleaseRepositorysOwnEnvironmentRepositoryWins: relcap init in
// a repository with its own env/ beside a sibling checkout of some other
// project that also pins images proposed the sibling (found first). The
// release repository's own comes first now, and a repository of Argo CD
// applications before either.
func TestTheReleaseRepositorysOwnEnvironmentRepositoryWins(t *testing.T) {
	file := func(p string) EnvFile { return EnvFile{Path: p, Format: "kustomize", Image: "web"} }
	sibling := EnvRepo{Dir: "/src/other", Files: []EnvFile{file("a/kustomization.yaml"), file("b/kustomization.yaml"), file("c/kustomization.yaml")}}
	own := EnvRepo{Dir: "/src/release/env", Files: []EnvFile{file("staging/kustomization.yaml")}}
	require.Equal(t, "/src/release/env", chooseRepo("/src/release", []EnvRepo{sibling, own}).Dir)

	argo := EnvRepo{Dir: "/src/gitops", Files: []EnvFile{file("web/kustomization.yaml")}, Apps: []ArgoApp{{Name: "web-staging"}}}
	require.Equal(t, "/src/gitops", chooseRepo("/src/release", []EnvRepo{sibling, own, argo}).Dir)

	more := EnvRepo{Dir: "/src/release/deploy", Files: []EnvFile{file("x/kustomization.yaml"), file("y/kustomization.yaml")}}
	require.Equal(t, "/src/release/deploy", chooseRepo("/src/release", []EnvRepo{sibling, own, more}).Dir, "more pinning files among equals")
	require.Nil(t, chooseRepo("/src/release", []EnvRepo{{Dir: "/src/empty"}}), "nothing pins an image: nothing proposed")
}
