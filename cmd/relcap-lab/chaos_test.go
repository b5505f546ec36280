package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store/pgtest"
)

// TestMain lets the test binary stand in for a lab component: with
// RELCAP_LAB_TEST_LISTEN set it listens there and serves until killed, and
// fails unless the environment the lab gave it arrived.
func TestMain(m *testing.M) {
	if addr := os.Getenv("RELCAP_LAB_TEST_LISTEN"); addr != "" {
		if os.Getenv("COMPONENT_SETTING") != "kept" {
			fmt.Fprintln(os.Stderr, "component started without its environment")
			os.Exit(3)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for {
			c, err := l.Accept()
			if err != nil {
				os.Exit(1)
			}
			_ = c.Close()
		}
	}
	// pgtest.Main stops the throw-away PostgreSQL the team-store tests
	// (the cockpit release's ledger) started, if any did.
	os.Exit(pgtest.Main(m))
}

// TestStopThenStartAComponentAsUpStartedIt: stop kills one component of a
// ready lab, status reports it, start runs it again with the same
// arguments, environment and working directory, waits for its port and
// records the new process; down still stops it.
func TestStopThenStartAComponentAsUpStartedIt(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	require.NoError(t, err)
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	t.Setenv("RELCAP_LAB_TEST_LISTEN", addr) // inherited by the component, as the lab's environment is
	r, err := start(dir, Component{Name: "fake-controller", Path: self, Env: []string{"COMPONENT_SETTING=kept"}, Ports: []int{port}})
	require.NoError(t, err)
	require.NoError(t, r.waitReady(t.Context(), tcpProbe(port)))
	st := State{Dir: dir, Ready: true, Processes: []Process{r.Process}, Ports: Ports{Server: port}}
	require.NoError(t, WriteState(dir, st))
	t.Cleanup(func() { _ = Down(dir, time.Second, &bytes.Buffer{}) })

	var out bytes.Buffer
	require.NoError(t, StopComponent(dir, "fake-controller", 0, &out))
	require.Contains(t, out.String(), fmt.Sprintf("stopped fake-controller (pid %d)", r.PID))
	require.False(t, alive(r.Process))
	require.Eventually(t, func() bool { return !listening(port) }, 2*time.Second, 50*time.Millisecond, "the port closes with the process")
	err = Status(t.Context(), dir, &out)
	require.ErrorContains(t, err, "1 component(s) not running: fake-controller", "a stopped component is reported, not hidden")
	require.Contains(t, out.String(), "fake-controller is not running; last lines of "+filepath.Join(dir, "logs", "fake-controller.log"))

	out.Reset()
	require.NoError(t, StartComponent(t.Context(), dir, "fake-controller", 10*time.Second, &out))
	require.Contains(t, out.String(), "started fake-controller")
	again, err := ReadState(dir)
	require.NoError(t, err)
	p := again.Processes[0]
	require.NotEqual(t, r.PID, p.PID, "the new process is recorded")
	require.True(t, alive(p))
	require.True(t, listening(port))
	require.Equal(t, []string{"COMPONENT_SETTING=kept"}, p.Env)
	require.Equal(t, dir, p.WorkDir)
	require.ErrorContains(t, StartComponent(t.Context(), dir, "fake-controller", time.Second, &out), "is running")
	require.ErrorContains(t, StopComponent(dir, "kube-apiserver", 0, &out), `the lab runs no component "kube-apiserver"; it runs fake-controller`)

	require.NoError(t, Down(dir, time.Second, &out))
	require.False(t, alive(p))
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestStopAndStartWantOneComponentOfALab: a missing or extra name is a
// usage error; a directory without a lab says so.
func TestStopAndStartWantOneComponentOfALab(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, cmd := range []string{"stop", "start"} {
		var out, errOut bytes.Buffer
		err := run(t.Context(), []string{cmd, "--dir", dir}, &out, &errOut)
		var usage usageError
		require.ErrorAs(t, err, &usage, cmd)
		require.ErrorContains(t, err, cmd+" wants one component name")
		err = run(t.Context(), []string{cmd, "--dir", dir, "a", "b"}, &out, &errOut)
		require.ErrorAs(t, err, &usage, cmd)
		err = run(t.Context(), []string{cmd, "--dir", dir, "argocd-application-controller"}, &out, &errOut)
		require.ErrorIs(t, err, errNoLab, cmd)
	}
}

// TestABadFlagIsAUsageErrorPrintedOnce: flag prints the mistake and the
// flags; relcap-lab exits 2 without printing it again.
func TestABadFlagIsAUsageErrorPrintedOnce(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"stop", "--grace", "abc", "x"}, &out, &errOut)
	require.Equal(t, 2, exitCode(err))
	require.ErrorIs(t, err, errShown, "main does not print it a second time")
	require.Contains(t, errOut.String(), `invalid value "abc" for flag -grace`)
}
