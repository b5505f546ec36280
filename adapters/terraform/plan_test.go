package terraform

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/tooloutput"
)

const twoResources = `
variable "rev" {
  type    = string
  default = "1"
}

resource "terraform_data" "web" {
  input            = { name = "web", tags = { env = "dev" }, ports = [80] }
  triggers_replace = var.rev
}

resource "terraform_data" "blue" {
  input            = "blue"
  triggers_replace = var.rev
  lifecycle {
    create_before_destroy = true
  }
}

output "web_id" {
  value = terraform_data.web.id
}
`

func TestPlanCreates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	s := f.plan()

	require.Equal(t, "dev", s.Env)
	require.Equal(t, "alice", s.Author)
	require.Equal(t, testNow, s.CreatedAt)
	require.NotEmpty(t, s.TerraformVersion)
	require.Equal(t, tfplan.Counts{Create: 2}, s.Counts)
	require.Equal(t, []tfplan.OutputChange{{Name: "web_id", Action: tfplan.ActionCreate}}, s.Outputs)
	require.True(t, s.HasChanges())
	require.False(t, s.Destructive())

	web := changeByAddress(t, s, "terraform_data.web")
	require.Equal(t, tfplan.ActionCreate, web.Action)
	require.Equal(t, "terraform_data", web.Type)
	require.Equal(t, "web", web.Name)
	require.Equal(t, `"web"`, attrByPath(t, web, "input.name").After)
	require.Equal(t, `"dev"`, attrByPath(t, web, "input.tags.env").After)
	require.Equal(t, "80", attrByPath(t, web, "input.ports[0]").After)
	require.True(t, attrByPath(t, web, "id").Unknown)
	require.True(t, hasFinding(s, "plan.no-lock-file", f.dir))

	// The saved plan: named by its fingerprint, private, hashed.
	require.Equal(t, filepath.Join(f.a.PlanDir(), s.Fingerprint+".tfplan"), s.PlanFile)
	fi, err := os.Stat(s.PlanFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(f.a.PlanDir())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	h, err := hashFile(s.PlanFile)
	require.NoError(t, err)
	require.Equal(t, h, s.PlanHash)
	require.Equal(t, tfplan.Fingerprint(s.PlanHash, s.Inputs), s.Fingerprint)
	entries, err := os.ReadDir(f.a.PlanDir())
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasSuffix(e.Name(), ".tmp"), "no temporary plan file is left behind")
	}

	// Inputs of a fresh root outside Git with no state.
	// Inputs of a fresh root outside Git with no state: the content of
	// its one file binds it (.terraform and the lock file init wrote
	// aside: the lock file is bound by its own hash).
	mainHash, err := hashFile(filepath.Join(f.dir, "main.tf"))
	require.NoError(t, err)
	lockHash, err := hashFile(filepath.Join(f.dir, lockFileName))
	if err == nil {
		require.Equal(t, lockHash, s.Inputs.ConfigFiles[lockFileName])
	}
	require.Equal(t, mainHash, s.Inputs.ConfigFiles["main.tf"])
	for name := range s.Inputs.ConfigFiles {
		require.False(t, strings.HasPrefix(name, ".terraform/"), "Terraform's working data is not configuration: %s", name)
	}
	require.Equal(t, tfplan.Inputs{Workspace: "default", VarFileHashes: map[string]string{}, ConfigFiles: s.Inputs.ConfigFiles, EnvVars: s.Inputs.EnvVars, ProviderEnv: map[string]string{}}, s.Inputs,
		"no provider setting set: an empty map, which says they were bound")
	now, err := f.a.Inputs(t.Context(), f.env)
	require.NoError(t, err)
	require.Equal(t, s.Inputs, now)
	require.Contains(t, f.out.String(), "terraform_data.web will be created", "plan progress is streamed")
}

// TestPlanReplaceAndDelete walks a root through apply, a forced replacement
// both ways, and a removal, and checks the state matches what was applied.
func TestPlanReplaceAndDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	f.varFile("dev.tfvars", `rev = "1"`+"\n")
	first := f.plan()
	res := f.apply(first)
	require.False(t, res.AlreadyApplied)
	require.Positive(t, res.StateSerial)
	_, err := os.Stat(first.PlanFile)
	require.ErrorIs(t, err, os.ErrNotExist, "an applied plan file is deleted")

	// The state now holds exactly what the approved plan said.
	var state struct {
		Values struct {
			RootModule struct {
				Resources []struct {
					Address string         `json:"address"`
					Values  map[string]any `json:"values"`
				} `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	}
	require.NoError(t, json.Unmarshal([]byte(f.terraform(t.Context(), "show", "-json")), &state))
	got := map[string]any{}
	for _, r := range state.Values.RootModule.Resources {
		got[r.Address] = r.Values["input"]
	}
	require.Equal(t, map[string]any{
		"terraform_data.web":  map[string]any{"name": "web", "tags": map[string]any{"env": "dev"}, "ports": []any{float64(80)}},
		"terraform_data.blue": "blue",
	}, got)

	// Nothing to do: both resources are no-ops, counted but not listed.
	same := f.plan()
	require.Empty(t, same.Changes)
	require.Equal(t, 2, same.Counts.NoOp)
	require.False(t, same.HasChanges())
	require.Equal(t, first.Inputs.VarFileHashes, same.Inputs.VarFileHashes)
	require.Equal(t, res.StateSerial, same.Inputs.StateSerial)
	require.NotEmpty(t, same.Inputs.StateLineage)

	f.varFile("dev.tfvars", `rev = "2"`+"\n")
	repl := f.plan()
	web := changeByAddress(t, repl, "terraform_data.web")
	require.Equal(t, tfplan.ActionReplaceDeleteFirst, web.Action)
	require.Equal(t, []string{"triggers_replace"}, web.ReplacePaths)
	require.Contains(t, web.Flags, tfplan.FlagDestructive)
	tr := attrByPath(t, web, "triggers_replace")
	require.Equal(t, `"1"`, tr.Before)
	require.Equal(t, `"2"`, tr.After)
	blue := changeByAddress(t, repl, "terraform_data.blue")
	require.Equal(t, tfplan.ActionReplaceCreateFirst, blue.Action)
	require.Equal(t, []string{"triggers_replace"}, blue.ReplacePaths)
	require.True(t, repl.Destructive())
	require.True(t, hasFinding(repl, "plan.destructive", "terraform_data.web"))
	f.apply(repl)

	f.write("main.tf", strings.Replace(twoResources, `resource "terraform_data" "blue"`, `resource "terraform_data" "green"`, 1))
	moved := f.plan()
	del := changeByAddress(t, moved, "terraform_data.blue")
	require.Equal(t, tfplan.ActionDelete, del.Action)
	require.Equal(t, []string{tfplan.FlagDestructive}, del.Flags)
	require.Equal(t, "null", attrByPath(t, del, "input").After)
	require.Equal(t, tfplan.ActionCreate, changeByAddress(t, moved, "terraform_data.green").Action)
	require.Equal(t, tfplan.Counts{Create: 1, Delete: 1, NoOp: 1}, moved.Counts)
}

const sensitiveRoot = `
variable "secret" {
  type      = string
  sensitive = true
}

resource "terraform_data" "app" {
  input = { user = "app", password = var.secret }
}

resource "terraform_data" "guard" {
  input = "x"
  lifecycle {
    precondition {
      condition     = length(var.secret) < 100
      error_message = "The secret is too long."
    }
  }
}

output "password" {
  value     = var.secret
  sensitive = true
}

output "user" {
  value = terraform_data.app.input.user
}
`

// TestSensitiveValuesNeverLeak: a sensitive variable in an attribute and a
// sensitive output never reach the summary, an error or the stream.
func TestSensitiveValuesNeverLeak(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-correct-horse-battery"
	f := newFixture(t, sensitiveRoot)
	vf := f.varFile("secret.tfvars", `secret = "`+secret+`"`+"\n")
	s := f.plan()

	out, err := json.Marshal(s)
	require.NoError(t, err)
	require.NotContains(t, string(out), secret)
	require.NotContains(t, string(out), "hunter2")
	app := changeByAddress(t, s, "terraform_data.app")
	pw := attrByPath(t, app, "input.password")
	require.True(t, pw.Sensitive)
	require.Equal(t, tfplan.SensitiveMask, pw.After)
	require.Equal(t, `"app"`, attrByPath(t, app, "input.user").After)
	require.Contains(t, s.Outputs, tfplan.OutputChange{Name: "password", Action: tfplan.ActionCreate, Sensitive: true})

	// A stale apply's error.
	require.NoError(t, os.WriteFile(vf, []byte(`secret = "`+secret+`-rotated"`+"\n"), 0o644))
	_, err = f.a.Apply(t.Context(), request(f.env, s))
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.NotContains(t, err.Error(), "hunter2")

	// A failing plan's error (Terraform's stderr is kept in it).
	require.NoError(t, os.WriteFile(vf, []byte(`secret = "`+strings.Repeat(secret, 5)+`"`+"\n"), 0o644))
	_, err = f.a.Plan(t.Context(), f.env, "alice")
	require.Error(t, err)
	require.Contains(t, err.Error(), "The secret is too long.")
	require.NotContains(t, err.Error(), "hunter2")

	require.NotContains(t, f.out.String(), "hunter2", "streamed progress")
}

func TestPlanWorkspaces(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	f.env.Terraform.Workspace = "staging"
	_, err := f.a.Plan(t.Context(), f.env, "alice")
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, `terraform workspace "staging" does not exist`)
	require.ErrorContains(t, err, `terraform workspace new staging`)

	f.terraform(t.Context(), "workspace", "new", "staging")
	f.terraform(t.Context(), "workspace", "select", "default")
	s := f.plan()
	require.Equal(t, "staging", s.Inputs.Workspace)
	f.apply(s)
	require.Equal(t, "default", strings.TrimSpace(f.terraform(t.Context(), "workspace", "show")), "the captain's selected workspace is restored")
	require.FileExists(t, filepath.Join(f.dir, "terraform.tfstate.d", "staging", "terraform.tfstate"))
	require.NoFileExists(t, filepath.Join(f.dir, "terraform.tfstate"), "the default workspace is untouched")
}

// TestPlanKeepsCommittedLockFile: terraform init may not rewrite a committed
// dependency lock file (relcap's stand-in for -lockfile=readonly).
func TestPlanKeepsCommittedLockFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	header := "# This file is maintained automatically by \"terraform init\".\n# Manual edits may be lost in future updates.\n"
	f.write(lockFileName, header)
	s := f.plan()
	require.False(t, hasFinding(s, "plan.no-lock-file", f.dir))
	require.NotEmpty(t, s.Inputs.LockFileHash)

	// A provider the configuration no longer needs: init would drop it.
	stale := header + "\nprovider \"registry.terraform.io/hashicorp/null\" {\n  version = \"3.2.2\"\n  hashes = [\n    \"h1:zT1ZbegaAYHwQa+QwIFugArWikRJI9dqohj8xb0GY88=\",\n  ]\n}\n"
	f.write(lockFileName, stale)
	_, err := f.a.Plan(t.Context(), f.env, "alice")
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "had to change the committed .terraform.lock.hcl")
	b, err := os.ReadFile(filepath.Join(f.dir, lockFileName))
	require.NoError(t, err)
	require.Equal(t, stale, string(b), "the committed lock file is restored")
}

// TestInputsFollowGit: the revision and dirtiness of the repository holding
// the root are plan inputs.
func TestInputsFollowGit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", f.dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	f.write(".gitignore", ".terraform/\nterraform.tfstate*\n")
	git("add", ".")
	git("commit", "-q", "-m", "infra")
	head := git("rev-parse", "HEAD")

	s := f.plan()
	require.Equal(t, head, s.Inputs.Revision)
	require.False(t, s.Inputs.Dirty)

	f.write("notes.md", "untracked\n")
	_, err := f.a.Apply(t.Context(), request(f.env, s))
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.ErrorContains(t, err, "working tree dirty was false, is true")

	git("add", ".")
	git("commit", "-q", "-m", "notes")
	_, err = f.a.Apply(t.Context(), request(f.env, s))
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.ErrorContains(t, err, "source revision moved from "+head[:10])
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	bin := terraformtest.Binary(t)
	_, err := New(Options{Binary: "no-such-terraform-binary", PlanDir: t.TempDir()})
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, `terraform binary "no-such-terraform-binary" not found`)

	_, err = New(Options{Binary: bin})
	require.ErrorIs(t, err, fault.ErrUsage)

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = New(Options{Binary: bin, PlanDir: file})
	require.ErrorIs(t, err, fault.ErrUsage)

	loose := filepath.Join(t.TempDir(), "plans")
	require.NoError(t, os.Mkdir(loose, 0o755))
	a, err := New(Options{Binary: bin, PlanDir: loose})
	require.NoError(t, err)
	fi, err := os.Stat(a.PlanDir())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "a loose plan directory is tightened")

	_, err = a.Plan(t.Context(), workflow.Environment{Name: "dev", Terraform: workflow.TerraformTarget{Dir: "relative/dir"}}, "alice")
	require.ErrorIs(t, err, fault.ErrUsage)
	_, err = a.Plan(t.Context(), workflow.Environment{Name: "dev", Terraform: workflow.TerraformTarget{Dir: t.TempDir(), VarFiles: []string{"/no/such.tfvars"}}}, "alice")
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "/no/such.tfvars")
}

// TestTerraformsOutputGoesToTheOperationsWriter: under the cockpit nothing
// may reach the terminal, so an operation's context names where
// Terraform's progress goes, and the adapter's own writers get none of it.
func TestTerraformsOutputGoesToTheOperationsWriter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoResources)
	var op syncBuffer
	ctx := tooloutput.With(t.Context(), &op)
	_, err := f.a.Plan(ctx, f.env, "alice")
	require.NoError(t, err)
	require.Contains(t, op.String(), "Initializing the backend")
	require.Contains(t, op.String(), "Plan: 2 to add, 0 to change, 0 to destroy.")
	require.NotContains(t, op.String(), "\x1b[", "no colour codes: terraform-exec runs Terraform with -no-color")
	require.NotContains(t, op.String(), "terraform_version", "terraform-exec's own version -json is not the operation's output")
	require.Empty(t, f.out.String(), "nothing went to the adapter's writers")

	_, err = f.a.Inputs(ctx, f.env)
	require.NoError(t, err)
	require.Empty(t, f.out.String())
}
