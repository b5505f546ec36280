package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ownProcessEnv names the one test a child test binary started by
// ranInOwnProcess runs.
const ownProcessEnv = "RELCAP_TEST_OWN_PROCESS"

// ranInOwnProcess runs test t in a process of its own, the test binary
// started again with -test.run naming t alone, and reports true once it
// passed there; in that process it reports false and t runs its body.
//
// It is for the tests that set process environment (t.Setenv: the
// credentials and TF_VAR_* that Terraform and the registry client read
// from os.Environ), which therefore cannot be parallel: in one process
// they run one after another before any parallel test starts, about 80 s
// of cmd/relcap's wall time on 2 cores. In a process of their own they
// run beside the others (docs/PERFORMANCE.md, "The suite and CI"). The
// child is the same binary, so -race covers it as well; env is added to
// its environment.
//
//	if ranInOwnProcess(t) {
//		return
//	}
func ranInOwnProcess(t *testing.T, env ...string) bool {
	t.Helper()
	if os.Getenv(ownProcessEnv) == t.Name() {
		return false
	}
	t.Parallel()
	args := []string{"-test.run=^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count=1", "-test.v"}
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		// The child stops first, so its own timeout's goroutine dump is
		// what a hung test leaves.
		args = append(args, "-test.timeout="+max(time.Until(d)-5*time.Second, time.Second).Round(time.Second).String())
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Second))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), ownProcessEnv+"="+t.Name()), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in its own process (%s): %v; its output:\n%s", t.Name(), os.Args[0], err, out)
	}
	// A -test.run that matched nothing passes too: require the test's own
	// pass line.
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" (") {
		t.Fatalf("%s did not run in its own process; its output:\n%s", t.Name(), out)
	}
	t.Logf("passed in its own process in %s", time.Since(start).Round(100*time.Millisecond))
	return true
}
