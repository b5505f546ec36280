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
	"github.com/relcap/relcap/workflow/secret"
)

// reviewBudget is what one review of a 10,000-resource document may cost.
const (
	reviewBudgetTime = 1500 * time.Millisecond
	reviewBudgetRSS  = 500 << 20
)

// BenchmarkReviewJSON10kBudget reviews the generated 10,000-resource
// document in a fresh process and reads that process's peak resident memory
// (VmHWM), so the figure is the review's alone, not the generator's or the
// benchmark harness's. It reports wall time, CPU time and peak RSS and fails
// when the review exceeds the budget (1.5 s, 500 MB). Budgets live
// in benchmarks, not in the unit test run, where the machine's other load
// would make them flaky.
func BenchmarkReviewJSON10kBudget(b *testing.B) {
	doc := generated10k()
	path := filepath.Join(b.TempDir(), "plan-10k.json")
	require.NoError(b, os.WriteFile(path, doc.data, 0o600))
	var elapsed, cpu time.Duration
	var peak int64
	for b.Loop() {
		cmd := exec.CommandContext(b.Context(), os.Args[0], "-test.run=^$", "-test.bench=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+path)
		out, err := cmd.CombinedOutput()
		require.NoError(b, err, "%s", out)
		m := regexp.MustCompile(`relcap-review: elapsed_ns=(\d+) cpu_ns=(\d+) vmhwm_kb=(\d+) changes=(\d+)`).FindSubmatch(out)
		require.NotNil(b, m, "child output: %s", out)
		ns, _ := strconv.ParseInt(string(m[1]), 10, 64)
		cpuNs, _ := strconv.ParseInt(string(m[2]), 10, 64)
		kb, _ := strconv.ParseInt(string(m[3]), 10, 64)
		elapsed, cpu, peak = max(elapsed, time.Duration(ns)), max(cpu, time.Duration(cpuNs)), max(peak, kb<<10)
	}
	b.ReportMetric(float64(elapsed.Milliseconds()), "review-wall-ms")
	b.ReportMetric(float64(cpu.Milliseconds()), "review-cpu-ms")
	b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
	b.Logf("review of %d resources (%.1f MB document): wall %s, CPU %s, peak RSS %.1f MB (race detector: %t)",
		doc.resources, float64(len(doc.data))/1e6, elapsed.Round(time.Millisecond), cpu.Round(time.Millisecond), float64(peak)/(1<<20), raceEnabled)
	if raceEnabled {
		return
	}
	// CPU time as well as wall time: on a shared machine the wall clock
	// also measures the neighbours.
	if cpu > reviewBudgetTime || peak > reviewBudgetRSS {
		b.Fatalf("over budget: CPU %s (budget %s), peak RSS %.1f MB (budget %d MB)", cpu, reviewBudgetTime, float64(peak)/(1<<20), reviewBudgetRSS>>20)
	}
}

const childEnv = "RELCAP_REVIEW_BUDGET_DOC"

// TestMain runs the measured review when BenchmarkReviewJSON10kBudget
// started this binary as its child, and the tests otherwise.
func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		if err := reviewChild(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func reviewChild(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cpu0, err := rusageCPU()
	if err != nil {
		return err
	}
	start := time.Now()
	s, err := ReviewJSON(f, "budget", workflow.DefaultClassify(), secret.NewSet())
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	cpu1, err := rusageCPU()
	if err != nil {
		return err
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status)
	if m == nil {
		return fmt.Errorf("no VmHWM in /proc/self/status")
	}
	fmt.Printf("relcap-review: elapsed_ns=%d cpu_ns=%d vmhwm_kb=%s changes=%d\n", elapsed.Nanoseconds(), (cpu1 - cpu0).Nanoseconds(), m[1], len(s.Changes))
	return nil
}
