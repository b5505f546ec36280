package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/effort"
)

// tmuxTerm is one command of the relcap binary running in a tmux terminal
// of the test's own (its own server socket), read back as a person sees
// it.
type tmuxTerm struct {
	t              *testing.T
	socket, window string
}

// relcapAtTerminal runs the package's one built relcap (relcapBinary)
// with args (a shell command line after the binary) in a w×h tmux
// terminal, with data as its XDG directories and env added; EXIT=<code> is
// printed when it ends.
func relcapAtTerminal(t *testing.T, data string, env []string, w, h int, args string) *tmuxTerm {
	t.Helper()
	_, err := exec.LookPath("tmux")
	require.NoError(t, err, "tmux is needed: make test installs it (apt-get install tmux)")
	bin := relcapBinary(t)
	term := &tmuxTerm{t: t, socket: "relcap-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(tmuxTerms.Add(1), 10), window: "relcap"}
	cmd := exec.Command("tmux", "-L", term.socket, "new-session", "-d", "-s", term.window, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h),
		bin+" "+args+"; echo EXIT=$?; sleep 60")
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+data, "XDG_STATE_HOME="+filepath.Join(data, "state"),
		"XDG_CACHE_HOME="+filepath.Join(data, "cache"), "TERM=xterm-256color"), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", term.socket, "kill-server").Run() })
	return term
}

var tmuxTerms atomic.Int64

// capture is the screen now.
func (term *tmuxTerm) capture() string {
	b, _ := exec.Command("tmux", "-L", term.socket, "capture-pane", "-p", "-t", term.window).Output()
	return string(b)
}

// waitFor waits up to within for what on the screen and returns the screen.
func (term *tmuxTerm) waitFor(what string, within time.Duration) string {
	term.t.Helper()
	var s string
	require.Eventually(term.t, func() bool { s = term.capture(); return strings.Contains(s, what) }, within, 200*time.Millisecond, "waiting for %q; screen:\n%s", what, s)
	return s
}

// press sends one key, as tmux send-keys names it.
func (term *tmuxTerm) press(key string) {
	_ = exec.Command("tmux", "-L", term.socket, "send-keys", "-t", term.window, key).Run()
}

// TestTmuxDemoReleaseWithTheKeyboardAlone takes the real binary, runs
// `relcap demo` in a tmux terminal of 80×24, and completes both releases
// with keys a newcomer reads off the screen: r to resume after the demo
// assistant's notice, a to approve, enter and y to apply, q to close a
// converged release. tmux is installed by make test when missing; without
// it the test fails rather than skips.
func TestTmuxDemoReleaseWithTheKeyboardAlone(t *testing.T) {
	t.Parallel()
	terraformtest.Binary(t)
	_, err := exec.LookPath("tmux")
	require.NoError(t, err, "tmux is needed: make test installs it (apt-get install tmux)")
	bin := relcapBinary(t)

	dir := filepath.Join(t.TempDir(), "sandbox")
	// A tmux server of the test's own: another test binary's session (a
	// second checkout's make test) cannot collide with it, and the server
	// starts with this test's environment.
	socket := "relcap-demo-" + strconv.Itoa(os.Getpid())
	session := "demo"
	script := bin + " demo --dir " + dir + "; echo EXIT=$?; sleep 60"
	cmd := exec.Command("tmux", "-L", socket, "new-session", "-d", "-s", session, "-x", "80", "-y", "24", script)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "TERM=xterm-256color")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })

	sent := 0
	send := func(key string) {
		_ = exec.Command("tmux", "-L", socket, "send-keys", "-t", session, key).Run()
		sent++
	}
	var screen string
	var acted time.Time
	deadline := time.Now().Add(6 * time.Minute) // generous: CI machines may be busy
	for time.Now().Before(deadline) {
		time.Sleep(300 * time.Millisecond)
		b, err := exec.Command("tmux", "-L", socket, "capture-pane", "-p", "-t", session).Output()
		require.NoError(t, err)
		screen = string(b)
		if strings.Contains(screen, "EXIT=") {
			break
		}
		if time.Since(acted) < 2500*time.Millisecond {
			continue // let the screen answer the last key first
		}
		key := ""
		switch {
		case strings.Contains(screen, "✓ 4 Convergence") && strings.Contains(screen, "Decision map"):
			key = "q"
		case strings.Contains(screen, "press r to resume"):
			key = "r"
		case strings.Contains(screen, "y yes, apply"):
			key = "y"
		case strings.Contains(screen, "a approve as"):
			key = "a"
		case strings.Contains(screen, "enter apply"):
			key = "Enter"
		case strings.Contains(screen, "■ blocked") && time.Since(acted) > 10*time.Second:
			// The assistant's notice lasts a few seconds; the blocked
			// screen says r resumes.
			key = "r"
		}
		if key != "" {
			send(key)
			acted = time.Now()
		}
	}
	require.Contains(t, screen, "EXIT=0", "the demo completed from the keyboard:\n%s", screen)
	require.Contains(t, screen, "Both releases converged")
	require.LessOrEqual(t, sent, 10, "the demo's two releases take at most 10 key presses")

	// relcap counted the same keys as the captain's inputs.
	l, err := store.OpenSQLite(t.Context(), filepath.Join(dir, "ledger.db"))
	require.NoError(t, err)
	defer l.Close()
	releases, err := l.ListReleases(t.Context(), workflow.ReleaseFilter{})
	require.NoError(t, err)
	inputs := 0
	for _, r := range releases {
		entries, err := l.Effort(t.Context(), r.ID)
		require.NoError(t, err)
		for _, e := range entries {
			if e.Kind == effort.Active && e.Role == effort.RoleCaptain {
				inputs += e.Inputs
			}
		}
	}
	require.Equal(t, sent, inputs, "the ledger counts every key the captain pressed")

	io, vout, verr := testIO("USER=captain")
	code := run(t.Context(), io, []string{"--ledger", filepath.Join(dir, "ledger.db"), "journal", "verify"})
	require.Equal(t, 0, code, vout.String()+verr.String())
	casts, err := filepath.Glob(filepath.Join(dir, "sessions", "*", "screen*.cast"))
	require.NoError(t, err)
	require.Len(t, casts, 2, "one recording per cockpit: staging and prod")
}

// TestCommandAtATerminalCountsItsDuration: relcap plan typed at a real
// terminal (tmux) books its duration, up to the idle threshold, as the
// captain's active effort on plan review, which a scripted run (the same
// command without a terminal) never does.
func TestCommandAtATerminalCountsItsDuration(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 0, false)
	data := t.TempDir()
	start := time.Now()
	term := relcapAtTerminal(t, data, env, 120, 30, "-c "+cfg+" --actor alice plan --env staging")
	screen := term.waitFor("EXIT=", 3*time.Minute)
	took := time.Since(start)
	require.Contains(t, screen, "EXIT=0", screen)

	l, err := store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	defer l.Close()
	rs, err := l.ListReleases(t.Context(), workflow.ReleaseFilter{})
	require.NoError(t, err)
	require.Len(t, rs, 1)
	entries, err := l.Effort(t.Context(), rs[0].ID)
	require.NoError(t, err)
	var active []effort.Entry
	for _, e := range entries {
		require.NotEqual(t, effort.Unmeasured, e.Kind, "at a terminal the command is measured: %+v", e)
		if e.Kind == effort.Active {
			active = append(active, e)
		}
	}
	require.Len(t, active, 1, "%+v", entries)
	a := active[0]
	require.Equal(t, "alice", a.Person)
	require.Equal(t, effort.RoleCaptain, a.Role)
	require.Equal(t, "plan-review", a.Step)
	require.Positive(t, a.Duration)
	require.LessOrEqual(t, a.Duration, took, "no more than the harness timed")
	require.LessOrEqual(t, a.Duration, 2*time.Minute, "never more than the idle threshold")
}

// TestReviewScreenAtATerminal: bob reviews alice's plan with relcap review
// in a real terminal, approves with a, closes with q; the approval is his,
// nothing was applied, and his reading time is the approver's effort.
func TestReviewScreenAtATerminal(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("tmux")
	require.NoError(t, err, "tmux is needed: make test installs it (apt-get install tmux)")
	cfg, env, _ := tfRepo(t, 1, true)
	data := t.TempDir()
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "--actor", "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan struct{ Fingerprint, Release string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))

	term := relcapAtTerminal(t, data, env, 120, 40, "-c "+cfg+" --actor bob review --plan "+plan.Fingerprint)
	s := term.waitFor("a approve as bob", 90*time.Second)
	require.Contains(t, s, "review as bob")
	require.NotContains(t, s, "enter apply")
	time.Sleep(1500 * time.Millisecond) // reading
	term.press("a")
	term.waitFor("approved plan", 90*time.Second)
	term.press("q")
	s = term.waitFor("EXIT=", 90*time.Second)
	require.Contains(t, s, "EXIT=0", s)

	l, err := store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	defer l.Close()
	approvals, err := l.Approvals(t.Context(), approval.Plan, plan.Fingerprint)
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	require.Equal(t, "bob", approvals[0].Approver)
	r, err := l.LoadRelease(t.Context(), plan.Release)
	require.NoError(t, err)
	require.False(t, r.Step(workflow.StepApply).Status.Done(), "nothing applied from a review")
	entries, err := l.Effort(t.Context(), plan.Release)
	require.NoError(t, err)
	var bobs time.Duration
	for _, e := range entries {
		if e.Person == "bob" {
			require.Equal(t, effort.Active, e.Kind, "the review is measured: %+v", e)
			require.Equal(t, effort.RoleApprover, e.Role)
			require.Equal(t, "plan-review", e.Step)
			bobs += e.Duration
		}
	}
	require.GreaterOrEqual(t, bobs, time.Second, "bob read for 1.5 s before approving")
	require.Less(t, bobs, 2*time.Minute)
}
