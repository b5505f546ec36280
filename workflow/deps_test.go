package workflow_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// forbidden lists what each layer must not depend on (DESIGN.md,
// Architecture): the domain knows no SDK and no UI, the UI knows only the
// domain, and argo-cd stays inside its adapter.
var forbidden = map[string][]string{
	"./workflow/...": {"github.com/relcap/relcap/tui", "github.com/relcap/relcap/adapters", "github.com/relcap/relcap/cmd",
		"charm.land/", "github.com/charmbracelet/", "github.com/argoproj/", "github.com/hashicorp/terraform-exec", "github.com/hashicorp/terraform-json",
		"github.com/google/go-containerregistry", "github.com/go-git/", "modernc.org/sqlite", "github.com/jackc/pgx", "github.com/spf13/cobra", "filippo.io/age",
		"github.com/google/go-github/", "gitlab.com/gitlab-org/api/client-go", "code.gitea.io/sdk"},
	"./tui/...": {"github.com/relcap/relcap/adapters", "github.com/relcap/relcap/cmd", "github.com/argoproj/", "github.com/hashicorp/",
		"github.com/google/go-containerregistry", "github.com/go-git/", "modernc.org/sqlite", "github.com/jackc/pgx", "filippo.io/age",
		"github.com/google/go-github/", "gitlab.com/gitlab-org/api/client-go", "code.gitea.io/sdk"},
	"./adapters/...": {"github.com/relcap/relcap/tui", "github.com/relcap/relcap/cmd", "charm.land/"},
	// The command line reaches adapters only through its Factory, which
	// cmd/relcap implements: it imports workflow, tui and cobra, never an
	// adapter (so which adapter serves a command is decided in one place).
	"./tui/cli/...": {"github.com/relcap/relcap/adapters", "github.com/relcap/relcap/cmd", "github.com/argoproj/", "github.com/hashicorp/"},
}

// leaves are the value packages beside the core: the core imports them, so
// they import nothing of relcap's but other leaves (the arrow points from
// the core to them, never back).
var leaves = []string{"fault", "image", "approval", "appstate", "finding", "journal", "ownership", "effort", "secret", "forge", "evidence", "tfplan", "oplock", "tooloutput", "custody"}

func TestLeavesImportNoCore(t *testing.T) {
	t.Parallel()
	const module = "github.com/relcap/relcap/"
	allowed := map[string]bool{}
	for _, l := range leaves {
		allowed[module+"workflow/"+l] = true
	}
	for _, l := range leaves {
		out, err := exec.Command("go", "list", "-deps", "-test=false", "-f", "{{.ImportPath}}", "../workflow/"+l).CombinedOutput()
		require.NoError(t, err, string(out))
		for _, dep := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasPrefix(dep, module) {
				require.True(t, allowed[dep], "leaf workflow/%s depends on %s: a leaf imports only other leaves", l, dep)
			}
		}
	}
}

func TestLayering(t *testing.T) {
	t.Parallel()
	for pattern, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "-test=false", "-f", "{{.ImportPath}}", "../"+strings.TrimPrefix(pattern, "./")).CombinedOutput()
		if strings.Contains(string(out), "matched no packages") {
			continue // the layer does not exist yet
		}
		require.NoError(t, err, string(out))
		for _, dep := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			for _, b := range bad {
				require.False(t, strings.HasPrefix(dep, b), "%s depends on %s, which its layer must not import", pattern, dep)
			}
		}
	}
	// argo-cd only inside adapters/argocd, and each forge's client only
	// inside its adapter (and its tests); the lab's tooling also sets up
	// its Gitea (users, the repository, branch protection) with the Gitea
	// SDK, as an administrator would, which is none of relcap's Forge.
	sdkHome := map[string][]string{
		"github.com/argoproj/":                 {"github.com/relcap/relcap/adapters/argocd"},
		"github.com/google/go-github/v92":      {"github.com/relcap/relcap/adapters/forge/github"},
		"gitlab.com/gitlab-org/api/client-go/": {"github.com/relcap/relcap/adapters/forge/gitlab"},
		"code.gitea.io/sdk/":                   {"github.com/relcap/relcap/adapters/forge/gitea", "github.com/relcap/relcap/cmd/relcap-lab"},
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../...").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, line := range strings.Split(string(out), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for sdk, homes := range sdkHome {
			if strings.Contains(imports, sdk) {
				require.True(t, slices.ContainsFunc(homes, func(home string) bool { return strings.HasPrefix(pkg, home) }),
					"%s imports %s; only %s may", pkg, sdk, strings.Join(homes, " and "))
			}
		}
	}
}
