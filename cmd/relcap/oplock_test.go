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
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow"
)

// relcapProcessEnv set to 1 makes the test binary run relcap's main with
// its arguments (see TestMain): a real relcap process that a test can
// kill with SIGKILL.
const relcapProcessEnv = "RELCAP_TEST_RUN_AS_RELCAP"

// slowRoot is a Terraform root whose apply takes as many seconds as the
// file sleep-seconds in the directory %[1]q says when the apply runs (the
// shell reads it then), and leaves the sleeping process's pid in sleep.pid
// there. The directory is outside the root, whose files the plan's
// fingerprint covers.
const slowRoot = `
resource "terraform_data" "slow" {
  input = "v1"
  provisioner "local-exec" {
    working_dir = %[1]q
    command     = "echo $$ > sleep.pid; exec sleep $(cat sleep-seconds)"
  }
}
`

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
// and bob's apply then takes it and applies the plan, Terraform's own
// state lock having gone with alice's terraform.
func TestTwoCaptainsOnePostgresOneApplyAtATime(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.Database(t)
	cfg, tfEnv, _ := tfRepo(t, 0, false)
	root, slow := filepath.Join(filepath.Dir(cfg), "infra/staging"), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.tf"), fmt.Appendf(nil, slowRoot, slow), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(slow, "sleep-seconds"), []byte("120\n"), 0o644))
	t.Cleanup(func() {
		// The sleep outlives a terraform killed under it; end it.
		if b, err := os.ReadFile(filepath.Join(slow, "sleep.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	alice := captain{actor: "alice", data: t.TempDir(), env: tfEnv, ledger: dbURL}
	bob := captain{actor: "bob", data: t.TempDir(), env: tfEnv, ledger: dbURL}

	code, out, errOut := invokeEnv(t, alice.data, alice.environ(), "--ledger", dbURL, "-c", cfg, "--actor", "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan struct{ Fingerprint, Release string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))

	holder := alice.command("-c", cfg, "apply", "--plan", plan.Fingerprint)
	var holderErr strings.Builder
	holder.Stdout, holder.Stderr = &holderErr, &holderErr
	require.NoError(t, holder.Start())
	exited := make(chan error, 1)
	go func() { exited <- holder.Wait() }()
	t.Cleanup(func() { _ = holder.Process.Kill() })
	// Terraform is applying (the provisioner runs) once sleep.pid exists.
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(slow, "sleep.pid"))
		return err == nil
	}, 90*time.Second, 50*time.Millisecond, "alice's apply never reached the provisioner: %s", &holderErr)

	start := time.Now()
	code, _, errOut = bob.run(t, "-c", cfg, "apply", "--plan", plan.Fingerprint)
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

	// alice's relcap dies without a word; its terraform with it.
	require.NoError(t, os.WriteFile(filepath.Join(slow, "sleep-seconds"), []byte("0\n"), 0o644))
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

	// A terraform that outlived its relcap would still hold Terraform's
	// state lock (here a console, which holds it while it is open): bob's
	// relcap then has the apply lock, says Terraform's state is locked,
	// and applies nothing; it never breaks Terraform's lock.
	console := exec.Command(terraformtest.Binary(t), "console")
	console.Dir = root
	stdin, err := console.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, console.Start())
	t.Cleanup(func() { _ = console.Process.Kill() })
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(root, ".terraform.tfstate.lock.info"))
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "terraform console took no state lock")
	code, out, errOut = bob.run(t, "-c", cfg, "apply", "--plan", plan.Fingerprint)
	t.Logf("bob, with Terraform's state locked:\n%s", errOut)
	require.NotEqual(t, 0, code, out+errOut)
	require.Contains(t, errOut, "the Terraform state of "+root+" (default) is locked by")
	require.NotContains(t, errOut, "is held by alice", "relcap's own lock was free")
	require.NoError(t, stdin.Close())
	require.NoError(t, console.Wait())

	code, out, errOut = bob.run(t, "-c", cfg, "apply", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "applied plan")
	require.NotContains(t, out+errOut, "is held by alice")
}
