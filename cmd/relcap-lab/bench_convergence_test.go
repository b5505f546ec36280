//go:build e2e && labbench

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBenchConvergenceDetection (issue 14) measures, side by side with
// `argocd app wait --sync --health` (the lab's Argo CD binary is its CLI
// when named argocd), how soon relcap converge reports a sync as
// converged: the same application, the same sync, both watchers started
// together before the sync is requested. It is a benchmark, run by
// make bench-lab (both Argo CD versions), never by make test or make e2e.
//
// Each round promotes a new build with relcap (the pin lands on main),
// lets Argo CD compare with it (OutOfSync at the new revision; automated
// sync is off so the sync starts when asked), starts both watchers, waits
// until both are connected, and requests the sync with argocd app sync
// --async. The time from the request to each watcher's exit is its
// detection time; relcap's also includes checking the promoted digest
// runs. Budget: relcap's median is no later than argocd app wait's, over
// at least 10 syncs ($RELCAP_BENCH_SYNCS).
func TestBenchConvergenceDetection(t *testing.T) {
	syncs := 10
	if s := os.Getenv("RELCAP_BENCH_SYNCS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "$RELCAP_BENCH_SYNCS")
		syncs = n
	}
	require.GreaterOrEqual(t, syncs, 10, "the budget is a median over at least 10 syncs")

	l := startLab(t)
	app := ArgoApp("staging")
	argocd := filepath.Join(l.env["RELCAP_LAB_BIN"], "argocd")
	argoEnv := []string{"ARGOCD_AUTH_TOKEN=" + l.env[TokenEnv], "HOME=" + t.TempDir()}
	argo := func(args ...string) string {
		code, out := l.runEnv(t, argoEnv, argocd, args...)
		require.Equal(t, 0, code, "argocd %s:\n%s", strings.Join(args, " "), out)
		return out
	}
	l.kubectl(t, "patch", "application", app, "-n", ArgoNamespace, "--type", "merge", "-p", `{"spec":{"syncPolicy":null}}`)

	var relcapTimes, argoTimes []time.Duration
	for i := range syncs {
		ref, digest := l.pushBuild(t, fmt.Sprintf("bench-%d", i))
		l.relcapOK(t, "--actor", "alice", "promote", "--env", "staging", "--image", ref)
		rev := l.headRev(t)
		argo("app", "get", app, "--refresh")
		eventually(t, time.Minute, "argo cd comparing with "+rev[:12], func() (bool, string) {
			s := l.kubectl(t, "get", "application", app, "-n", ArgoNamespace, "-o", "jsonpath={.status.sync.status} {.status.sync.revision}")
			return s == "OutOfSync "+rev, s
		})

		relcapW := l.startWatcher(t, nil, l.relcap, "-c", filepath.Join(l.dir, "relcap.yaml"), "--no-tui", "converge", "--env", "staging", "--timeout", "3m")
		argoW := l.startWatcher(t, argoEnv, argocd, "app", "wait", app, "--sync", "--health", "--timeout", "180")
		time.Sleep(2 * time.Second) // both have connected and watch
		requested := time.Now()
		argo("app", "sync", app, "--async", "--revision", rev)

		rExit, rOut, rErr := relcapW.wait()
		aExit, aOut, aErr := argoW.wait()
		require.NoError(t, rErr, "relcap converge:\n%s", rOut)
		require.NoError(t, aErr, "argocd app wait:\n%s", aOut)
		require.Contains(t, rOut, "converged in staging", rOut)
		require.Contains(t, rOut, digest, "relcap checked the promoted digest runs")
		require.Contains(t, aOut, rev[:7], "argocd app wait saw the same sync")
		relcapTimes = append(relcapTimes, rExit.Sub(requested))
		argoTimes = append(argoTimes, aExit.Sub(requested))
		t.Logf("sync %2d at %s: relcap converge %s, argocd app wait %s", i+1, rev[:12], rExit.Sub(requested).Round(time.Millisecond), aExit.Sub(requested).Round(time.Millisecond))
	}

	rMed, aMed := median(relcapTimes), median(argoTimes)
	summary := fmt.Sprintf("Argo CD %s, %d syncs: relcap converge median %s (min %s, max %s); argocd app wait --sync --health median %s (min %s, max %s); relcap first in %d of %d",
		l.variant.Versions.ArgoCD, syncs, ms(rMed), ms(slices.Min(relcapTimes)), ms(slices.Max(relcapTimes)), ms(aMed), ms(slices.Min(argoTimes)), ms(slices.Max(argoTimes)), firstCount(relcapTimes, argoTimes), syncs)
	t.Log(summary)
	if out := os.Getenv("RELCAP_BENCH_OUT"); out != "" {
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		_, err = fmt.Fprintln(f, summary)
		require.NoError(t, errors.Join(err, f.Close()))
	}
	require.LessOrEqual(t, rMed, aMed, "relcap reports convergence no later than argocd app wait returns (median)")
}

// watcher is a process started to watch a sync, and when it exited.
type watcher struct {
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan time.Time
}

func (l *e2eLab) startWatcher(t *testing.T, extra []string, bin string, args ...string) *watcher {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = l.dir
	cmd.Env = append(l.environ(), extra...)
	w := &watcher{cmd: cmd, out: &bytes.Buffer{}, done: make(chan time.Time, 1)}
	cmd.Stdout, cmd.Stderr = w.out, w.out
	require.NoError(t, cmd.Start())
	go func() {
		_ = cmd.Wait()
		w.done <- time.Now()
	}()
	return w
}

// wait returns when the watcher exited, its output and how it ended.
func (w *watcher) wait() (time.Time, string, error) {
	at := <-w.done
	var err error
	if !w.cmd.ProcessState.Success() {
		err = fmt.Errorf("exit %d", w.cmd.ProcessState.ExitCode())
	}
	return at, w.out.String(), err
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

func firstCount(a, b []time.Duration) int {
	n := 0
	for i := range a {
		if a[i] <= b[i] {
			n++
		}
	}
	return n
}
