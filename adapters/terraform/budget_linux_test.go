package terraform

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

// reviewBudget is what one review of a 10,000-resource document may cost.
const (
	reviewBudgetTime = 1500 * time.Millisecond
	reviewBudgetRSS  = 500 << 20
)

// TestReviewJSON10kBudget reviews the generated 10,000-resource document in a
// fresh process and reads that process's peak resident memory (VmHWM), so
// the figure is the review's alone, not the generator's or other tests'.
func TestReviewJSON10kBudget(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		return // the child run of this test binary runs TestReviewJSON10kChild
	}
	doc := generated10k()
	path := filepath.Join(t.TempDir(), "plan-10k.json")
	require.NoError(t, os.WriteFile(path, doc.data, 0o600))

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestReviewJSON10kChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	m := regexp.MustCompile(`relcap-review: elapsed_ns=(\d+) cpu_ns=(\d+) vmhwm_kb=(\d+) changes=(\d+)`).FindSubmatch(out)
	require.NotNil(t, m, "child output: %s", out)
	ns, _ := strconv.ParseInt(string(m[1]), 10, 64)
	cpuNs, _ := strconv.ParseInt(string(m[2]), 10, 64)
	kb, _ := strconv.ParseInt(string(m[3]), 10, 64)
	elapsed, cpu, peak := time.Duration(ns), time.Duration(cpuNs), kb<<10
	t.Logf("review of %d resources (%.1f MB document): wall %s, CPU %s, peak RSS %.1f MB, %s changes listed (race detector: %t)",
		doc.resources, float64(len(doc.data))/1e6, elapsed.Round(time.Millisecond), cpu.Round(time.Millisecond), float64(peak)/(1<<20), m[4], raceEnabled)
	if raceEnabled {
		return
	}
	// CPU time, not wall time: on a shared machine the wall clock measures
	// the neighbours. The review's CPU time (GC workers included) bounds
	// its wall time on an otherwise idle machine.
	require.Less(t, cpu, reviewBudgetTime)
	require.Less(t, peak, int64(reviewBudgetRSS))
}

const childEnv = "RELCAP_REVIEW_BUDGET_DOC"

// TestReviewJSON10kChild is the measured process of TestReviewJSON10kBudget;
// it does nothing unless that test started it.
func TestReviewJSON10kChild(t *testing.T) {
	path := os.Getenv(childEnv)
	if path == "" {
		return
	}
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	cpu0 := processCPU(t)
	start := time.Now()
	s, err := ReviewJSON(f, "budget", workflow.DefaultClassify())
	elapsed := time.Since(start)
	cpu := processCPU(t) - cpu0
	require.NoError(t, err)
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status)
	require.NotNil(t, m)
	fmt.Printf("relcap-review: elapsed_ns=%d cpu_ns=%d vmhwm_kb=%s changes=%d\n", elapsed.Nanoseconds(), cpu.Nanoseconds(), m[1], len(s.Changes))
}
