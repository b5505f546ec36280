package terraform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

const kubeconfigA = `apiVersion: v1
kind: Config
clusters: [{name: staging, cluster: {server: "https://staging.example:6443"}}]
contexts: [{name: staging, context: {cluster: staging, user: ci}}]
current-context: staging
users: [{name: ci, user: {token: staging-token-111}}]
`

// TestAPlanIsNotAppliedAgainstAnotherClusterOrAccount: a plan made with
// KUBECONFIG naming one kubeconfig is refused when, at apply, KUBECONFIG
// names another file, or the same file now points elsewhere, or
// AWS_PROFILE changed: stale, naming the variable, never its value or
// the file's content. With the same settings it applies. Before, the
// provider-selecting environment was not part of the plan's inputs and
// every one of these applied.
// Not parallel: Terraform reads them from the process environment.
func TestAPlanIsNotAppliedAgainstAnotherClusterOrAccount(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.kubeconfig"), filepath.Join(dir, "b.kubeconfig")
	require.NoError(t, os.WriteFile(a, []byte(kubeconfigA), 0o600))
	other := []byte(kubeconfigA[:len(kubeconfigA)-1] + "\n# prod\n")
	require.NoError(t, os.WriteFile(b, []byte(`apiVersion: v1
kind: Config
clusters: [{name: prod, cluster: {server: "https://prod.example:6443"}}]
current-context: prod
`), 0o600))
	t.Setenv("KUBECONFIG", a)
	t.Setenv("AWS_PROFILE", "staging-account")
	f := newFixture(t, `resource "terraform_data" "x" {
  input = "v1"
}
`)
	s := f.plan()
	require.Contains(t, s.Inputs.ProviderEnv, "KUBECONFIG")
	require.Contains(t, s.Inputs.ProviderEnv, "AWS_PROFILE")
	stored, err := json.Marshal(s.Inputs)
	require.NoError(t, err)
	for _, clear := range []string{a, "staging-token-111", "staging-account"} {
		require.NotContains(t, string(stored), clear, "the ledger's copy keeps keyed hashes only")
	}

	refused := func(says string) {
		t.Helper()
		_, err := f.a.Apply(t.Context(), request(f.env, s))
		require.ErrorIs(t, err, fault.ErrStalePlan)
		require.ErrorContains(t, err, says)
		for _, clear := range []string{a, b, "staging-token-111", "staging-account", "prod-account", "prod.example"} {
			require.NotContains(t, err.Error(), clear)
		}
		require.NoFileExists(t, filepath.Join(f.dir, "terraform.tfstate"), "nothing was applied")
	}
	t.Setenv("KUBECONFIG", b)
	refused("provider setting changed: KUBECONFIG")

	t.Setenv("KUBECONFIG", a)
	require.NoError(t, os.WriteFile(a, other, 0o600)) // the same path, edited in place
	refused("provider setting changed: KUBECONFIG")
	require.NoError(t, os.WriteFile(a, []byte(kubeconfigA), 0o600))

	t.Setenv("AWS_PROFILE", "prod-account")
	refused("provider setting changed: AWS_PROFILE")
	t.Setenv("AWS_PROFILE", "staging-account")

	t.Setenv("GOOGLE_PROJECT", "another-project")
	refused("provider setting added: GOOGLE_PROJECT")
	require.NoError(t, os.Unsetenv("GOOGLE_PROJECT"))

	res, err := f.a.Apply(t.Context(), request(f.env, s))
	require.NoError(t, err, "the same settings: applied\n%s", f.out.String())
	require.Positive(t, res.StateSerial)
}

// TestAPlanSavedBeforeProviderSettingsWereBoundIsNotStaleForThem: a plan
// whose inputs have no provider settings (saved by an older relcap) is not
// called stale for them; one that recorded none (an empty map) is, when one
// appears.
func TestAPlanSavedBeforeProviderSettingsWereBoundIsNotStaleForThem(t *testing.T) {
	t.Parallel()
	var old tfplan.Inputs
	require.NoError(t, json.Unmarshal([]byte(`{"revision":"r","workspace":"default","config_files_sha256":{"main.tf":"h"}}`), &old))
	require.Nil(t, old.ProviderEnv)
	now := old
	now.ProviderEnv = map[string]string{"KUBECONFIG": "k"}
	require.Empty(t, tfplan.StaleReasons(old, now))

	var none tfplan.Inputs
	b, err := json.Marshal(tfplan.Inputs{Revision: "r", ProviderEnv: map[string]string{}})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &none))
	require.NotNil(t, none.ProviderEnv, "an empty map survives the ledger")
	now = none
	now.ProviderEnv = map[string]string{"KUBECONFIG": "k"}
	require.Equal(t, []string{"provider setting added: KUBECONFIG"}, tfplan.StaleReasons(none, now))
}

// TestAKubeconfigNamedInTheConfigurationIsBoundByItsContent: a
// config_path the configuration names literally (as the kubernetes and
// helm providers take it; here in a locals block, since the test cannot
// download those providers, and the binding reads the .tf files, not the
// provider) binds the file's content: edited in place between plan and
// apply, the plan is stale naming config_path and its path.
// Not parallel: it shares nothing, but newFixture's Terraform is real and
// the machine is small.
func TestAKubeconfigNamedInTheConfigurationIsBoundByItsContent(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "cluster.kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(kubeconfigA), 0o600))
	f := newFixture(t, `locals {
  config_path = "`+kc+`"
}
resource "terraform_data" "x" {
  input = "v1"
}
`)
	s := f.plan()
	require.Contains(t, s.Inputs.ProviderEnv, "config_path "+kc)
	require.NoError(t, os.WriteFile(kc, []byte(kubeconfigA+"# now prod\n"), 0o600))
	_, err := f.a.Apply(t.Context(), request(f.env, s))
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.ErrorContains(t, err, "provider setting changed: config_path "+kc)
	require.NotContains(t, err.Error(), "staging-token-111")

	require.NoError(t, os.WriteFile(kc, []byte(kubeconfigA), 0o600))
	_, err = f.a.Apply(t.Context(), request(f.env, s))
	require.NoError(t, err, "the same content: applied\n%s", f.out.String())
}
