package terraform

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// reviewJSON reads a plan document and reviews its facts, as relcap review
// of an uploaded plan does.
func reviewJSON(r io.Reader, env string, classify tfplan.Classify, secrets *secret.Set) (tfplan.Summary, error) {
	facts, err := ReadPlanJSON(r, env, secrets)
	if err != nil {
		return tfplan.Summary{}, err
	}
	return tfplan.ReviewPlan(facts, classify), nil
}

// reviewed is a plan the adapter made, reviewed as the core reviews it.
func reviewed(facts tfplan.Facts, err error) (tfplan.Summary, error) {
	if err != nil {
		return tfplan.Summary{}, err
	}
	return tfplan.ReviewPlan(facts, tfplan.DefaultClassify()), nil
}

// fixedClock is a clock that says what it is told.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// After is time.After: these tests time nothing with the clock.
func (*fixedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// syncBuffer is a bytes.Buffer safe for the adapter's streaming goroutines
// and the test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var testNow = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// fixture is one Terraform root in a temp dir with its own adapter and plan
// store.
type fixture struct {
	t      *testing.T
	bin    string
	dir    string
	out    *syncBuffer // Terraform's streamed stdout and stderr
	a      *Adapter
	env    workflow.Environment
	varDir string
}

func newFixture(t *testing.T, mainTF string) *fixture {
	t.Helper()
	f := &fixture{t: t, bin: terraformtest.Binary(t), dir: t.TempDir(), out: &syncBuffer{}}
	f.varDir = f.dir
	f.write("main.tf", mainTF)
	var err error
	f.a, err = New(Options{
		Binary:  f.bin,
		PlanDir: filepath.Join(t.TempDir(), "state", "relcap", "plans"),
		Clock:   &fixedClock{t: testNow},
		Stdout:  f.out,
		Stderr:  f.out,
	})
	require.NoError(t, err)
	f.env = workflow.Environment{Name: "dev", Terraform: workflow.TerraformTarget{Dir: f.dir, Workspace: "default"}}
	return f
}

func (f *fixture) write(name, content string) {
	f.t.Helper()
	require.NoError(f.t, os.WriteFile(filepath.Join(f.dir, name), []byte(content), 0o644))
}

// varFile writes (or rewrites) a var file beside main.tf and uses it.
func (f *fixture) varFile(name, content string) string {
	f.t.Helper()
	p := filepath.Join(f.varDir, name)
	require.NoError(f.t, os.WriteFile(p, []byte(content), 0o644))
	if !strings.Contains(strings.Join(f.env.Terraform.VarFiles, "\n"), p) {
		f.env.Terraform.VarFiles = append(f.env.Terraform.VarFiles, p)
	}
	return p
}

func (f *fixture) plan() tfplan.Summary {
	f.t.Helper()
	s, err := reviewed(f.a.Plan(f.t.Context(), f.env, "alice"))
	require.NoError(f.t, err, "terraform output:\n%s", f.out.String())
	return s
}

func (f *fixture) apply(s tfplan.Summary) workflow.ApplyResult {
	f.t.Helper()
	res, err := f.a.Apply(f.t.Context(), request(f.env, s))
	require.NoError(f.t, err, "terraform output:\n%s", f.out.String())
	return res
}

func request(env workflow.Environment, s tfplan.Summary) workflow.ApplyRequest {
	return workflow.ApplyRequest{Env: env, Fingerprint: s.Fingerprint, PlanFile: s.PlanFile, PlanHash: s.PlanHash, Inputs: s.Inputs}
}

// terraform runs the real binary in the root, as a person would.
func (f *fixture) terraform(ctx context.Context, args ...string) string {
	f.t.Helper()
	cmd := exec.CommandContext(ctx, f.bin, args...)
	cmd.Dir = f.dir
	cmd.Env = append(os.Environ(), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	require.NoError(f.t, err, "terraform %s: %s", strings.Join(args, " "), stderr)
	return string(out)
}
