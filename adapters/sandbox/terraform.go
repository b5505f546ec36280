package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// terraformRoot is each environment's infrastructure. terraform_data is
// Terraform's built-in resource: it keeps values in state and needs no
// provider download and no cloud account, so the sandbox plans and applies
// for real, offline.
const terraformRoot = `# The web application's infrastructure in the relcap sandbox. Every
# resource is a built-in terraform_data: real Terraform, real state, real
# plans, and nothing outside this directory.

variable "environment" {
  type = string
}

variable "replicas" {
  type        = number
  description = "Replicas the platform provisions capacity for."
}

variable "schema_version" {
  type        = string
  description = "Database schema the release needs; a new version re-runs the migration."
}

resource "terraform_data" "namespace" {
  input = { name = "web", environment = var.environment }
}

resource "terraform_data" "capacity" {
  input = { replicas = var.replicas, environment = var.environment }
}

# A new schema version replaces the migration: the plan review flags it.
resource "terraform_data" "db_migration" {
  triggers_replace = [var.schema_version]
  input            = { schema = var.schema_version }
}

output "schema_version" {
  value = terraform_data.db_migration.output.schema
}
`

// emptyLockFile is the dependency lock file of a root with no providers.
const emptyLockFile = "# This file is maintained automatically by \"terraform init\".\n# Manual edits may be lost in future updates.\n"

// tfvars are an environment's variables: as applied when the sandbox is
// built (running release 1.4.1), and as release 1.4.2 needs them, which is
// what the first plan proposes.
func tfvars(env string, release bool) string {
	if !release {
		return fmt.Sprintf("# %s as it runs today (web 1.4.1).\nenvironment    = %q\nreplicas       = 2\nschema_version = \"41\"\n", env, env)
	}
	return fmt.Sprintf("# %s for web 1.4.2: one more replica, and schema 42 (re-runs the migration).\nenvironment    = %q\nreplicas       = 3\nschema_version = \"42\"\n", env, env)
}

// terraformDir is env's Terraform root; varFile its var file name.
func terraformDir(env string) string { return filepath.Join("infra", env) }
func varFile(env string) string      { return env + ".tfvars" }

// writeTerraform writes both roots, applies today's variables and then
// writes the release's, so the first plan of each environment updates one
// resource and replaces another. The roots are applied concurrently.
func (s *Sandbox) writeTerraform(ctx context.Context, binary string) error {
	bin := binary
	if bin == "" {
		bin = "terraform"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return fmt.Errorf("sandbox: the sandbox applies real Terraform roots and needs %s: %w (make demo installs Terraform into ./bin)", bin, err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(Environments))
	for i, env := range Environments {
		wg.Go(func() { errs[i] = s.applyRoot(ctx, path, env) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *Sandbox) applyRoot(ctx context.Context, bin, env string) error {
	dir := filepath.Join(s.Dir, terraformDir(env))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sandbox terraform %s: %w", env, err)
	}
	vars := filepath.Join(dir, varFile(env))
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(terraformRoot), 0o644); err != nil {
		return fmt.Errorf("sandbox terraform %s: %w", env, err)
	}
	if err := os.WriteFile(vars, []byte(tfvars(env, false)), 0o644); err != nil {
		return fmt.Errorf("sandbox terraform %s: %w", env, err)
	}
	// terraform_data needs no provider, so terraform init writes no lock
	// file, and relcap's review would ask for one to be committed. The
	// lock file of a root without providers is just terraform's header.
	if err := os.WriteFile(filepath.Join(dir, ".terraform.lock.hcl"), []byte(emptyLockFile), 0o644); err != nil {
		return fmt.Errorf("sandbox terraform %s: %w", env, err)
	}
	tf, err := tfexec.NewTerraform(dir, bin)
	if err != nil {
		return fmt.Errorf("sandbox terraform %s: %w", env, err)
	}
	// Terraform's output goes to a buffer that is shown only on failure:
	// the demo prints relcap's view of the plan, not Terraform's.
	// terraform-exec copies stdout and stderr from two goroutines.
	out := &lockedBuffer{}
	tf.SetStdout(out)
	tf.SetStderr(out)
	if err := tf.Init(ctx); err != nil {
		return fmt.Errorf("sandbox terraform init in %s: %w\n%s", dir, err, tail(out.String()))
	}
	if err := tf.Apply(ctx, tfexec.VarFile(vars)); err != nil {
		return fmt.Errorf("sandbox terraform apply in %s: %w\n%s", dir, err, tail(out.String()))
	}
	s.logf("sandbox: terraform applied %s (web 1.4.1)", dir)
	if err := os.WriteFile(vars, []byte(tfvars(env, true)), 0o644); err != nil {
		return fmt.Errorf("sandbox terraform %s: %w", env, err)
	}
	return nil
}

// tail is the last lines of Terraform's output, enough to see its error.
func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
