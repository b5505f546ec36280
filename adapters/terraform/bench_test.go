//go:build unix

package terraform

import (
	"bytes"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// BenchmarkReviewJSON10k reviews a generated 10,000-resource plan document
// (budget: 1.5 s and 500 MB peak per review).
func BenchmarkReviewJSON10k(b *testing.B) {
	doc := generated10k()
	b.SetBytes(int64(len(doc.data)))
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		s, err := reviewJSON(bytes.NewReader(doc.data), "bench", tfplan.DefaultClassify(), secret.NewSet())
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Changes) == 0 {
			b.Fatal("no changes")
		}
	}
}

// BenchmarkDecodeJSON10k is the baseline: a plain encoding/json decode of the
// same bytes into map[string]any, doing no review at all.
func BenchmarkDecodeJSON10k(b *testing.B) {
	doc := generated10k()
	b.SetBytes(int64(len(doc.data)))
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		var v map[string]any
		if err := json.Unmarshal(doc.data, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU reports CPU time per operation (user+system, GC workers
// included) next to ns/op, which on a shared machine also measures the
// neighbours.
func reportCPU(b *testing.B) func() {
	start := processCPU(b)
	return func() {
		b.ReportMetric(float64((processCPU(b)-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func processCPU(b testing.TB) time.Duration {
	d, err := rusageCPU()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func rusageCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
