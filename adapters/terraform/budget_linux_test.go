package terraform

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	tfjson "github.com/hashicorp/terraform-json"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
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

// childModeEnv chooses what the child measures: relcap's review with its
// --json document written (the default), or terraform-json's own decode.
const childModeEnv = "RELCAP_REVIEW_CHILD_MODE"

// BenchmarkReviewVsTerraformJSON10k measures, side by side in fresh
// processes, relcap's review of the generated 10,000-resource document
// with its --json review written, and terraform-json's json.Unmarshal of
// the same bytes into tfjson.Plan: wall time, CPU time and peak RSS,
// medians of 7 pairs (order alternating). It fails when relcap's review
// costs more than the decode in any of the three (issue 15).
func BenchmarkReviewVsTerraformJSON10k(b *testing.B) {
	doc := generated10k()
	path := filepath.Join(b.TempDir(), "plan-10k.json")
	require.NoError(b, os.WriteFile(path, doc.data, 0o600))
	const pairs = 7
	var relcap, tfjson []childCost
	for b.Loop() {
		relcap, tfjson = relcap[:0], tfjson[:0]
		for i := range pairs {
			first, second := "relcap", "tfjson"
			if i%2 == 1 {
				first, second = second, first
			}
			for _, mode := range []string{first, second} {
				c := runChild(b, path, mode)
				if mode == "relcap" {
					relcap = append(relcap, c)
				} else {
					tfjson = append(tfjson, c)
				}
			}
		}
	}
	r, t := medianCost(relcap), medianCost(tfjson)
	ratio := func(a, b float64) float64 { return a / b }
	b.ReportMetric(float64(r.wall.Milliseconds()), "relcap-wall-ms")
	b.ReportMetric(float64(t.wall.Milliseconds()), "tfjson-wall-ms")
	b.ReportMetric(ratio(float64(r.wall), float64(t.wall)), "wall-ratio")
	b.ReportMetric(ratio(float64(r.cpu), float64(t.cpu)), "cpu-ratio")
	b.ReportMetric(ratio(float64(r.peak), float64(t.peak)), "peak-ratio")
	b.Logf("%d resources, %.1f MB: relcap review + --json wall %s CPU %s peak %.0f MB; tfjson.Plan unmarshal wall %s CPU %s peak %.0f MB (medians of %d pairs; race detector %t)",
		doc.resources, float64(len(doc.data))/1e6, r.wall.Round(time.Millisecond), r.cpu.Round(time.Millisecond), float64(r.peak)/(1<<20),
		t.wall.Round(time.Millisecond), t.cpu.Round(time.Millisecond), float64(t.peak)/(1<<20), pairs, raceEnabled)
	if raceEnabled {
		return
	}
	if r.wall > t.wall || r.cpu > t.cpu || r.peak > t.peak {
		b.Fatalf("relcap's review costs more than terraform-json's decode: wall %.2fx, CPU %.2fx, peak %.2fx",
			ratio(float64(r.wall), float64(t.wall)), ratio(float64(r.cpu), float64(t.cpu)), ratio(float64(r.peak), float64(t.peak)))
	}
}

type childCost struct {
	wall, cpu time.Duration
	peak      int64
}

func runChild(b *testing.B, path, mode string) childCost {
	b.Helper()
	cmd := exec.CommandContext(b.Context(), os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path, childModeEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	require.NoError(b, err, "%s", out)
	m := regexp.MustCompile(`relcap-review: elapsed_ns=(\d+) cpu_ns=(\d+) vmhwm_kb=(\d+)`).FindSubmatch(out)
	require.NotNil(b, m, "child output: %s", out)
	ns, _ := strconv.ParseInt(string(m[1]), 10, 64)
	cpuNs, _ := strconv.ParseInt(string(m[2]), 10, 64)
	kb, _ := strconv.ParseInt(string(m[3]), 10, 64)
	return childCost{wall: time.Duration(ns), cpu: time.Duration(cpuNs), peak: kb << 10}
}

func medianCost(cs []childCost) childCost {
	walls, cpus, peaks := make([]time.Duration, len(cs)), make([]time.Duration, len(cs)), make([]int64, len(cs))
	for i, c := range cs {
		walls[i], cpus[i], peaks[i] = c.wall, c.cpu, c.peak
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	slices.Sort(peaks)
	return childCost{wall: walls[len(cs)/2], cpu: cpus[len(cs)/2], peak: peaks[len(cs)/2]}
}

// TestMain runs the measured review when BenchmarkReviewJSON10kBudget
// started this binary as its child, and the tests otherwise.
func TestMain(m *testing.M) {
	if path := os.Getenv(applyChildEnv); path != "" {
		if err := applyChild(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if path := os.Getenv(childEnv); path != "" {
		if err := reviewChild(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// pgtest.Main stops the package's throw-away PostgreSQL (the custody
	// tests' pg backend) and removes its directory.
	os.Exit(pgtest.Main(m))
}

func reviewChild(path string) error {
	cpu0, err := rusageCPU()
	if err != nil {
		return err
	}
	start := time.Now()
	changes, err := childWork(path, os.Getenv(childModeEnv))
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
	fmt.Printf("relcap-review: elapsed_ns=%d cpu_ns=%d vmhwm_kb=%s changes=%d\n", elapsed.Nanoseconds(), (cpu1 - cpu0).Nanoseconds(), m[1], changes)
	return nil
}

// childWork is what the child measures: relcap's review of the document
// at path with its --json document written as relcap plan --from-json
// --json writes it (mode "relcap", the default), or terraform-json's
// decode of the same file into tfjson.Plan ("tfjson").
func childWork(path, mode string) (int, error) {
	if mode == "tfjson" {
		data, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		var p tfjson.Plan
		if err := json.Unmarshal(data, &p); err != nil {
			return 0, err
		}
		return len(p.ResourceChanges), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s, err := reviewJSON(f, "budget", tfplan.DefaultClassify(), secret.NewSet())
	if err != nil {
		return 0, err
	}
	if mode == "relcap" {
		// As relcap plan --from-json --json writes it (plain.WriteJSON;
		// an adapter's test may not import the printer).
		if err := jsonv2.MarshalWrite(io.Discard, s, jsonv1.DefaultOptionsV1(), jsontext.WithIndent("  ")); err != nil {
			return 0, err
		}
	}
	return len(s.Changes), nil
}
