package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

// mirroringRoot mirrors sensitive variables of every kind relcap must
// learn before Terraform prints them: a string (TF_VAR_api_token), a
// number (unseal_pin, from the configured var file), a string from an
// *.auto.tfvars file (webhook_secret) and a multi-line key (tls_key, its
// default). terraform_data copies each into an output Terraform does not
// mark, and nonsensitive() exposes two directly: Terraform prints them in
// clear in the plan's "Changes to Outputs" and the apply's "Outputs:".
const mirroringRoot = `
variable "replicas" {
  type = number
}

variable "api_token" {
  type      = string
  sensitive = true
}

variable "unseal_pin" {
  type      = number
  sensitive = true
}

variable "webhook_secret" {
  type      = string
  sensitive = true
}

variable "tls_key" {
  type      = string
  sensitive = true
  default   = <<-EOT
    -----BEGIN TEST KEY-----
    MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7
    VJTUt9Us8cKjMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDu
    -----END TEST KEY-----
  EOT
}

resource "terraform_data" "app" {
  input = { replicas = var.replicas }
}

resource "terraform_data" "token" { input = var.api_token }
resource "terraform_data" "pin" { input = var.unseal_pin }
resource "terraform_data" "hook" { input = var.webhook_secret }
resource "terraform_data" "key" { input = var.tls_key }

output "token" {
  value     = terraform_data.token.output
  sensitive = true
}
output "token_mirror" { value = terraform_data.token.output }
output "pin_mirror" { value = terraform_data.pin.output }
output "hook_mirror" { value = terraform_data.hook.output }
output "key_mirror" { value = terraform_data.key.output }
output "token_exposed" { value = nonsensitive(var.api_token) }
output "pin_exposed" { value = nonsensitive(var.unseal_pin) }
`

// mirroredKeyLines are the secret lines of tls_key.
var mirroredKeyLines = []string{
	"MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
	"VJTUt9Us8cKjMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDu",
}

// TestSecretsAreLearntBeforeTerraformPrintsThem (issue 26, attacks 1, 2
// and 13): mirroringRoot is planned, approved and applied through the
// command line, then rotated (new token, PIN and webhook secret: the plan
// prints old mirrors and new exposures) twice, the second time in the
// cockpit, whose screen is recorded. No value, old or new, appears in any
// command's output, any journal, the ledger's files (WAL included) or the
// recording. Before, relcap learnt the plan's sensitive variables only
// after Terraform printed the plan, `relcap apply` never learnt them, and
// numbers were never learnt at all.
//
// In a process of its own (ranInOwnProcess): Terraform reads TF_VAR_api_token
// from the process's own environment, as it does for a captain.
func TestSecretsAreLearntBeforeTerraformPrintsThem(t *testing.T) {
	if ranInOwnProcess(t) {
		return
	}
	cfg, env, host := tfRepo(t, 1, true)
	root := filepath.Join(filepath.Dir(cfg), "infra/staging")
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.tf"), []byte(mirroringRoot), 0o644))
	data := t.TempDir()
	var outputs bytes.Buffer
	cmd := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := invokeEnv(t, data, env, append([]string{"-c", cfg}, args...)...)
		outputs.WriteString(out + errOut)
		require.Equal(t, want, code, "relcap %s:\n%s%s", strings.Join(args, " "), out, errOut)
		return out
	}
	var values []string
	rotate := func(token, pin, hook string) {
		t.Setenv("TF_VAR_api_token", token)
		require.NoError(t, os.WriteFile(filepath.Join(root, "staging.tfvars"), []byte("replicas = 1\nunseal_pin = "+pin+"\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(root, "hooks.auto.tfvars"), []byte("webhook_secret = \""+hook+"\"\n"), 0o644))
		values = append(values, token, pin, hook)
	}
	release := func(n int, token, pin, hook string) {
		rotate(token, pin, hook)
		var p struct{ Fingerprint string }
		out := cmd(exitOK, "--json", "plan", "--env", "staging")
		require.NoError(t, json.Unmarshal([]byte(out), &p), out)
		cmd(exitOK, "--actor", "bob", "approve", "--plan", p.Fingerprint)
		cmd(exitOK, "apply", "--plan", p.Fingerprint)
		image := host + "/ci/web:1." + itoa(n) + ".0"
		pushImage(t, image)
		cmd(exitOK, "promote", "--env", "staging", "--image", image)
		cmd(exitOK, "converge", "--env", "staging", "--timeout", "60s")
	}
	release(1, "tok-7f3a9c2e51", "48291375", "hook-5b1d7e90aa")
	release(2, "tok-rotated-88d1e0", "73920461", "hook-rotated-c3f4")

	// The cockpit plans the third rotation and stops for bob's approval;
	// the log pane (Terraform's plan) is on the screen, which is recorded.
	rotate("tok-cockpit-41be27", "65018273", "hook-cockpit-9e2d")
	outputs.WriteString(cockpitPlanShowsTheLogPane(t, data, cfg, env))

	var sessions []workflow.Session
	require.NoError(t, json.Unmarshal([]byte(cmd(exitOK, "--json", "journal", "list")), &sessions))
	for _, s := range sessions {
		cmd(exitOK, "journal", "show", s.ID)
	}
	require.Contains(t, outputs.String(), "pin_exposed", "Terraform's outputs were printed: the test is real")
	require.Contains(t, outputs.String(), "(sensitive)", "masked values say so")

	forms := func(v string) map[string]string {
		return map[string]string{"raw": v, "base64": base64.StdEncoding.EncodeToString([]byte(v))}
	}
	check := func(where, text string) {
		t.Helper()
		for _, v := range values {
			for name, form := range forms(v) {
				require.NotContains(t, text, form, "the %s form of a sensitive value in %s", name, where)
			}
		}
		// Waits for scrub's branch (multi-line values masked line by
		// line): tls_key is learnt before Terraform runs, but until then
		// the scrubber masks it only whole, and Terraform prints it as a
		// heredoc, line by line.
		for _, l := range mirroredKeyLines {
			require.NotContains(t, text, l, "a line of the sensitive key in %s (multi-line masking: scrub's branch)", where)
		}
	}
	check("relcap's output", outputs.String())
	// Every file relcap wrote: the ledger (and its WAL), journals,
	// recordings; the saved plans are Terraform's own files, 0600 in the
	// private plan store, and hold values by design.
	files := 0
	require.NoError(t, filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		sep := string(filepath.Separator)
		if strings.Contains(path, sep+"plans"+sep) || strings.Contains(path, sep+"cache"+sep) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		check(path, string(b))
		return nil
	}))
	casts, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*", "screen.cast"))
	require.NoError(t, err)
	require.Len(t, casts, 1, "the cockpit's recording was scanned")
	require.Greater(t, files, 5)
}
