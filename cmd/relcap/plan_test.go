package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/terraform/terraformtest"
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
// Terraform root of terraform_data resources.
func tfRepo(t *testing.T, planApprovals int, distinct bool) (cfg string) {
	t.Helper()
	terraformtest.Binary(t)
	c := strings.Replace(validConfig, "approvals: {plan: 1, promotion: 0, distinct_from_author: false}",
		"approvals: {plan: "+itoa(planApprovals)+", promotion: 0, distinct_from_author: "+map[bool]string{true: "true", false: "false"}[distinct]+"}", 1)
	dir := releaseRepo(t, c)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "infra/staging/main.tf"), []byte(stagingRoot), 0o644))
	return filepath.Join(dir, "relcap.yaml")
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestPlanApproveApplyThroughTheCommandLine(t *testing.T) {
	t.Parallel()
	cfg := tfRepo(t, 1, true)
	data := t.TempDir()

	code, out, errOut := invoke(t, data, "-c", cfg, "--actor", "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out+errOut, "hunter2-very-secret", "sensitive values never printed")
	var plan struct {
		Fingerprint string
		Counts      struct{ Create int }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	require.Len(t, plan.Fingerprint, 64)
	require.Equal(t, 2, plan.Counts.Create)

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

	code, _, errOut = invoke(t, data, "journal", "verify")
	require.Equal(t, 0, code, errOut)
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
	cfg := tfRepo(t, 0, false)
	data := t.TempDir()
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
