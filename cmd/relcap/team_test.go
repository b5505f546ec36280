package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
)

// The team store seen from two machines: each person runs the real relcap
// binary with a data directory, a state directory and an SSH key of their
// own, and only the PostgreSQL ledger (RELCAP_LEDGER) is shared.

// teammate is one person on their own machine: their home for relcap's
// data and state, and their key.
type teammate struct {
	name string
	home string
	env  []string
}

func newTeammate(t *testing.T, name, keys, ledger string, env []string) teammate {
	home := t.TempDir()
	return teammate{name: name, home: home, env: append([]string{
		"XDG_DATA_HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_CACHE_HOME=" + filepath.Join(home, "cache"),
		"USER=" + name, signingEnv + "=" + filepath.Join(keys, name), "SSH_AUTH_SOCK=", envLedger + "=" + ledger,
		"TERM=xterm-256color", "HOME=" + home,
	}, env...)}
}

// run runs relcap as this person in a process of its own.
func (p teammate) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), relcapBinary(t), args...)
	cmd.Env = append(os.Environ(), p.env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run relcap as %s: %v", p.name, err)
	}
	return code, out.String(), errb.String()
}

// tmuxCockpit runs relcap as p in a terminal of its own (a private tmux
// server) and returns a function reading the screen and one typing keys.
func tmuxCockpit(t *testing.T, p teammate, args ...string) (screen func() string, send func(key string)) {
	t.Helper()
	_, err := exec.LookPath("tmux")
	require.NoError(t, err, "tmux is needed: make test installs it (apt-get install tmux)")
	socket := "relcap-team-" + filepath.Base(p.home)
	quoted := make([]string, 0, len(p.env)+len(args)+2)
	for _, kv := range p.env {
		quoted = append(quoted, shellQuote(kv))
	}
	quoted = append(quoted, shellQuote(relcapBinary(t)))
	for _, a := range args {
		quoted = append(quoted, shellQuote(a))
	}
	script := "env " + strings.Join(quoted, " ") + "; echo EXIT=$?; sleep 120"
	out, err := exec.Command("tmux", "-L", socket, "new-session", "-d", "-s", "cockpit", "-x", "132", "-y", "40", script).CombinedOutput()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	screen = func() string {
		b, err := exec.Command("tmux", "-L", socket, "capture-pane", "-p", "-t", "cockpit").Output()
		if err != nil {
			return ""
		}
		return string(b)
	}
	send = func(key string) { _ = exec.Command("tmux", "-L", socket, "send-keys", "-t", "cockpit", key).Run() }
	return screen, send
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// waitScreen polls the screen every 20 ms until it holds want, and returns
// when it first did.
func waitScreen(t *testing.T, screen func() string, want string, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		if last = screen(); strings.Contains(last, want) {
			return time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the screen never showed %q within %s:\n%s", want, within, last)
	return time.Time{}
}

// TestTeammatesApprovalShowsInTheCaptainsCockpitWithinASecond: the captain
// runs a release in the cockpit on the team's PostgreSQL ledger; its plan
// needs someone else's approval. Bob signs his approval with his own key
// from his own relcap process and data directory; the captain's open
// cockpit shows it within a second (LISTEN/NOTIFY; nobody presses r), and
// the release goes on to converge.
func TestTeammatesApprovalShowsInTheCaptainsCockpitWithinASecond(t *testing.T) {
	t.Parallel()
	cfg, env, host := tfRepo(t, 1, true)
	keys, _, _ := withPeople(t, cfg, []string{"captain", "bob"})
	dbURL := pgtest.Database(t)
	pushImage(t, host+"/ci/web:1.0.0")
	captain := newTeammate(t, "captain", keys, dbURL, env)
	bob := newTeammate(t, "bob", keys, dbURL, env)

	screen, send := tmuxCockpit(t, captain, "-c", cfg, "release", "--env", "staging", "--image", host+"/ci/web:1.0.0", "--timeout", "60s")

	watch, err := store.OpenPostgres(t.Context(), dbURL)
	require.NoError(t, err)
	defer watch.Close()
	release := func() *workflow.Release {
		rs, err := watch.ListReleases(t.Context(), workflow.ReleaseFilter{Env: "staging"})
		if err != nil || len(rs) == 0 {
			return nil
		}
		return rs[0]
	}
	require.Eventually(t, func() bool {
		r := release()
		return r != nil && r.Status == workflow.ReleaseBlocked && r.Checkpoints.Fingerprint != ""
	}, 3*time.Minute, 100*time.Millisecond, "the plan waits for an approval:\n%s", screen())
	fp := release().Checkpoints.Fingerprint
	waitScreen(t, screen, "approval", 30*time.Second)

	code, out, errOut := bob.run(t, "-c", cfg, "--actor", "bob", "approve", "--plan", fp)
	require.Equal(t, 0, code, out+errOut)
	exited := time.Now()
	shown := waitScreen(t, screen, "approved by bob", 10*time.Second)
	approvals, err := watch.Approvals(t.Context(), approval.Plan, fp)
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	require.Equal(t, "bob", approvals[0].Approver)
	require.False(t, approvals[0].Signature.IsZero(), "bob signed it with his own key")
	// From the moment bob's relcap stamped the approval (before it was
	// written) to the captain's screen showing it: an upper bound of what
	// the captain waits.
	latency := shown.Sub(approvals[0].At)
	t.Logf("bob's approval reached the captain's cockpit %s after it was stamped (%s after his relcap approve exited)",
		latency.Round(time.Millisecond), shown.Sub(exited).Round(time.Millisecond))
	require.Less(t, latency, time.Second, "a teammate's approval shows in the open cockpit within a second")

	// The captain reviews the approved plan and applies it; the release
	// converges, all on the team store.
	waitScreen(t, screen, "enter apply", 30*time.Second)
	send("Enter")
	require.Eventually(t, func() bool {
		if strings.Contains(screen(), "y yes, apply") {
			send("y")
		}
		r := release()
		return r != nil && r.Status == workflow.ReleaseConverged
	}, 2*time.Minute, 200*time.Millisecond, "enter applied the reviewed plan and the release converged:\n%s", screen())
	send("q")
	waitScreen(t, screen, "EXIT=0", 30*time.Second)

	// Each of them verifies every session of the release from their own
	// machine: their own from the file and the ledger's copy, the other's
	// from the ledger's copy alone.
	for _, p := range []teammate{captain, bob} {
		code, out, errOut = p.run(t, "-c", cfg, "journal", "verify")
		require.Equal(t, 0, code, "%s: %s%s", p.name, out, errOut)
		require.Contains(t, out, "from the ledger's copy", p.name)
	}
}
