package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/workflow"
)

// leakyRoot copies a sensitive variable into terraform_data in several
// encodings. Terraform marks input sensitive, but the provider's output
// (a copy of input) is unmarked: Terraform's own plan prints it once the
// resource is replaced, and so did relcap's review.
const leakyRoot = `
variable "replicas" {
  type = number
}

variable "db_secret" {
  type      = string
  sensitive = true
}

resource "terraform_data" "db" {
  input = {
    password = var.db_secret
    b64      = base64encode(var.db_secret)
    json     = jsonencode({ password = var.db_secret })
    url      = "postgres://app:${urlencode(var.db_secret)}@db/app"
  }
  triggers_replace = [var.replicas]
}

output "dsn" {
  value     = "postgres://app:${var.db_secret}@db/app"
  sensitive = true
}
`

// dbSecret has characters every encoding changes.
const dbSecret = `Sup3r"Secret/Value+42&<x>`

// secretForms are what the secret looks like wherever it might travel.
func secretForms() map[string]string {
	j, _ := json.Marshal(dbSecret)
	jj, _ := json.Marshal(string(j))
	return map[string]string{
		"raw":            dbSecret,
		"json-escaped":   string(j[1 : len(j)-1]),
		"json in json":   string(jj[1 : len(jj)-1]),
		"base64":         base64.StdEncoding.EncodeToString([]byte(dbSecret)),
		"url":            url.QueryEscape(dbSecret),
		"recognisable":   "Sup3r",
		"recognisable 2": "Value+42",
	}
}

// TestASecretFlowingIntoDerivedAttributesLeaksNowhere: a release whose
// Terraform root copies a sensitive variable (given as TF_VAR_db_secret,
// in no file) into derived attributes is planned, approved, applied,
// replaced (so the unmarked copy is in the plan's before values), reviewed
// as JSON, driven in the cockpit and reported; the secret appears in none
// of the commands' output, the journals, the ledger's files, the screen
// recording or the reports.
//
// In a process of its own (ranInOwnProcess): Terraform reads TF_VAR_db_secret
// from the process's own environment, as it does for a captain.
func TestASecretFlowingIntoDerivedAttributesLeaksNowhere(t *testing.T) {
	if ranInOwnProcess(t) {
		return
	}
	t.Setenv("TF_VAR_db_secret", dbSecret)
	cfg, env, host := tfRepo(t, 1, true)
	dir := filepath.Dir(cfg)
	root := filepath.Join(dir, "infra/staging")
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.tf"), []byte(leakyRoot), 0o644))
	data := t.TempDir()
	var outputs bytes.Buffer
	cmd := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := invokeEnv(t, data, env, append([]string{"-c", cfg}, args...)...)
		outputs.WriteString(out + errOut)
		require.Equal(t, want, code, "relcap %s:\n%s%s", strings.Join(args, " "), out, errOut)
		return out
	}
	fingerprint := func(out string) string {
		var p struct{ Fingerprint string }
		require.NoError(t, json.Unmarshal([]byte(out), &p), out)
		require.Len(t, p.Fingerprint, 64)
		return p.Fingerprint
	}
	release := func(replicas int) {
		require.NoError(t, os.WriteFile(filepath.Join(root, "staging.tfvars"), []byte("replicas = "+itoa(replicas)+"\n"), 0o644))
		fp := fingerprint(cmd(exitOK, "--json", "plan", "--env", "staging"))
		cmd(exitOK, "--actor", "bob", "approve", "--plan", fp)
		cmd(exitOK, "apply", "--plan", fp)
		image := host + "/ci/web:1." + itoa(replicas) + ".0"
		pushImage(t, image)
		cmd(exitOK, "promote", "--env", "staging", "--image", image)
		cmd(exitOK, "converge", "--env", "staging", "--timeout", "60s")
	}
	release(1)
	release(2) // replaces terraform_data.db: its unmarked output is a before value now
	cmd(exitOK, "plan", "--env", "staging")

	// The same plan as a CI job would upload it, reviewed from JSON.
	require.NoError(t, os.WriteFile(filepath.Join(root, "staging.tfvars"), []byte("replicas = 3\n"), 0o644))
	tfEnv := append(os.Environ(), env...)
	showJSON := terraformShowJSON(t, root, tfEnv)
	require.Contains(t, showJSON, `Sup3r\"Secret/Value+42\u0026\u003cx\u003e`, "the plan document holds the secret in clear (JSON-escaped): the test is real")
	doc := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(doc, []byte(showJSON), 0o600))
	cmd(exitOK, "plan", "--from-json", doc)
	cmd(exitOK, "--json", "plan", "--from-json", doc)

	// The cockpit plans replicas = 3 and stops for bob's approval; its
	// screen is recorded.
	outputs.WriteString(cockpitPlanShowsTheLogPane(t, data, cfg, env))

	cmd(exitOK, "report", "effort", "--format", "json")
	cmd(exitOK, "report", "effort", "--format", "html")
	cmd(exitOK, "report", "measures", "--format", "csv")
	cmd(exitOK, "journal", "verify")
	var sessions []workflow.Session
	require.NoError(t, json.Unmarshal([]byte(cmd(exitOK, "--json", "journal", "list")), &sessions))
	for _, s := range sessions {
		cmd(exitOK, "journal", "show", s.ID)
	}

	for name, form := range secretForms() {
		require.NotContains(t, outputs.String(), form, "the %s form of the secret in relcap's output", name)
	}
	require.Contains(t, outputs.String(), "(sensitive)", "masked values say so")
	// Every file relcap wrote: the ledger (and its WAL), journals,
	// recordings; the saved plans are Terraform's own files, 0600 in the
	// private plan store, and hold it by design.
	files := 0
	require.NoError(t, filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.Contains(path, string(filepath.Separator)+"plans"+string(filepath.Separator)) || strings.Contains(path, string(filepath.Separator)+"cache"+string(filepath.Separator)) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for name, form := range secretForms() {
			require.NotContains(t, string(b), form, "the %s form of the secret in %s", name, path)
		}
		return nil
	}))
	casts, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*", "screen.cast"))
	require.NoError(t, err)
	require.Len(t, casts, 1, "the cockpit's recording was scanned")
	require.Greater(t, files, 5)
}

// terraformShowJSON plans root and returns `terraform show -json` of the
// plan, as a CI job would produce it.
func terraformShowJSON(t *testing.T, root string, env []string) string {
	t.Helper()
	plan := filepath.Join(t.TempDir(), "ci.tfplan")
	tf := func(args ...string) string {
		c := exec.Command("terraform", append([]string{"-chdir=" + root}, args...)...)
		c.Env = env
		out, err := c.Output()
		require.NoError(t, err, "terraform %s", strings.Join(args, " "))
		return string(out)
	}
	tf("plan", "-input=false", "-no-color", "-var-file=staging.tfvars", "-out="+plan)
	return tf("show", "-json", plan)
}

// cockpitPlanShowsTheLogPane runs relcap release at a (piped) terminal in
// staging until its plan waits for another person's approval, opens the
// log pane (Terraform's own plan output), quits, and returns everything
// the cockpit printed, screen and stderr, for a leak scan.
func cockpitPlanShowsTheLogPane(t *testing.T, data, cfg string, env []string) string {
	t.Helper()
	keys, typing := io.Pipe()
	var screen, errb bytes.Buffer
	tio := &IO{In: keys, Out: &screen, Err: &errb, IsTTY: true,
		Env: append([]string{"XDG_DATA_HOME=" + data, "XDG_STATE_HOME=" + filepath.Join(data, "state"), "XDG_CACHE_HOME=" + filepath.Join(data, "cache"), "USER=captain", "TERM=xterm-256color"}, env...)}
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), tio, []string{"-c", cfg, "release", "--env", "staging", "--image", "unused.invalid/web:1"})
	}()
	watch, err := store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rs, err := watch.ListReleases(t.Context(), workflow.ReleaseFilter{Env: "staging", Limit: 1})
		return err == nil && len(rs) == 1 && rs[0].Step(workflow.StepPlanReview).Status == workflow.Blocked
	}, 2*time.Minute, 100*time.Millisecond, "the cockpit's plan waits for bob")
	require.NoError(t, watch.Close())
	time.Sleep(500 * time.Millisecond)
	_, _ = typing.Write([]byte("l")) // the log pane: Terraform's own plan output
	time.Sleep(500 * time.Millisecond)
	_, _ = typing.Write([]byte("q"))
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the cockpit did not quit")
	}
	_ = typing.Close()
	require.Contains(t, screen.String(), "Terraform", "the log pane was on the screen")
	return screen.String() + errb.String()
}
