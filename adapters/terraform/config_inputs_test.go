package terraform

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

// moduleRoot calls a module inside the root and one beside it.
const moduleRoot = `
module "inner" {
  source = "./modules/inner"
}

module "shared" {
  source = "../shared"
}
`

const moduleBody = `
resource "terraform_data" "m" {
  input = "v1"
}
`

// TestAnEditAfterApprovalRefusesTheApplyNamingTheFile: no Git, no
// commit: editing the root's .tf file, or a file of a local module it
// calls (inside the root or beside it), after the plan makes it stale,
// and the refusal names the file.
func TestAnEditAfterApprovalRefusesTheApplyNamingTheFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, edit, says string }{
		{"the root", "main.tf", "configuration file changed: main.tf"},
		{"a module inside the root", "modules/inner/main.tf", "configuration file changed: modules/inner/main.tf"},
		{"a module beside the root", "../shared/main.tf", "configuration file changed: ../shared/main.tf"},
		{"a new file in the root", "extra.tf", "configuration file added: extra.tf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			root := filepath.Join(parent, "root")
			for path, body := range map[string]string{"root/main.tf": moduleRoot, "root/modules/inner/main.tf": moduleBody, "shared/main.tf": moduleBody} {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(parent, path)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(parent, path), []byte(body), 0o644))
			}
			f := newFixture(t, moduleRoot)
			f.dir = root
			f.env.Terraform.Dir = root
			s := f.plan()
			require.Contains(t, s.Inputs.ConfigFiles, "../shared/main.tf", "the module beside the root is bound")
			require.Contains(t, s.Inputs.ConfigFiles, "modules/inner/main.tf")

			target := filepath.Join(root, tc.edit)
			require.NoError(t, os.WriteFile(target, []byte(moduleBody+"\n# edited after approval\n"), 0o644))
			_, err := f.a.Apply(t.Context(), request(f.env, s))
			require.ErrorIs(t, err, fault.ErrStalePlan)
			require.ErrorContains(t, err, tc.says)
			require.NoFileExists(t, filepath.Join(root, "terraform.tfstate"), "nothing was applied")
		})
	}
}

// TestAChangedTFVarRefusesTheApplyWithoutRevealingIt: TF_VAR_* values are
// bound by keyed hashes; a change refuses, naming the variable only.
// Not parallel: Terraform reads TF_VAR_* from the process environment.
func TestAChangedTFVarRefusesTheApplyWithoutRevealingIt(t *testing.T) {
	t.Setenv("TF_VAR_note", "first-value-123")
	f := newFixture(t, `
variable "note" {
  type = string
}
resource "terraform_data" "n" {
  input = var.note
}
`)
	s := f.plan()
	require.Contains(t, s.Inputs.EnvVars, "TF_VAR_note")
	require.NotContains(t, s.Inputs.EnvVars["TF_VAR_note"], "first-value-123")
	again, err := f.a.Inputs(t.Context(), f.env)
	require.NoError(t, err)
	require.Empty(t, tfplan.StaleReasons(s.Inputs, again), "the same value, the same keyed hash")

	t.Setenv("TF_VAR_note", "second-value-456")
	_, err = f.a.Apply(t.Context(), request(f.env, s))
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.ErrorContains(t, err, "environment variable changed: TF_VAR_note")
	require.NotContains(t, err.Error(), "value-")
	key, err := os.ReadFile(filepath.Join(f.a.PlanDir(), envKeyFile))
	require.NoError(t, err)
	require.Len(t, key, 32)
	fi, err := os.Stat(filepath.Join(f.a.PlanDir(), envKeyFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}
