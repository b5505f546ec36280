package registry

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
)

// upstream is an artifact in a source repository, ready to promote.
type upstream struct {
	reg   *testRegistry
	repo  string // "host/ci/web"
	img   v1.Image
	h     v1.Hash
	blobs int // distinct blobs: config and layers
}

func pushImage(t testing.TB, reg *testRegistry, path string) upstream {
	t.Helper()
	img := ociImage(t, "linux/amd64", built, randomLayer(t, 3000), randomLayer(t, 2000), randomLayer(t, 1000))
	push(t, reg.repo(path+":1.0"), img)
	return upstream{reg: reg, repo: reg.repo(path), img: img, h: digestOf(t, img), blobs: 4}
}

func (u upstream) request(to string) image.PromoteRequest {
	d, _ := image.ParseDigest(u.h.String())
	return image.PromoteRequest{Digest: d, From: u.repo, To: to}
}

func TestPromoteImageKeepsDigest(t *testing.T) {
	t.Parallel()
	src, dst := newRegistry(t, registryConfig{}), newRegistry(t, registryConfig{})
	up := pushImage(t, src, "ci/web")
	to := dst.repo("prod/web")

	res, err := newAdapter(t, Options{}).Promote(t.Context(), up.request(to))
	require.NoError(t, err)

	require.True(t, manifestIn(t, to, up.h))
	require.Equal(t, wdigest(t, up.h), res.Target.Digest)
	require.Equal(t, to, res.Target.Repository)
	require.Equal(t, to+"@"+up.h.String(), res.Target.Reference)
	require.Equal(t, []string{"linux/amd64"}, res.Target.Platforms)
	require.Equal(t, imageSize(t, up.img), res.Target.Size)
	require.Equal(t, up.blobs, res.BlobsUploaded)
	require.Zero(t, res.BlobsMounted, "two registries: nothing to mount from")
	require.Zero(t, res.BlobsPresent)
	require.Zero(t, res.ReferrersCopied)
}

func TestPromoteIndexKeepsDigest(t *testing.T) {
	t.Parallel()
	src, dst := newRegistry(t, registryConfig{}), newRegistry(t, registryConfig{})
	shared := randomLayer(t, 4096)
	amd := ociImage(t, "linux/amd64", built, shared, randomLayer(t, 1000))
	arm := ociImage(t, "linux/arm64/v8", built, shared, randomLayer(t, 3000))
	idx := index(t, amd, arm)
	push(t, src.repo("ci/web:multi"), idx)
	h := digestOf(t, idx)
	to := dst.repo("prod/web")

	res, err := newAdapter(t, Options{}).Promote(t.Context(), image.PromoteRequest{
		Digest: wdigest(t, h), From: src.repo("ci/web"), To: to,
	})
	require.NoError(t, err)

	require.True(t, manifestIn(t, to, h))
	require.True(t, manifestIn(t, to, digestOf(t, amd)))
	require.True(t, manifestIn(t, to, digestOf(t, arm)))
	require.Equal(t, wdigest(t, h), res.Target.Digest)
	require.Equal(t, []string{"linux/amd64", "linux/arm64/v8"}, res.Target.Platforms)
	// Two configs, one shared layer, two own layers.
	require.Equal(t, 5, res.BlobsUploaded)
}

// TestPromoteCarriesReferrers attaches a cosign signature (tag scheme) and
// an in-toto attestation (OCI referrer with a subject) upstream, and checks
// that both are downstream after Promote, on registries with and without
// the referrers API.
func TestPromoteCarriesReferrers(t *testing.T) {
	t.Parallel()
	for _, api := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers-api", false: "tag-fallback"}[api], func(t *testing.T) {
			t.Parallel()
			src, dst := newRegistry(t, registryConfig{referrers: api}), newRegistry(t, registryConfig{referrers: api})
			up := pushImage(t, src, "ci/web")
			sigTag := "sha256-" + up.h.Hex + ".sig"
			sig := cosignSignature(t, up.h)
			push(t, up.repo+":"+sigTag, sig)
			att := intotoAttestation(t, descriptor(t, up.img))
			push(t, up.repo+"@"+digestOf(t, att).String(), att)
			to := dst.repo("prod/web")

			res, err := newAdapter(t, Options{}).Promote(t.Context(), up.request(to))
			require.NoError(t, err)

			require.Equal(t, 2, res.ReferrersCopied)
			require.True(t, manifestIn(t, to, digestOf(t, att)))
			tagged, err := remote.Head(mustRef(t, to+":"+sigTag), remote.WithContext(t.Context()))
			require.NoError(t, err)
			require.Equal(t, digestOf(t, sig), tagged.Digest, "the signature keeps its tag and its digest")
			require.ElementsMatch(t, []image.Referrer{
				{Kind: "signature", Digest: wdigest(t, digestOf(t, sig)), Scheme: "cosign-tag"},
				{Kind: "attestation", Digest: wdigest(t, digestOf(t, att)), Scheme: "oci-referrers"},
			}, res.Target.Referrers)
			require.True(t, res.Target.Signed())

			// Found downstream by an independent Resolve, too.
			art, err := newAdapter(t, Options{}).Resolve(t.Context(), to+"@"+up.h.String())
			require.NoError(t, err)
			require.ElementsMatch(t, res.Target.Referrers, art.Referrers)
		})
	}
}

// TestPromoteTwiceUploadsNothing is the idempotence contract: the second
// promotion of a digest writes nothing. (Its speed budget is checked by
// BenchmarkPromoteAlreadyPresent.)
func TestPromoteTwiceUploadsNothing(t *testing.T) {
	t.Parallel()
	src, dst := newRegistry(t, registryConfig{referrers: true}), newRegistry(t, registryConfig{referrers: true})
	up := pushImage(t, src, "ci/web")
	push(t, up.repo+":sha256-"+up.h.Hex+".sig", cosignSignature(t, up.h))
	att := intotoAttestation(t, descriptor(t, up.img))
	push(t, up.repo+"@"+digestOf(t, att).String(), att)
	to := dst.repo("prod/web")
	a := newAdapter(t, Options{})

	first, err := a.Promote(t.Context(), up.request(to))
	require.NoError(t, err)
	require.Equal(t, 2, first.ReferrersCopied)

	for range 2 {
		mark := dst.log.mark()
		again, err := a.Promote(t.Context(), up.request(to))
		require.NoError(t, err)

		reqs := dst.log.since(mark)
		require.Zero(t, blobWrites(reqs), "no blob upload, chunk or commit: %v", reqs)
		require.Zero(t, count(reqs, http.MethodPut, "/manifests/"), "no manifest written")
		require.Zero(t, again.BlobsUploaded)
		require.Zero(t, again.BlobsMounted)
		require.Equal(t, up.blobs, again.BlobsPresent)
		require.Zero(t, again.ReferrersCopied)
		require.Equal(t, first.Target, again.Target)
	}
}

// TestPromoteMountsWithinRegistry promotes between two repositories of one
// registry that keeps blobs per repository: every blob is mounted, none
// uploaded.
func TestPromoteMountsWithinRegistry(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, registryConfig{scoped: true})
	up := pushImage(t, reg, "staging/web")
	mark := reg.log.mark()

	res, err := newAdapter(t, Options{}).Promote(t.Context(), up.request(reg.repo("prod/web")))
	require.NoError(t, err)

	require.Equal(t, up.blobs, res.BlobsMounted)
	require.Zero(t, res.BlobsUploaded)
	require.Zero(t, res.BlobsPresent)
	reqs := reg.log.since(mark)
	require.Equal(t, up.blobs, count(reqs, http.MethodPost, "from=staging%2Fweb"), "one mount request per blob: %v", reqs)
	require.Zero(t, count(reqs, http.MethodPatch, "/blobs/uploads/"), "no blob bytes sent")
	require.True(t, manifestIn(t, reg.repo("prod/web"), up.h))
}

// TestPromoteSkipsBlobsTheTargetHas promotes an image whose base layers the
// target already holds (another repository's push there shares them).
func TestPromoteSkipsBlobsTheTargetHas(t *testing.T) {
	t.Parallel()
	src, dst := newRegistry(t, registryConfig{}), newRegistry(t, registryConfig{})
	base := randomLayer(t, 5000)
	img := ociImage(t, "linux/amd64", built, base, randomLayer(t, 100))
	push(t, src.repo("ci/web:1.0"), img)
	push(t, dst.repo("prod/web:old"), ociImage(t, "linux/amd64", built, base))

	res, err := newAdapter(t, Options{}).Promote(t.Context(), image.PromoteRequest{
		Digest: wdigest(t, digestOf(t, img)), From: src.repo("ci/web"), To: dst.repo("prod/web"),
	})
	require.NoError(t, err)
	require.Equal(t, 1, res.BlobsPresent, "the shared base layer")
	require.Equal(t, 2, res.BlobsUploaded, "config and top layer")
}

// TestPromoteRetriesTransientErrors makes the registry answer 500 twice to
// one kind of request; the promotion succeeds anyway.
func TestPromoteRetriesTransientErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		source bool // fail on the source registry, else on the target
		match  func(*http.Request) bool
	}{
		{"source blob read", true, func(r *http.Request) bool {
			return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:")
		}},
		{"source manifest read", true, func(r *http.Request) bool {
			return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/sha256:")
		}},
		{"target blob upload", false, func(r *http.Request) bool {
			return r.Method == http.MethodPatch
		}},
		{"target manifest write", false, func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/")
		}},
		{"target ping", false, func(r *http.Request) bool {
			return r.URL.Path == "/v2/"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			flaky := registryConfig{wrap: failFirst(2, tc.match)}
			src, dst := newRegistry(t, registryConfig{}), newRegistry(t, flaky)
			if tc.source {
				src, dst = newRegistry(t, flaky), newRegistry(t, registryConfig{})
			}
			up := pushImage(t, src, "ci/web")
			failing := src
			if !tc.source {
				failing = dst
			}
			mark := failing.log.mark()

			res, err := newAdapter(t, Options{}).Promote(t.Context(), up.request(dst.repo("prod/web")))
			require.NoError(t, err)
			require.Equal(t, wdigest(t, up.h), res.Target.Digest)
			require.Equal(t, up.blobs, res.BlobsUploaded)
			var failed int
			for _, r := range failing.log.since(mark) {
				if r.status == http.StatusInternalServerError {
					failed++
				}
			}
			require.Equal(t, 2, failed, "the injected failures happened")
		})
	}
}

func TestPromoteGivesUpAfterAttempts(t *testing.T) {
	t.Parallel()
	putManifest := func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/")
	}
	src, dst := newRegistry(t, registryConfig{}), newRegistry(t, registryConfig{wrap: failFirst(1000, putManifest)})
	up := pushImage(t, src, "ci/web")
	a := newAdapter(t, Options{Retry: RetryPolicy{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}})
	mark := dst.log.mark()

	_, err := a.Promote(t.Context(), up.request(dst.repo("prod/web")))
	require.Error(t, err)
	require.ErrorContains(t, err, "copy "+up.h.String()+" to "+dst.repo("prod/web")+": 500 UNKNOWN (registry: injected failure)")
	require.ErrorContains(t, err, "gave up after 3 attempts")
	require.False(t, isTerminal(err), "a registry that keeps failing may recover; trying later is allowed")
	require.Equal(t, 3, count(dst.log.since(mark), http.MethodPut, "/manifests/"))
}

// TestPromoteStopsRetryingWhenContextEnds checks that a backoff wait does
// not outlive the context.
func TestPromoteStopsRetryingWhenContextEnds(t *testing.T) {
	t.Parallel()
	src, dst := newRegistry(t, registryConfig{}), newRegistry(t, registryConfig{wrap: failFirst(1000, func(*http.Request) bool { return true })})
	up := pushImage(t, src, "ci/web")
	a := newAdapter(t, Options{Retry: RetryPolicy{Attempts: 10, BaseDelay: time.Minute, MaxDelay: time.Minute}})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()

	start := time.Now()
	_, err := a.Promote(ctx, up.request(dst.repo("prod/web")))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
}

func TestPromoteDigestNotInSource(t *testing.T) {
	t.Parallel()
	src, dst := newRegistry(t, registryConfig{}), newRegistry(t, registryConfig{})
	pushImage(t, src, "ci/web")
	other := ociImage(t, "linux/amd64", built, randomLayer(t, 10)) // never pushed
	h := digestOf(t, other)
	mark := dst.log.mark()

	_, err := newAdapter(t, Options{}).Promote(t.Context(), image.PromoteRequest{
		Digest: wdigest(t, h), From: src.repo("ci/web"), To: dst.repo("prod/web"),
	})
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.True(t, isTerminal(err))
	require.EqualError(t, err, "copy "+h.String()+" from "+src.repo("ci/web")+": 404 MANIFEST_UNKNOWN: the digest is not in the source repository")
	for _, r := range dst.log.since(mark) {
		require.Contains(t, []string{http.MethodGet, http.MethodHead}, r.method, "nothing written to the target: %v", r)
	}
	require.False(t, manifestIn(t, dst.repo("prod/web"), h))

	_, err = newAdapter(t, Options{}).Promote(t.Context(), image.PromoteRequest{
		Digest: wdigest(t, h), From: src.repo("ci/nothing"), To: dst.repo("prod/web"),
	})
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.ErrorContains(t, err, "404 NAME_UNKNOWN: the source repository does not exist")
}

func TestPromoteUnauthorized(t *testing.T) {
	t.Parallel()
	src := newRegistry(t, registryConfig{})
	dst := newRegistry(t, registryConfig{wrap: basicAuth("captain", "s3cret")})
	up := pushImage(t, src, "ci/web")
	to := dst.repo("prod/web")

	_, err := newAdapter(t, Options{}).Promote(t.Context(), up.request(to))
	require.Error(t, err)
	require.True(t, isTerminal(err))
	require.ErrorContains(t, err, "copy "+up.h.String())
	require.ErrorContains(t, err, "401 Unauthorized: "+dst.host+" did not accept the credentials relcap sent", "a HEAD answer has no body, so no error code")
	require.ErrorContains(t, err, "`docker login "+dst.host+"`")
	require.ErrorContains(t, err, "~/.docker/config.json")
	require.NotContains(t, err.Error(), "s3cret")

	// With the credentials the keychain would find, it works.
	a := newAdapterWithKeychain(t, Options{}, staticKeychain{auth: &authn.Basic{Username: "captain", Password: "s3cret"}})
	_, err = a.Promote(t.Context(), up.request(to))
	require.NoError(t, err)
}

func TestPromoteForbiddenIsNotRetried(t *testing.T) {
	t.Parallel()
	deny := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"errors":[{"code":"DENIED","message":"push not allowed"}]}`))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	src, dst := newRegistry(t, registryConfig{}), newRegistry(t, registryConfig{wrap: deny})
	up := pushImage(t, src, "ci/web")
	mark := dst.log.mark()

	_, err := newAdapter(t, Options{}).Promote(t.Context(), up.request(dst.repo("prod/web")))
	require.True(t, isTerminal(err))
	require.ErrorContains(t, err, "403 DENIED: "+dst.host+" refused access")
	require.ErrorContains(t, err, "`docker login "+dst.host+"`")
	require.Equal(t, 1, count(dst.log.since(mark), http.MethodPut, "/manifests/"), "a refusal is not retried")
}

// TestPromoteDetectsRewrittenManifest uses a target that claims another
// digest for the manifest it was given, as a converting registry would.
func TestPromoteDetectsRewrittenManifest(t *testing.T) {
	t.Parallel()
	liar := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/sha256:") {
				w = &digestLiar{ResponseWriter: w}
			}
			next.ServeHTTP(w, r)
		})
	}
	src, dst := newRegistry(t, registryConfig{}), newRegistry(t, registryConfig{wrap: liar})
	up := pushImage(t, src, "ci/web")

	_, err := newAdapter(t, Options{}).Promote(t.Context(), up.request(dst.repo("prod/web")))
	require.ErrorIs(t, err, fault.ErrDigestMismatch)
	require.True(t, isTerminal(err))
	require.ErrorContains(t, err, "the registry rewrote the manifest")
}

type digestLiar struct{ http.ResponseWriter }

func (w *digestLiar) WriteHeader(code int) {
	if code == http.StatusOK {
		w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("0", 64))
	}
	w.ResponseWriter.WriteHeader(code)
}

func TestPromoteRejectsBadRequests(t *testing.T) {
	t.Parallel()
	a := newAdapter(t, Options{})
	d := wdigest(t, v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)})
	for _, tc := range []struct {
		name string
		req  image.PromoteRequest
		says string
	}{
		{"no digest", image.PromoteRequest{From: "registry.example.com/a", To: "registry.example.com/b"}, "no digest"},
		{"tagged source", image.PromoteRequest{Digest: d, From: "registry.example.com/a:1", To: "registry.example.com/b"}, `source repository "registry.example.com/a:1"`},
		{"target with digest", image.PromoteRequest{Digest: d, From: "registry.example.com/a", To: "registry.example.com/b@" + d.String()}, "without tag or digest"},
		{"no host", image.PromoteRequest{Digest: d, From: "registry.example.com/a", To: "prod/web"}, "no registry host"},
		{"upper case", image.PromoteRequest{Digest: d, From: "registry.example.com/Staging", To: "registry.example.com/b"}, "must be lowercase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := a.Promote(t.Context(), tc.req)
			require.ErrorIs(t, err, fault.ErrUsage)
			require.True(t, isTerminal(err))
			require.ErrorContains(t, err, tc.says)
		})
	}
}

func TestPromoteReportsProgress(t *testing.T) {
	t.Parallel()
	src, dst := newRegistry(t, registryConfig{}), newRegistry(t, registryConfig{})
	img := ociImage(t, "linux/amd64", built, randomLayer(t, 3<<20), randomLayer(t, 1<<20))
	push(t, src.repo("ci/web:1.0"), img)
	var (
		mu     sync.Mutex
		events []Progress
	)
	a := newAdapter(t, Options{Progress: func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, p)
	}})
	h := digestOf(t, img)

	_, err := a.Promote(t.Context(), image.PromoteRequest{Digest: wdigest(t, h), From: src.repo("ci/web"), To: dst.repo("prod/web")})
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	var phases []string
	for _, e := range events {
		require.Equal(t, wdigest(t, h), e.Digest)
		require.Equal(t, dst.repo("prod/web"), e.To)
		if len(phases) == 0 || phases[len(phases)-1] != e.Phase {
			phases = append(phases, e.Phase)
		}
	}
	require.Equal(t, []string{PhaseInspect, PhaseBlobs, PhaseManifests, PhaseReferrers, PhaseVerify, PhaseDone}, phases)
	last := events[len(events)-1]
	require.Equal(t, imageSize(t, img)-manifestSize(t, img), last.Total)
	require.Equal(t, last.Total, last.Done)
	require.Greater(t, len(events), 6, "byte progress while the layers stream")
}

func isTerminal(err error) bool {
	var term *workflow.TerminalError
	return err != nil && errors.As(err, &term)
}

func mustRef(t testing.TB, ref string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(ref)
	require.NoError(t, err)
	return r
}
