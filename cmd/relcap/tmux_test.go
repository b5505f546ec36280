package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/terraform/terraformtest"
)

// TestTmuxDemoReleaseWithTheKeyboardAlone builds the real binary, runs
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
	bin := filepath.Join(t.TempDir(), "relcap")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))

	dir := filepath.Join(t.TempDir(), "sandbox")
	// A tmux server of the test's own: another test binary's session (a
	// second checkout's make test) cannot collide with it, and the server
	// starts with this test's environment.
	socket := "relcap-demo-" + strconv.Itoa(os.Getpid())
	session := "demo"
	script := bin + " demo --dir " + dir + "; echo EXIT=$?; sleep 60"
	cmd := exec.Command("tmux", "-L", socket, "new-session", "-d", "-s", session, "-x", "80", "-y", "24", script)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "TERM=xterm-256color")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })

	send := func(key string) { _ = exec.Command("tmux", "-L", socket, "send-keys", "-t", session, key).Run() }
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

	io, vout, verr := testIO("USER=captain")
	code := run(t.Context(), io, []string{"--ledger", filepath.Join(dir, "ledger.db"), "journal", "verify"})
	require.Equal(t, 0, code, vout.String()+verr.String())
	casts, err := filepath.Glob(filepath.Join(dir, "sessions", "*", "screen*.cast"))
	require.NoError(t, err)
	require.Len(t, casts, 2, "one recording per cockpit: staging and prod")
}
