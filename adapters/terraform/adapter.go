// Package terraform implements workflow.Planner and workflow.Applier over the
// terraform (or tofu) CLI through hashicorp/terraform-exec, and reads plan
// JSON documents with hashicorp/terraform-json. No SDK type leaves the
// package: plans become tfplan.Facts (the core reviews them), failures
// become errors that wrap the workflow sentinels (ErrUsage, ErrStalePlan,
// ErrLocked).
//
// Saved plans live in a private plan store (a directory of mode 0700 holding
// <fingerprint>.tfplan files of mode 0600). Within one machine, relcap runs
// one operation at a time per Terraform working directory, using flock(2) on
// a lock file in the plan store; across machines, Terraform's own state lock
// protects the state, and relcap never disables it.
package terraform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tooloutput"
)

var (
	_ workflow.Planner = (*Adapter)(nil)
	_ workflow.Applier = (*Adapter)(nil)
)

// Options configure an Adapter.
type Options struct {
	// Binary is the terraform or tofu executable, a name looked up on PATH
	// or a path; empty means "terraform". An environment's
	// TerraformTarget.Binary overrides it.
	Binary string
	// PlanDir is the private plan store, e.g. $XDG_STATE_HOME/relcap/plans.
	// It is created with mode 0700, and tightened to 0700 if it exists with
	// looser permissions. Required.
	PlanDir string
	// Clock stamps plans and ages locks; nil means the wall clock.
	Clock workflow.Clock
	// Stdout and Stderr receive Terraform's human-readable progress from
	// init, plan and apply (Terraform masks sensitive values there itself)
	// and relcap's own waiting notices, for operations whose context
	// carries no tool output of its own (tooloutput.With). Either
	// may be nil. Machine-readable output (plan JSON, state), which holds
	// sensitive values in clear, never goes to them. Writes are
	// serialized, so one writer may serve both.
	Stdout io.Writer
	Stderr io.Writer
	// RehearsalDir is where the failed-apply drill keeps its scratch
	// roots, e.g. $XDG_STATE_HOME/relcap/rehearsals; empty means this
	// adapter cannot make one (rehearsal.Roots refuses).
	RehearsalDir string
	// Secrets learns every value Terraform marks sensitive (in state and
	// plans) and the values of variables declared sensitive, and masks
	// them in what the adapter reviews; nil learns nothing.
	Secrets *secret.Set
}

// Adapter runs Terraform for relcap. It is safe for concurrent use: every
// operation builds its own *tfexec.Terraform, whose setters are not.
type Adapter struct {
	binary  string
	planDir string
	clock   workflow.Clock
	stdout  io.Writer
	stderr  io.Writer
	secrets *secret.Set
	// rehearsalDir holds the failed-apply drill's scratch roots.
	rehearsalDir string

	// envKey keys the hashes of TF_VAR_* values (envVarKey).
	keyOnce   sync.Once
	envKey    []byte
	envKeyErr error
}

// New validates opts and returns an Adapter. The binary must be found and the
// plan store must be creatable; both failures wrap fault.ErrUsage.
func New(opts Options) (*Adapter, error) {
	bin := opts.Binary
	if bin == "" {
		bin = "terraform"
	}
	path, err := lookBinary(bin)
	if err != nil {
		return nil, err
	}
	if opts.PlanDir == "" {
		return nil, fmt.Errorf("%w: terraform adapter: no plan directory given", fault.ErrUsage)
	}
	dir, err := filepath.Abs(opts.PlanDir)
	if err != nil {
		return nil, fmt.Errorf("%w: plan directory %s: %w", fault.ErrUsage, opts.PlanDir, err)
	}
	if err := ensurePrivateDir(dir); err != nil {
		return nil, err
	}
	a := &Adapter{
		binary:  path,
		planDir: dir,
		clock:   opts.Clock,
		secrets: opts.Secrets,
	}
	if opts.RehearsalDir != "" {
		if a.rehearsalDir, err = filepath.Abs(opts.RehearsalDir); err != nil {
			return nil, fmt.Errorf("%w: rehearsal directory %s: %w", fault.ErrUsage, opts.RehearsalDir, err)
		}
	}
	if a.clock == nil {
		a.clock = workflow.SystemClock{}
	}
	// terraform-exec copies stdout and stderr from two goroutines; one
	// mutex over both keeps a shared writer (a terminal, a test buffer)
	// from interleaving mid-line or racing.
	mu := &sync.Mutex{}
	if opts.Stdout != nil {
		a.stdout = &lockedWriter{mu: mu, w: opts.Stdout}
	}
	if opts.Stderr != nil {
		a.stderr = &lockedWriter{mu: mu, w: opts.Stderr}
	}
	return a, nil
}

// PlanDir returns the absolute path of the private plan store.
func (a *Adapter) PlanDir() string { return a.planDir }

func lookBinary(bin string) (string, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("%w: terraform binary %q not found (install terraform or tofu, or set its path): %w", fault.ErrUsage, bin, err)
	}
	return path, nil
}

// ensurePrivateDir creates dir with mode 0700, or tightens an existing one:
// saved plans hold sensitive values in clear.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%w: creating plan directory %s: %w", fault.ErrUsage, dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%w: plan directory %s: %w", fault.ErrUsage, dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: plan directory %s is not a directory", fault.ErrUsage, dir)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("%w: making plan directory %s private (mode 0700): %w", fault.ErrUsage, dir, err)
		}
	}
	return nil
}

// target is a validated workflow.TerraformTarget.
type target struct {
	env       string
	dir       string
	workspace string
	varFiles  []string
	binary    string
}

func (a *Adapter) target(env workflow.Environment) (target, error) {
	tt := env.Terraform
	t := target{env: env.Name, workspace: tt.Workspace, binary: a.binary}
	if t.workspace == "" {
		t.workspace = "default"
	}
	if tt.Dir == "" || !filepath.IsAbs(tt.Dir) {
		return t, fmt.Errorf("%w: environment %s: terraform dir %q must be an absolute path", fault.ErrUsage, env.Name, tt.Dir)
	}
	t.dir = filepath.Clean(tt.Dir)
	fi, err := os.Stat(t.dir)
	if err != nil {
		return t, fmt.Errorf("%w: environment %s: terraform dir: %w", fault.ErrUsage, env.Name, err)
	}
	if !fi.IsDir() {
		return t, fmt.Errorf("%w: environment %s: terraform dir %s is not a directory", fault.ErrUsage, env.Name, t.dir)
	}
	for _, f := range tt.VarFiles {
		if !filepath.IsAbs(f) {
			return t, fmt.Errorf("%w: environment %s: var file %q must be an absolute path", fault.ErrUsage, env.Name, f)
		}
		if _, err := os.Stat(f); err != nil {
			return t, fmt.Errorf("%w: environment %s: var file: %w", fault.ErrUsage, env.Name, err)
		}
		t.varFiles = append(t.varFiles, filepath.Clean(f))
	}
	if tt.Binary != "" {
		if t.binary, err = lookBinary(tt.Binary); err != nil {
			return t, fmt.Errorf("environment %s: %w", env.Name, err)
		}
	}
	return t, nil
}

// terraforms returns two clients for one operation: loud streams Terraform's
// human output (init, plan, apply) to the operation's tool output (the
// writer tooloutput.With put in ctx: the cockpit's log pane, the
// journal) or else to the adapter's writers; quiet streams nothing, for
// commands whose stdout is plan JSON or state, which carry sensitive
// values in clear.
func (a *Adapter) terraforms(ctx context.Context, t target) (loud, quiet *tfexec.Terraform, err error) {
	loud, err = tfexec.NewTerraform(t.dir, t.binary)
	if err != nil {
		return nil, nil, fmt.Errorf("terraform in %s: %w", t.dir, err)
	}
	// terraform-exec asks `terraform version -json` before some commands
	// and copies its answer to the client's stdout too; asked now, before
	// the writers are set, the answer is cached and the JSON never shows
	// up in the captain's log.
	if _, _, err := loud.Version(ctx, false); err != nil {
		return nil, nil, a.terraformError(ctx, "version", t, err)
	}
	stdout, stderr := a.writers(ctx)
	if stdout != nil {
		loud.SetStdout(stdout)
	}
	if stderr != nil {
		loud.SetStderr(stderr)
	}
	quiet, err = tfexec.NewTerraform(t.dir, t.binary)
	if err != nil {
		return nil, nil, fmt.Errorf("terraform in %s: %w", t.dir, err)
	}
	return loud, quiet, nil
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// writers are where an operation's human output goes: the tool output
// ctx carries, or the adapter's own writers.
func (a *Adapter) writers(ctx context.Context) (stdout, stderr io.Writer) {
	if w, ok := tooloutput.From(ctx); ok {
		// terraform-exec copies stdout and stderr from two goroutines.
		lw := &lockedWriter{mu: &sync.Mutex{}, w: w}
		return lw, lw
	}
	return a.stdout, a.stderr
}

// notify prints a notice with the operation's output, if it has a writer.
func (a *Adapter) notify(ctx context.Context, format string, args ...any) {
	if _, stderr := a.writers(ctx); stderr != nil {
		_, _ = fmt.Fprintf(stderr, format+"\n", args...) // a notice that cannot be shown changes nothing
	}
}

// dataDir is where terraform init keeps its working files for dir.
func dataDir(dir string) string {
	if d := os.Getenv("TF_DATA_DIR"); d != "" {
		if filepath.IsAbs(d) {
			return d
		}
		return filepath.Join(dir, d)
	}
	return filepath.Join(dir, ".terraform")
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}
