package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow/effort"
)

const stagingRoot = `
variable "replicas" {
  type = number
}

variable "db_password" {
  type      = string
  sensitive = true
  default   = "hunter2-very-secret"
}

resource "terraform_data" "app" {
  input = { replicas = var.replicas, password = var.db_password }
}

resource "terraform_data" "cache" {
  triggers_replace = [var.replicas]
}

output "password" {
  value     = var.db_password
  sensitive = true
}
`

// tfRepo is a release repository whose staging environment is a real
// Terraform root of terraform_data resources (owned by Terraform in the
// ownership map) and whose Argo CD is the simulator, following a real
// environment repository: relcap plan runs the release's ownership check
// first. env carries the simulator's token; host is the registry's.
func tfRepo(t *testing.T, planApprovals int, distinct bool) (cfg string, env []string, host string) {
	t.Helper()
	terraformtest.Binary(t)
	cfg, host, envRepo := promoteRepo(t)
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	c := strings.Replace(string(b), "approvals: {plan: 1, promotion: 0, distinct_from_author: false}",
		"approvals: {plan: "+itoa(planApprovals)+", promotion: 0, distinct_from_author: "+map[bool]string{true: "true", false: "false"}[distinct]+"}", 1)
	require.NoError(t, os.WriteFile(cfg, []byte(c), 0o644))
	dir := filepath.Dir(cfg)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "infra/staging/main.tf"), []byte(stagingRoot), 0o644))
	own := strings.Replace(validOwnership, "rules:\n", "rules:\n  - match: {terraform_type: terraform_data}\n    owner: terraform\n", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ownership.yaml"), []byte(own), 0o644))
	_, env = simulated(t, cfg, envRepo, nil)
	return cfg, env, host
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestPlanApproveApplyThroughTheCommandLine(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 1, true)
	data := t.TempDir()
	invoke := func(t *testing.T, data string, args ...string) (int, string, string) {
		return invokeEnv(t, data, env, args...)
	}

	code, out, errOut := invoke(t, data, "-c", cfg, "--actor", "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out+errOut, "hunter2-very-secret", "sensitive values never printed")
	var plan struct {
		Fingerprint string
		Counts      struct{ Create int }
		Release     string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	require.Len(t, plan.Fingerprint, 64)
	require.Equal(t, 2, plan.Counts.Create)
	require.Contains(t, errOut, "started release "+plan.Release, "the plan says which release it belongs to")
	require.Contains(t, errOut, "Initializing the backend", "Terraform's progress on stderr")

	code, _, errOut = invoke(t, data, "-c", cfg, "--actor", "alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "unapproved")
	require.Contains(t, errOut, "relcap approve --plan "+plan.Fingerprint)

	code, _, errOut = invoke(t, data, "-c", cfg, "--actor", "alice", "approve", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "the author may not approve here")
	require.Contains(t, errOut, "distinct_from_author")

	code, out, errOut = invoke(t, data, "-c", cfg, "--actor", "bob", "approve", "--plan", plan.Fingerprint, "--comment", "checked")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "(1 of 1 required)")

	code, out, errOut = invoke(t, data, "-c", cfg, "--actor", "alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied plan")
	require.NotContains(t, out+errOut, "hunter2-very-secret")

	code, _, errOut = invoke(t, data, "-c", cfg, "--actor", "alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "never applied twice")
	require.Contains(t, errOut, "already applied")

	code, _, errOut = invoke(t, data, "-c", cfg, "journal", "verify")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `warning  \S+  unsigned: the project names no people file.*; unsigned plan approval of `+plan.Fingerprint[:12]+` in staging by bob`, errOut,
		"journal verify says which approvals were unsigned")

	// Without a people file the approval is unsigned, and the measures say
	// whose decision rests on a typed name.
	code, out, errOut = invoke(t, data, "-c", cfg, "report", "measures")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "signed: 0, unsigned: 1")
	require.Regexp(t, `plan\s+staging\s+[0-9a-f]{12}\s+bob`, out)

	// One release, with its steps, and every command's session linked to it.
	code, out, errOut = invoke(t, data, "--json", "journal", "list")
	require.Equal(t, 0, code, errOut)
	var sessions []struct {
		Command   string `json:"command"`
		ReleaseID string `json:"release_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sessions))
	linked := map[string]int{}
	for _, s := range sessions {
		if s.ReleaseID == plan.Release {
			linked[s.Command]++
		}
	}
	require.Equal(t, map[string]int{"plan": 1, "approve": 1, "apply": 2}, linked, "the refused and the done apply, bob's approval, the plan")

	// Run without a terminal (this test's IO), no command measured anyone's
	// time: each says so instead of recording a zero.
	l, err := store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	defer l.Close()
	entries, err := l.Effort(t.Context(), plan.Release)
	require.NoError(t, err)
	unmeasured := map[string]bool{}
	for _, e := range entries {
		require.NotEqual(t, effort.Active, e.Kind, "no staff time measured without a terminal: %+v", e)
		if e.Kind == effort.Unmeasured {
			unmeasured[e.Person+"/"+string(e.Role)+"/"+e.Step] = true
			require.Contains(t, e.Note, "no terminal")
			require.Zero(t, e.Duration)
		}
	}
	require.Equal(t, map[string]bool{"alice/captain/plan-review": true, "alice/captain/apply": true, "bob/approver/plan-review": true}, unmeasured)

	journals, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*", "journal.jsonl"))
	require.NoError(t, err)
	for _, j := range journals {
		b, err := os.ReadFile(j)
		require.NoError(t, err)
		require.NotContains(t, string(b), "hunter2-very-secret", "sensitive values never journaled")
	}
}

func TestApplyAfterAVarFileChangedIsRefused(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 0, false)
	data := t.TempDir()
	invoke := func(t *testing.T, data string, args ...string) (int, string, string) {
		return invokeEnv(t, data, env, args...)
	}
	code, out, errOut := invoke(t, data, "-c", cfg, "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan struct{ Fingerprint string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))

	vars := filepath.Join(filepath.Dir(cfg), "infra/staging/staging.tfvars")
	require.NoError(t, os.WriteFile(vars, []byte("replicas = 3\n"), 0o644))
	code, _, errOut = invoke(t, data, "-c", cfg, "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, errOut)
	require.Contains(t, errOut, "staging.tfvars")
	require.Contains(t, errOut, "relcap plan --env staging again")
}

func TestPlanFromJSONRejectsATruncatedDocument(t *testing.T) {
	t.Parallel()
	doc := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(doc, []byte(`{"format_version":"1.2","resource_changes":[{"address":"a`), 0o644))
	code, _, errOut := invoke(t, t.TempDir(), "plan", "--from-json", doc)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "plan.json")
	require.NotContains(t, errOut, "goroutine")
}

// TestAFailedApplyNamesWhatItLeftAndThePlanIsMadeAgain: real Terraform
// fails part-way through a release's apply (a provisioner exits 1 after
// the other resources were created). relcap apply says so with the next
// safe action, naming the tainted resource; relcap plan then plans the
// same release again from the state Terraform left, and that plan applies.
func TestAFailedApplyNamesWhatItLeftAndThePlanIsMadeAgain(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 0, false)
	data := t.TempDir()
	invoke := func(t *testing.T, args ...string) (int, string, string) {
		return invokeEnv(t, data, env, append([]string{"-c", cfg}, args...)...)
	}
	root := filepath.Join(filepath.Dir(cfg), "infra/staging/main.tf")
	boom := func(command string) string {
		return stagingRoot + `
resource "terraform_data" "migrate" {
  depends_on = [terraform_data.app]
  provisioner "local-exec" {
    command = "` + command + `"
  }
}
`
	}
	require.NoError(t, os.WriteFile(root, []byte(boom("echo migration failed >&2; exit 1")), 0o644))
	code, out, errOut := invoke(t, "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var first struct{ Fingerprint, Release string }
	require.NoError(t, json.Unmarshal([]byte(out), &first))

	code, _, errOut = invoke(t, "apply", "--plan", first.Fingerprint)
	require.NotEqual(t, 0, code, "the apply failed")
	require.Contains(t, errOut, "apply of plan "+first.Fingerprint[:12]+" failed; next safe action: the apply failed part-way: terraform_data.migrate is tainted; re-plan from the reviewed root (relcap plan --env staging)")
	require.Contains(t, errOut, "migration failed", "Terraform's own error follows")

	// The team fixes the migration; plan makes the same release's new plan
	// from the state the failed apply left: app exists, migrate is replaced.
	require.NoError(t, os.WriteFile(root, []byte(boom("true")), 0o644))
	code, out, errOut = invoke(t, "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var second struct {
		Fingerprint, Release string
		Counts               struct {
			Create             int
			ReplaceDeleteFirst int `json:"replace_delete_first"`
			ReplaceCreateFirst int `json:"replace_create_first"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &second))
	require.Equal(t, first.Release, second.Release, "the same release")
	require.NotEqual(t, first.Fingerprint, second.Fingerprint, "a new plan")
	require.Equal(t, 1, second.Counts.ReplaceDeleteFirst+second.Counts.ReplaceCreateFirst, "the tainted resource is replaced: %s", out)
	require.Equal(t, 0, second.Counts.Create, "what the failed apply created is not created again: %s", out)

	code, out, errOut = invoke(t, "apply", "--plan", second.Fingerprint)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied plan")
}
