package secret_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/relcap/relcap/workflow/secret"
)

// benchSecrets are n secrets as a plan teaches them: tokens (plain) and
// generated passwords (with characters every escaper touches).
func benchSecrets(n int) []string {
	out := make([]string, n)
	for i := range out {
		if i%2 == 0 {
			out[i] = fmt.Sprintf("tok3n-%08d-abcdefgh", i)
		} else {
			out[i] = fmt.Sprintf("p@ss/w:%d \"q\" <&> %%", i)
		}
	}
	return out
}

// benchText is a megabyte of plan output with a secret every 10 lines.
func benchText(secrets []string) string {
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		if i%10 == 0 {
			fmt.Fprintf(&b, "      + password = %q\n", secrets[i%len(secrets)])
		} else {
			fmt.Fprintf(&b, "      + tags     = { \"Name\" = \"web-%d\", \"Team\" = \"platform\" }\n", i)
		}
	}
	return b.String()
}

// BenchmarkLearn10k learns 10,000 secrets (half of them with characters
// to escape, each in up to ~60 forms) and builds the matcher.
func BenchmarkLearn10k(b *testing.B) {
	secrets := benchSecrets(10000)
	b.ReportAllocs()
	for b.Loop() {
		s := secret.NewSet(secrets...)
		if !s.Contains(secrets[1]) {
			b.Fatal("not learnt")
		}
	}
}

// BenchmarkScrub1MB scrubs a megabyte of plan output against 10,000
// secrets.
func BenchmarkScrub1MB(b *testing.B) {
	secrets := benchSecrets(10000)
	s := secret.NewSet(secrets...)
	text := benchText(secrets)
	s.Contains("") // builds the matcher, outside the timing
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if s.Scrub(text) == text {
			b.Fatal("nothing masked")
		}
	}
}
