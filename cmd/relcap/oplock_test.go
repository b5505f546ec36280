package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/workflow"
)

// relcapProcessEnv set to 1 makes the test binary run relcap's main with
// its arguments (see TestMain): a real relcap process that a test can
// kill with SIGKILL.
const relcapProcessEnv = "RELCAP_TEST_RUN_AS_RELCAP"

// slowRoot is a Terraform root whose apply appends a line to the file
// effects in the directory %[1]q (a side effect outside Terraform's
// state), leaves its provisioner's pid in sleep.pid there, and waits
// until the file go-on exists there. The directory is outside the root,
// whose files the plan's fingerprint covers.
const slowRoot = `
resource "terraform_data" "slow" {
  input = "v1"
  provisioner "local-exec" {
    working_dir = %[1]q
    command     = "echo once >> effects; echo $$ > sleep.pid; while [ ! -e go-on ]; do sleep 0.1; done"
  }
}
`

// syncBuilder is a strings.Builder a process's output copier and a test
// may use at once.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// captain is one person's relcap on this machine: their own data and state
// directories, and the team's PostgreSQL ledger.
type captain struct {
	actor, data string
	env         []string
	ledger      string
}

func (c captain) environ() []string {
	return append([]string{"XDG_DATA_HOME=" + c.data, "XDG_STATE_HOME=" + filepath.Join(c.data, "state"),
		"XDG_CACHE_HOME=" + filepath.Join(c.data, "cache"), "USER=" + c.actor}, c.env...)
}

// command is a relcap process of c's, not started.
func (c captain) command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"--ledger", c.ledger, "--actor", c.actor}, args...)...)
	cmd.Env = append(append(os.Environ(), relcapProcessEnv+"=1"), c.environ()...)
	return cmd
}

// run runs a relcap process of c's to its end.
func (c captain) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := c.command(args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errb.String()
}

// TestTwoCaptainsOnePostgresOneApplyAtATime: alice's relcap applies a
// plan into staging (a Terraform apply that takes a while); bob's relcap
// apply of the same state, another process with another actor and other
// directories (so no lock of this machine's is shared), is refused at
// once, told it is alice, what she applies and since when, exit 3. alice's
// relcap is killed with SIGKILL mid-apply: the lock goes within a second,
// but not her Terraform, which goes on holding Terraform's state lock
// (relcap's death never kills Terraform mid-write; issue 26). bob's apply
// then takes relcap's lock, finds alice's run in the release's
// checkpoint, waits for that Terraform without breaking its lock, and
// records the apply from its result: the plan is applied once.
func TestTwoCaptainsOnePostgresOneApplyAtATime(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.Database(t)
	cfg, tfEnv, _ := tfRepo(t, 0, false)
	root, slow := filepath.Join(filepath.Dir(cfg), "infra/staging"), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.tf"), fmt.Appendf(nil, slowRoot, slow), 0o644))
	t.Cleanup(func() {
		// Let a provisioner still waiting end.
		_ = os.WriteFile(filepath.Join(slow, "go-on"), nil, 0o644)
	})
	alice := captain{actor: "alice", data: t.TempDir(), env: tfEnv, ledger: dbURL}
	bob := captain{actor: "bob", data: t.TempDir(), env: tfEnv, ledger: dbURL}

	plan, holder, exited := applyHeldAtTheProvisioner(t, alice, cfg, slow)

	start := time.Now()
	code, _, errOut := bob.run(t, "-c", cfg, "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, errOut)
	t.Logf("bob was refused:\n%s", errOut)
	short := workflow.ShortHash(plan.Fingerprint)
	for _, want := range []string{
		"the apply lock of Terraform state web:infra/staging@default is held by alice",
		"(relcap pid " + strconv.Itoa(holder.Process.Pid) + " on ",
		"apply plan " + short + " in staging (release " + plan.Release + ")",
		"since " + time.Now().UTC().Format("2006-01-02T"),
		"wait until it finishes and run this again, or ask alice",
	} {
		require.Contains(t, errOut, want)
	}
	require.Less(t, time.Since(start), 30*time.Second, "refused, not waited for")
	journals, err := filepath.Glob(filepath.Join(bob.data, "relcap", "sessions", "*", "journal.jsonl"))
	require.NoError(t, err)
	require.Len(t, journals, 1)
	b, err := os.ReadFile(journals[0])
	require.NoError(t, err)
	require.Contains(t, string(b), `"kind":"lock.refused"`, "bob's journal keeps the refusal")
	require.Contains(t, string(b), `"holder":"alice"`)

	// alice's relcap dies without a word; her terraform goes on.
	require.NoError(t, holder.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	<-exited
	db, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer db.Close(t.Context())
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, db.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n))
		return n == 0
	}, time.Second, 10*time.Millisecond, "the lock outlived its killed holder by a second")
	t.Logf("released %s after SIGKILL", time.Since(killed).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond) // SIGPIPE or a parent-death signal would have ended it by now
	b, err = os.ReadFile(filepath.Join(slow, "sleep.pid"))
	require.NoError(t, err)
	sleeper, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(sleeper, 0), "alice's provisioner still runs")
	require.FileExists(t, filepath.Join(root, ".terraform.tfstate.lock.info"), "alice's terraform still holds the state lock")

	// bob's relcap waits for alice's terraform, never breaking its lock,
	// and takes its result once it finishes.
	waiting := bob.command("-c", cfg, "apply", "--plan", plan.Fingerprint)
	var bobOut, bobErr syncBuilder
	waiting.Stdout, waiting.Stderr = &bobOut, &bobErr
	require.NoError(t, waiting.Start())
	t.Cleanup(func() { _ = waiting.Process.Kill() })
	require.Eventually(t, func() bool { return strings.Contains(bobErr.String(), "is still running") }, 90*time.Second, 50*time.Millisecond,
		"bob never said he waits for alice's terraform: %s", &bobErr)
	require.FileExists(t, filepath.Join(root, ".terraform.tfstate.lock.info"), "Terraform's state lock is left to its holder")
	require.NoError(t, os.WriteFile(filepath.Join(slow, "go-on"), nil, 0o644))
	require.NoError(t, waiting.Wait(), "%s%s", &bobOut, &bobErr)
	t.Logf("bob, after alice's relcap died:\n%s%s", &bobOut, &bobErr)
	require.Contains(t, bobOut.String(), "applied plan")
	require.Contains(t, bobOut.String()+bobErr.String(), "completed by an earlier, interrupted run")
	require.NotContains(t, bobErr.String(), "is held by alice")
	b, err = os.ReadFile(filepath.Join(slow, "effects"))
	require.NoError(t, err)
	require.Equal(t, "once\n", string(b), "the plan's side effect happened once")
}

// heldPlan is the plan a holding apply applies.
type heldPlan struct{ Fingerprint, Release string }

// applyHeldAtTheProvisioner plans staging as c and starts c's apply of the
// plan in a process of its own, returning once Terraform runs the slow
// provisioner (sleep.pid in slow), so the apply holds its lock: the plan,
// the apply's process, and its exit.
func applyHeldAtTheProvisioner(t *testing.T, c captain, cfg, slow string) (heldPlan, *exec.Cmd, <-chan error) {
	t.Helper()
	code, out, errOut := invokeEnv(t, c.data, c.environ(), "--ledger", c.ledger, "-c", cfg, "--actor", c.actor, "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan heldPlan
	require.NoError(t, json.Unmarshal([]byte(out), &plan))

	holder := c.command("-c", cfg, "apply", "--plan", plan.Fingerprint)
	var holderOut strings.Builder
	holder.Stdout, holder.Stderr = &holderOut, &holderOut
	require.NoError(t, holder.Start())
	exited := make(chan error, 1)
	go func() { exited <- holder.Wait() }()
	t.Cleanup(func() { _ = holder.Process.Kill() })
	// Terraform is applying (the provisioner runs) once sleep.pid exists.
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(slow, "sleep.pid"))
		return err == nil
	}, 90*time.Second, 50*time.Millisecond, "%s's apply never reached the provisioner: %s", c.actor, &holderOut)
	return plan, holder, exited
}
