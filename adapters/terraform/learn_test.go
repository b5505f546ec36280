package terraform

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/secret"
)

// mirrorRoot mirrors three sensitive variables, a string, a number and a
// multi-line key, through terraform_data (whose output Terraform does not
// mark) into plain outputs, and exposes two of them with nonsensitive():
// Terraform prints all of them in clear, in the plan's "Changes to
// Outputs" or the apply's "Outputs:".
const mirrorRoot = `
variable "api_token" {
  type      = string
  sensitive = true
}

variable "unseal_pin" {
  type      = number
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

variable "region" {
  type    = string
  default = "eu-central-1"
}

resource "terraform_data" "token" { input = var.api_token }
resource "terraform_data" "pin" { input = var.unseal_pin }
resource "terraform_data" "key" { input = var.tls_key }

output "token" {
  value     = terraform_data.token.output
  sensitive = true
}
output "token_mirror" { value = terraform_data.token.output }
output "pin_mirror" { value = terraform_data.pin.output }
output "key_mirror" { value = terraform_data.key.output }
output "token_exposed" { value = nonsensitive(var.api_token) }
output "pin_exposed" { value = nonsensitive(var.unseal_pin) }
output "region" { value = var.region }
`

// keyLines are the lines of tls_key's default that are secret.
var keyLines = []string{
	"MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
	"VJTUt9Us8cKjMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDu",
}

// lineScrubber is what the workflow's tool output does (outputLines): it
// scrubs each line with the secrets known when the line is complete, so
// a value learnt after Terraform printed it is a leak here as it is on
// the captain's screen.
type lineScrubber struct {
	mu      sync.Mutex
	secrets *secret.Set
	partial []byte
	out     bytes.Buffer
}

func (l *lineScrubber) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.out.WriteString(l.secrets.Scrub(string(l.partial[:i])) + "\n")
		l.partial = l.partial[i+1:]
	}
}

func (l *lineScrubber) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.String() + string(l.partial)
}

// TestSensitiveValuesAreLearntBeforeTerraformPrintsThem plans and applies
// mirrorRoot through fresh adapters (a new relcap process each, as
// `relcap plan` and `relcap apply` are), with the values from TF_VAR_, a
// var file and a default, then rotates the token and the PIN: no value,
// old or new, reaches what Terraform streamed, scrubbed line by line as it
// came. Before, the plan printed token_exposed and pin_exposed and the
// apply printed every mirror in clear: nothing was learnt until the plan
// was reviewed, and apply learnt nothing from the saved plan.
//
// Not parallel: TF_VAR_api_token is the process's environment.
func TestSensitiveValuesAreLearntBeforeTerraformPrintsThem(t *testing.T) {
	bin := terraformtest.Binary(t)
	dir, planDir := t.TempDir(), filepath.Join(t.TempDir(), "plans")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(mirrorRoot), 0o644))
	varFile := filepath.Join(dir, "secrets.tfvars")
	env := workflow.Environment{Name: "dev", Terraform: workflow.TerraformTarget{Dir: dir, Workspace: "default", VarFiles: []string{varFile}}}
	process := func() (*Adapter, *lineScrubber, *secret.Set) {
		set := secret.NewSet()
		out := &lineScrubber{secrets: set}
		a, err := New(Options{Binary: bin, PlanDir: planDir, Clock: &fixedClock{t: testNow}, Stdout: out, Stderr: out, Secrets: set})
		require.NoError(t, err)
		return a, out, set
	}
	var shown strings.Builder
	values := []string{}
	release := func(token, pin string) {
		t.Setenv("TF_VAR_api_token", token)
		require.NoError(t, os.WriteFile(varFile, []byte("unseal_pin = "+pin+"\n"), 0o644))
		values = append(values, token, pin)

		a, out, set := process()
		s, err := reviewed(a.Plan(t.Context(), env, "alice"))
		require.NoError(t, err, out.String())
		require.True(t, set.Contains("-----BEGIN TEST KEY-----\n"+strings.Join(keyLines, "\n")+"\n-----END TEST KEY-----\n"), "the key's default is learnt")
		shown.WriteString(out.String())

		a, out, _ = process()
		_, err = a.Apply(t.Context(), request(env, s))
		require.NoError(t, err, out.String())
		require.Contains(t, out.String(), "Outputs:", "the apply printed its outputs: the test is real")
		shown.WriteString(out.String())
	}
	release("tok-7f3a9c2e51", "48291375")
	release("tok-rotated-88d1e0", "73920461") // the plan shows the old mirrors -> (known after apply)

	got := shown.String()
	require.Contains(t, got, `region = "eu-central-1"`, "a value not sensitive is shown as it is")
	require.Contains(t, got, "pin_exposed", "Terraform printed the exposures")
	for _, v := range values {
		require.NotContains(t, got, v, "a sensitive value in Terraform's streamed output")
	}
	// Waits for scrub's branch (multi-line values masked line by line):
	// the key is learnt before the run (asserted above), but today's
	// scrubber matches it only whole, and Terraform prints it as a heredoc.
	for _, l := range keyLines {
		require.NotContains(t, got, l, "a line of the sensitive key in Terraform's streamed output (multi-line masking: scrub's branch)")
	}
}

func TestDeclaredVariables(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	write("main.tf", "variable \"a\" {\n  sensitive = true\n}\nvariable b {}\n  variable \"c-d\" { sensitive = true }\n# variable \"in_comment\" {\nlocals { x = \"variable \\\"no\\\" {\" }\n")
	write("vars.tf.json", `{"variable": {"e": {"sensitive": true}, "f": {}}}`)
	write("list.tf.json", `{"variable": [{"g": {}}]}`)
	write(".hidden.tf", "variable \"hidden\" {}\n")
	write("notes.txt", "variable \"txt\" {}\n")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "modules"), 0o755))
	write("modules/m.tf", "variable \"sub\" {}\n")
	names, err := declaredVariables(dir)
	require.NoError(t, err)
	// A block header in a string or comment would be a false positive
	// Terraform answers for (undeclared): learnSensitiveVariables asks
	// each name alone then, and drops it.
	require.Equal(t, []string{"a", "b", "c-d", "e", "f", "g"}, names)
}

func TestLearnValueLearnsEveryLeafInTheFormsTerraformPrints(t *testing.T) {
	t.Parallel()
	set := secret.NewSet()
	learnValue(set, map[string]any{
		"n":    []any{json.Number("1.25e8"), 12345678.5},
		"s":    "a-string-secret",
		"b":    true,
		"deep": map[string]any{"x": []any{"leaf-secret-1"}},
	})
	for _, v := range []string{"1.25e8", "125000000", "12345678.5", "a-string-secret", "leaf-secret-1"} {
		require.True(t, set.Contains("x "+v+" y"), v)
	}
	require.False(t, set.Contains("enabled = true"), "a boolean is not learnt")
}

// TestLearnSensitiveVariablesAsksEachNameAloneWhenOneHasNoAnswer: a block
// header inside a heredoc is no variable, and a required variable may
// have no value yet; the others are still learnt, and a variable not
// declared sensitive never is.
func TestLearnSensitiveVariablesAsksEachNameAloneWhenOneHasNoAnswer(t *testing.T) {
	t.Parallel()
	bin := terraformtest.Binary(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`
variable "db_password" {
  sensitive = true
  default   = "pw-from-default-31c9"
}
variable "missing" {
  type      = string
  sensitive = true
}
variable "region" {
  default = "eu-central-1-plain"
}
locals {
  doc = <<-EOT
variable "ghost" {
  EOT
}
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.auto.tfvars.json"), []byte(`{"region": "eu-west-3-plain"}`), 0o644))
	set := secret.NewSet()
	a, err := New(Options{Binary: bin, PlanDir: filepath.Join(t.TempDir(), "plans"), Secrets: set})
	require.NoError(t, err)
	names, err := declaredVariables(dir)
	require.NoError(t, err)
	require.Contains(t, names, "ghost", "the scan's false positive is there: the test is real")
	require.NoError(t, a.learnSensitiveVariables(t.Context(), target{env: "dev", dir: dir, workspace: "default", binary: a.binary}))
	require.True(t, set.Contains("pw-from-default-31c9"))
	require.False(t, set.Contains("eu-central-1-plain"), "a variable not declared sensitive is not a secret")
	require.False(t, set.Contains("eu-west-3-plain"))
	// Nothing but db_password was learnt: the value itself and the JSON
	// rendering of the object Terraform answered with (Set.AddValue).
	require.Equal(t, "(sensitive) eu-central-1-plain eu-west-3-plain ghost missing",
		set.Scrub("pw-from-default-31c9 eu-central-1-plain eu-west-3-plain ghost missing"))
}

// TestABrokenVarFileFailsTheLearningWithoutQuotingIt: Terraform quotes
// the offending source line in its diagnostic; relcap's error keeps the
// summary and the location only, so a value on that line stays out.
func TestABrokenVarFileFailsTheLearningWithoutQuotingIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "variable \"token\" {\n  sensitive = true\n}\n")
	f.a.secrets = secret.NewSet()
	f.varFile("broken.tfvars", "token = \"tok-unterminated-5d2a\n")
	_, err := f.a.Plan(t.Context(), f.env, "alice")
	require.Error(t, err)
	require.Contains(t, err.Error(), "broken.tfvars line 1")
	require.Contains(t, err.Error(), "Error: Unterminated template string", "Terraform's summary is kept")
	require.NotContains(t, err.Error(), "tok-unterminated-5d2a")
}

// TestARootWhoseOnlyVariableHeaderIsInAStringPlans: the scan's one false
// positive is no reason to refuse the plan.
func TestARootWhoseOnlyVariableHeaderIsInAStringPlans(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "locals {\n  doc = <<-EOT\nvariable \"ghost\" {\n  EOT\n}\nresource \"terraform_data\" \"a\" {\n  input = local.doc\n}\n")
	f.a.secrets = secret.NewSet()
	s := f.plan()
	require.Equal(t, 1, s.Counts.Create)
	require.Zero(t, f.a.secrets.Len())
}
