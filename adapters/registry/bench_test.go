package registry

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/image"
)

// The 200 MB benchmarks copy one image of five 40 MiB layers of random
// bytes (so nothing compresses away) between two loopback registries, so
// every blob is uploaded: no mount, no existing blob. Both benchmarks read
// from the same source registry; each iteration writes to a fresh, empty
// target registry. Run them in the same invocation to compare:
//
//	go test -run '^$' -bench '200MB' -benchtime 5x -count 5 ./adapters/registry/
var big struct {
	once sync.Once
	src  *testRegistry
	img  v1.Image
	size int64
}

func bigImage(b *testing.B) (*testRegistry, v1.Image, int64) {
	b.Helper()
	big.once.Do(func() {
		layers := make([]v1.Layer, 5)
		for i := range layers {
			layers[i] = randomLayer(b, 40<<20)
		}
		big.img = ociImage(b, "linux/amd64", built, layers...)
		// Not closed: both benchmarks share it for the life of the process.
		big.src = newRegistry(noCleanup{b}, registryConfig{})
		push(b, big.src.repo("ci/web:big"), big.img)
		big.size = imageSize(b, big.img)
	})
	return big.src, big.img, big.size
}

// noCleanup keeps a shared fixture alive past the benchmark that made it.
type noCleanup struct{ testing.TB }

func (noCleanup) Cleanup(func()) {}

// benchCopy times copy(src, dst) of the big image into a new registry per
// iteration; creating and discarding registries is not timed.
func benchCopy(b *testing.B, copyImage func(b *testing.B, from, to string, h v1.Hash)) {
	src, img, size := bigImage(b)
	h := digestOf(b, img)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		iter := &iterTB{TB: b}
		dst := newRegistry(iter, registryConfig{})
		runtime.GC()
		b.StartTimer()
		copyImage(b, src.repo("ci/web"), dst.repo("prod/web"), h)
		b.StopTimer()
		iter.cleanup() // frees the 200 MB the target holds
		b.StartTimer()
	}
}

// iterTB runs cleanups at the end of one benchmark iteration.
type iterTB struct {
	testing.TB
	fns []func()
}

func (t *iterTB) Cleanup(f func()) { t.fns = append(t.fns, f) }

func (t *iterTB) cleanup() {
	for i := len(t.fns) - 1; i >= 0; i-- {
		t.fns[i]()
	}
}

func BenchmarkPromote200MB(b *testing.B) {
	a := newAdapter(b, Options{})
	benchCopy(b, func(b *testing.B, from, to string, h v1.Hash) {
		res, err := a.Promote(b.Context(), image.PromoteRequest{Digest: wdigest(b, h), From: from, To: to})
		require.NoError(b, err)
		require.Equal(b, 6, res.BlobsUploaded)
	})
}

func BenchmarkCraneCopy200MB(b *testing.B) {
	benchCopy(b, func(b *testing.B, from, to string, h v1.Hash) {
		err := crane.Copy(from+"@"+h.String(), to+"@"+h.String(),
			crane.WithContext(b.Context()), crane.WithAuthFromKeychain(anonymous))
		require.NoError(b, err)
	})
}

// alreadyPresent is an image with a cosign signature and an in-toto
// attestation, promoted once to a target, so that every further
// promotion finds everything there.
func alreadyPresent(b *testing.B) (from, to string, h v1.Hash) {
	b.Helper()
	src, dst := newRegistry(b, registryConfig{referrers: true}), newRegistry(b, registryConfig{referrers: true})
	img := ociImage(b, "linux/amd64", built, randomLayer(b, 1<<20), randomLayer(b, 1<<20), randomLayer(b, 1<<20))
	h = digestOf(b, img)
	push(b, src.repo("ci/web:1.0"), img)
	push(b, src.repo("ci/web:sha256-"+h.Hex+".sig"), cosignSignature(b, h))
	att := intotoAttestation(b, descriptor(b, img))
	push(b, src.repo("ci/web@"+digestOf(b, att).String()), att)
	_, err := newAdapter(b, Options{}).Promote(b.Context(), image.PromoteRequest{
		Digest: wdigest(b, h), From: src.repo("ci/web"), To: dst.repo("prod/web"),
	})
	require.NoError(b, err)
	return src.repo("ci/web"), dst.repo("prod/web"), h
}

// alreadyPresentBudget is the most one promotion of a digest the target
// already holds may take against a loopback registry.
const alreadyPresentBudget = 200 * time.Millisecond

// BenchmarkPromoteAlreadyPresent fails when any one promotion exceeds
// alreadyPresentBudget, and reports the slowest as max-ms.
func BenchmarkPromoteAlreadyPresent(b *testing.B) {
	from, to, h := alreadyPresent(b)
	a := newAdapter(b, Options{})
	req := image.PromoteRequest{Digest: wdigest(b, h), From: from, To: to}
	b.ReportAllocs()
	var slowest time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := a.Promote(b.Context(), req)
		slowest = max(slowest, time.Since(start))
		require.NoError(b, err)
		require.Zero(b, res.BlobsUploaded+res.BlobsMounted+res.ReferrersCopied)
	}
	b.ReportMetric(float64(slowest.Microseconds())/1000, "max-ms")
	if slowest > alreadyPresentBudget {
		b.Errorf("slowest promotion of a present digest took %v; budget %v", slowest, alreadyPresentBudget)
	}
}

// BenchmarkCraneCopyAlreadyPresent is the reference for the one above:
// crane checks the manifest only (no referrers, no read-back).
func BenchmarkCraneCopyAlreadyPresent(b *testing.B) {
	from, to, h := alreadyPresent(b)
	b.ReportAllocs()
	for b.Loop() {
		err := crane.Copy(from+"@"+h.String(), to+"@"+h.String(),
			crane.WithContext(b.Context()), crane.WithAuthFromKeychain(anonymous))
		require.NoError(b, err)
	}
}
