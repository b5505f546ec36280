package config

import (
	"fmt"
	"regexp"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/ownership"
)

// bigOwnership is an ownership map of about lines lines: rules of four
// lines each (a block mapping with a flow match, an owner and fields).
func bigOwnership(lines int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nrules:\n")
	for i := 0; b.Len() >= 0 && i < lines/4; i++ {
		fmt.Fprintf(&b, "  - match: {kind: Deployment, namespace: ns-%d, name: app-%d}\n    owner: argocd\n    fields:\n      spec.replicas: hpa\n", i, i)
	}
	return []byte(b.String())
}

// BenchmarkParseOwnershipMillionLines measures validating a 1,000,000-line
// ownership map (go test -bench ParseOwnershipMillionLines -benchmem
// -memprofile): issue 26 found 1.08 GB.
func BenchmarkParseOwnershipMillionLines(b *testing.B) {
	data := bigOwnership(1_000_000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		m, err := ParseOwnership("ownership.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		if len(m.Rules) != 250_000 {
			b.Fatalf("%d rules", len(m.Rules))
		}
	}
}

// TestStreamedOwnershipReadsAsTheWholeDocument: every map that is read one
// item at a time gives the same rules and hand-offs as the same map parsed
// as one document, and every problem (file, line, column, field, message)
// the whole document's parse reports.
func TestStreamedOwnershipReadsAsTheWholeDocument(t *testing.T) {
	t.Parallel()
	inputs := []string{
		designOwnership,
		ownershipBase,
		ownershipBase + "  - match: {}\n    owner: Argocd\n    fields: {spec.replicas: '', x: [1]}\n",
		ownershipBase + "handoffs:\n  - match: {name: \"[\"}\n    from: hpa\n    to: hpa\n",
		ownershipBase + "  # a comment\n\n  - match: {kind: Deployment}\n    owner: argocd\n  - match: {kind: Deployment}\n    owner: terraform\n",
		"version: 1\nrules:\n- match: {kind: Job}\n  owner: argocd\n- match:\n    kind: CronJob\n  owner: argocd\n  fields:\n    spec.suspend: hpa\nhandoffs:\n- match: {kind: Namespace}\n  from: terraform\n  to: argocd\n  note: bootstrapped\n",
		"version: 1\nrules:\n  - match: {kind: [}\n",
		"version: 1\nrules:\n  - match: {kind: Job}\n    owner: argocd\n  - match: {kind: Job\n    owner: argocd\n  - match: {kind: Pod}\n    owner: terrafrom\n",
		"version: 2\nrules:\n",
		"version: 1\nrule:\n  - match: {kind: Job}\n",
		"version: 1\nrules:\n  - match: {kind: Job}\n    owner: argocd\n    owner: hpa\n",
		"version: 1\nrules:\n  - [a]\n  - 7\n  -\n",
	}
	inputs = append(inputs, string(bigOwnership(4000)))
	streamed := 0
	for _, in := range inputs {
		plan, ok := planStream([]byte(in))
		if !ok {
			continue
		}
		streamed++
		var cs, cw collector
		got := (&parser{file: "ownership.yaml", probs: &cs}).ownershipStreamed([]byte(in), plan, ownership.Map{File: "ownership.yaml"})
		want := (&parser{file: "ownership.yaml", probs: &cw}).ownershipWhole([]byte(in), ownership.Map{File: "ownership.yaml"})
		if cw.err() == nil {
			require.NoError(t, cs.err(), in)
			require.Equal(t, want, got, in)
			continue
		}
		// A syntax error stops the whole document there; read item by
		// item, the other items are checked too: every problem of the
		// whole document's is reported, and perhaps more.
		// (yaml.v3 places an unclosed flow mapping at its first or its
		// last line depending on what follows it: the line of a syntax
		// error may differ by one.)
		require.Error(t, cs.err(), in)
		syntaxLine := regexp.MustCompile(`(?m)^ownership\.yaml:\d+: invalid YAML`)
		gotProblems := syntaxLine.ReplaceAllString(cs.err().Error(), "ownership.yaml:N: invalid YAML")
		for _, line := range strings.Split(syntaxLine.ReplaceAllString(cw.err().Error(), "ownership.yaml:N: invalid YAML"), "\n") {
			require.Contains(t, gotProblems, line, in)
		}
	}
	require.Equal(t, len(inputs)-1, streamed, "every block-style map streams but the one with an inline list")
	for _, whole := range []string{
		"version: 1\nrules:\n  - &r {match: {kind: x}, owner: terraform}\n  - <<: *r\n",
		"{version: 1, rules: []}\n",
		"version: 1\nrules: [{match: {kind: x}, owner: argocd}]\n",
		"%YAML 1.2\n---\nversion: 1\n",
	} {
		_, ok := planStream([]byte(whole))
		require.False(t, ok, whole)
	}
}

// heapPeak samples the heap's size until the returned function is called,
// which returns the largest it saw.
func heapPeak(t *testing.T) func() uint64 {
	t.Helper()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak.Load()
	}
}
