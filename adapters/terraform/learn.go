package terraform

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/relcap/relcap/workflow/secret"
)

// Secrets are learnt before Terraform prints anything: what Terraform
// streams (the plan's "Changes to Outputs", the apply's "Outputs:") goes to
// the captain's screen, the cockpit's recording and the journal line by
// line as it comes, and a value learnt afterwards is too late for what
// was already shown. Before a plan relcap learns the values of the root's
// sensitive variables (learnSensitiveVariables) and the current state's
// sensitive values (stateIdentity); before an apply, every value the saved
// plan holds as sensitive (learnSavedPlan).

// learnSensitiveVariables teaches a.secrets the value of every variable of
// t's root declared sensitive, exactly as Terraform resolves it for a plan:
// the configured var files, terraform.tfvars, *.auto.tfvars(.json),
// TF_VAR_* and defaults. Terraform itself says which are sensitive and
// resolves their values, through `terraform console` with the plan's own
// var files; nothing it prints is shown. The working directory must be
// initialised and the workspace selected; the caller holds the
// working-directory lock.
func (a *Adapter) learnSensitiveVariables(ctx context.Context, t target) error {
	if a.secrets == nil {
		return nil
	}
	names, err := declaredVariables(t.dir)
	if err != nil || len(names) == 0 {
		return err
	}
	sensitive, err := a.sensitiveNames(ctx, t, names)
	if errors.Is(err, errUndeclared) {
		return nil // the one name the scan found is no variable
	}
	if err != nil {
		return fmt.Errorf("reading which variables of %s are sensitive before running terraform (so their values are masked in its output): %w", t.dir, err)
	}
	if len(sensitive) == 0 {
		return nil
	}
	values, err := a.sensitiveValues(ctx, t, sensitive)
	if err == nil {
		learnValue(a.secrets, values)
		return nil
	}
	if !errors.Is(err, errNoValue) {
		return fmt.Errorf("reading the sensitive variables of %s before running terraform (so their values are masked in its output): %w", t.dir, err)
	}
	// A variable may have no value (Terraform's plan says so itself):
	// each is asked alone, so the others are still learnt.
	for _, n := range sensitive {
		v, err := a.sensitiveValues(ctx, t, []string{n})
		switch {
		case err == nil:
			learnValue(a.secrets, v)
		case errors.Is(err, errNoValue):
			// Nothing to learn: no value is no secret.
		default:
			return fmt.Errorf("reading the sensitive variable %s of %s before running terraform (so its value is masked in its output): %w", n, t.dir, err)
		}
	}
	return nil
}

// Why terraform console gave no value: a variable without one (the
// console says "(known after apply)"), or a name that is not a variable.
var (
	errNoValue    = errors.New("a variable has no value")
	errUndeclared = errors.New("not a declared variable")
)

// consoleSensitive is how the console prints an object's attribute whose
// value is sensitive: `  "name" = (sensitive value)`.
var consoleSensitive = regexp.MustCompile(`(?m)^[ \t]*"([^"\n]+)"[ \t]*=[ \t]*\(sensitive value\)[ \t]*$`)

// sensitiveNames are those of names whose value Terraform holds as
// sensitive. The console is asked for {"name" = var.name == null, ...}:
// a comparison with a sensitive value is sensitive, and the console prints
// it as "(sensitive value)"; of the others it prints true or false, never
// a value. (This works on every Terraform relcap runs, issensitive() came
// only with 1.8.) A name the scan found that is no variable (a block
// header inside a heredoc) makes the console refuse the question: each is
// then asked alone, and those are dropped.
func (a *Adapter) sensitiveNames(ctx context.Context, t target, names []string) ([]string, error) {
	var expr strings.Builder
	expr.WriteString("{")
	for i, n := range names {
		if i > 0 {
			expr.WriteString(", ")
		}
		fmt.Fprintf(&expr, "%q = var.%s == null", n, n)
	}
	expr.WriteString("}")
	out, err := a.console(ctx, t, expr.String())
	whole := err == nil && strings.TrimSpace(out) == "(sensitive value)"
	if whole && len(names) == 1 {
		return names, nil
	}
	// A Terraform that marked the whole object would not say which:
	// each is then asked alone too.
	if (whole || errors.Is(err, errUndeclared)) && len(names) > 1 {
		var sensitive []string
		for _, n := range names {
			s, err := a.sensitiveNames(ctx, t, []string{n})
			if errors.Is(err, errUndeclared) {
				continue
			}
			if err != nil {
				return nil, err
			}
			sensitive = append(sensitive, s...)
		}
		return sensitive, nil
	}
	if err != nil {
		return nil, err
	}
	var sensitive []string
	for _, m := range consoleSensitive.FindAllStringSubmatch(out, -1) {
		if slices.Contains(names, m[1]) && !slices.Contains(sensitive, m[1]) {
			sensitive = append(sensitive, m[1])
		}
	}
	return sensitive, nil
}

// variableBlock finds `variable "name" {` (or an unquoted name) at the
// start of a line: HCL puts a block's header on one line.
var variableBlock = regexp.MustCompile(`(?m)^[ \t]*variable[ \t]+(?:"([^"\\\n]+)"|([A-Za-z_][A-Za-z0-9_-]*))[ \t]*\{`)

// declaredVariables are the names of the variables the root module in dir
// declares, from its configuration files as Terraform selects them
// (moduleFiles: *.tf and *.tf.json, no subdirectory of the root).
// Whether each is sensitive, and its value, is Terraform's to say.
func declaredVariables(dir string) ([]string, error) {
	files, err := moduleFiles(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, f := range files {
		if !f.isJSON() {
			for _, m := range variableBlock.FindAllSubmatch(f.src, -1) {
				seen[string(m[1])+string(m[2])] = true
			}
			continue
		}
		var doc struct {
			Variable json.RawMessage `json:"variable"`
		}
		if json.Unmarshal(f.src, &doc) != nil || len(doc.Variable) == 0 {
			continue // Terraform's own plan reports a file it cannot read
		}
		// "variable" is an object of blocks, or a list of such objects.
		var one map[string]json.RawMessage
		var many []map[string]json.RawMessage
		if json.Unmarshal(doc.Variable, &one) == nil {
			many = append(many, one)
		} else {
			_ = json.Unmarshal(doc.Variable, &many)
		}
		for _, blocks := range many {
			for n := range blocks {
				seen[n] = true
			}
		}
	}
	var names []string
	for n := range seen {
		if hclIdentifier(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// hclIdentifier reports whether s can follow "var." in an expression.
func hclIdentifier(s string) bool {
	for i, r := range s {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && (r == '-' || r >= '0' && r <= '9'):
		default:
			return false
		}
	}
	return s != ""
}

// sensitiveValues asks the console for the values of names, sensitive
// variables all, as one JSON object (base64 encoded, so the console's own
// string quoting cannot alter it). A variable Terraform has no value for
// yet fails the question with errNoValue.
func (a *Adapter) sensitiveValues(ctx context.Context, t target, names []string) (any, error) {
	var expr strings.Builder
	expr.WriteString("base64encode(jsonencode({")
	for i, n := range names {
		if i > 0 {
			expr.WriteString(", ")
		}
		fmt.Fprintf(&expr, "%q = nonsensitive(var.%s)", n, n)
	}
	expr.WriteString("}))")
	out, err := a.console(ctx, t, expr.String())
	if err != nil {
		return nil, err
	}
	enc, err := strconv.Unquote(strings.TrimSpace(out))
	if err != nil {
		// "(known after apply)": a variable without a value. Nothing of
		// the output is repeated: it may be a value.
		return nil, fmt.Errorf("terraform console in %s, variable(s) %s: %w", t.dir, strings.Join(names, ", "), errNoValue)
	}
	doc, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("terraform console in %s answered in a form relcap cannot read", t.dir)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // numbers as Terraform wrote them, not rounded to float64
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("terraform console in %s answered in a form relcap cannot read", t.dir)
	}
	return v, nil
}

// console evaluates expr with `terraform console` in t, with t's var
// files, and returns what it printed. Its output goes to a buffer, never
// to the screen; an error carries Terraform's diagnostic summaries only.
func (a *Adapter) console(ctx context.Context, t target, expr string) (string, error) {
	args := []string{"console", "-no-color"}
	for _, f := range t.varFiles {
		args = append(args, "-var-file="+f)
	}
	cmd := exec.CommandContext(ctx, t.binary, args...)
	cmd.Dir = t.dir
	cmd.Env = consoleEnv(os.Environ())
	cmd.Stdin = strings.NewReader(expr + "\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("terraform console in %s interrupted: %w", t.dir, ctx.Err())
		}
		if strings.Contains(errb.String(), "Reference to undeclared input variable") {
			return "", fmt.Errorf("terraform console in %s: %w", t.dir, errUndeclared)
		}
		return "", fmt.Errorf("terraform console in %s: %w: %s", t.dir, err, diagnosticSummaries(errb.String()))
	}
	return out.String(), nil
}

// consoleEnv is relcap's environment as terraform-exec passes it to the
// Terraform it runs: no logging (TF_LOG would write values to a log), no
// workspace override (the workspace is selected), automation mode.
func consoleEnv(environ []string) []string {
	env := make([]string, 0, len(environ)+6)
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "TF_LOG", "TF_LOG_CORE", "TF_LOG_PATH", "TF_LOG_PROVIDER", "TF_WORKSPACE", "TF_IN_AUTOMATION", "TF_INPUT":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TF_LOG=", "TF_LOG_CORE=", "TF_LOG_PATH=", "TF_LOG_PROVIDER=", "TF_IN_AUTOMATION=1", "TF_INPUT=0")
}

// diagnosticSummaries keeps of Terraform's diagnostics their summaries
// ("Error: Invalid expression") and locations ("on x.tfvars line 2:"),
// never the source lines or details it quotes: those may hold a value.
func diagnosticSummaries(stderr string) string {
	var kept []string
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "│╷╵"))
		if strings.HasPrefix(l, "Error: ") || strings.HasPrefix(l, "on ") && strings.HasSuffix(l, ":") {
			kept = append(kept, l)
		}
	}
	if len(kept) == 0 {
		return "terraform gave no diagnostic"
	}
	return strings.Join(kept, " ")
}

// learnSavedPlan teaches a.secrets every value the saved plan holds as
// sensitive, before it is applied: the values of its sensitive variables
// (a `relcap apply` in a new process has not planned, so nothing learnt
// them), and the values its resource and output changes mark sensitive.
// `terraform show -json` goes to a buffer, never to the screen.
func (a *Adapter) learnSavedPlan(ctx context.Context, t target, planFile string) error {
	if a.secrets == nil {
		return nil
	}
	doc, err := a.showPlanJSON(ctx, t, planFile)
	if err != nil {
		return fmt.Errorf("reading the saved plan's sensitive values before applying it: %w", err)
	}
	// Reading learns as it goes; only what it learnt is kept.
	if _, err := readDocument(doc, "the plan "+filepath.Base(planFile), t.env, a.secrets); err != nil {
		return fmt.Errorf("reading the saved plan's sensitive values before applying it: %w", err)
	}
	return nil
}

// learnValue teaches secrets v, a value Terraform holds as sensitive, of
// any type: secret.Set.AddValue decides the forms each type is learnt in
// (each string; each number as JSON writes it and as Terraform's plan
// renders it; each leaf of a list or map; booleans not at all).
func learnValue(secrets *secret.Set, v any) {
	secrets.AddValue(v)
}

// learnBeforeRun is everything learnt before Terraform plans in t: the
// sensitive variables. (The state's sensitive values are learnt as the
// inputs are read, stateIdentity.) A failure stops the plan: planning
// without knowing the secrets would show them, and what made Terraform
// fail here (a var file it cannot read) fails its plan alike.
func (a *Adapter) learnBeforeRun(ctx context.Context, t target) error {
	return a.learnSensitiveVariables(ctx, t)
}
