package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/relcap/relcap/workflow/image"
	"github.com/stretchr/testify/require"
)

// testRegistry is a real OCI distribution server (ggcr's pkg/registry) on
// loopback, with a log of the requests it answered.
type testRegistry struct {
	host string // "127.0.0.1:<port>"
	log  *requestLog
}

type registryConfig struct {
	referrers bool // serve the OCI 1.1 referrers API
	// scoped keeps blobs per repository and honours cross-repository
	// mounts, as production registries do; ggcr's registry keeps one blob
	// store for all repositories and ignores mount requests.
	scoped bool
	// wrap puts middleware (faults, authentication) in front.
	wrap func(http.Handler) http.Handler
}

func newRegistry(t testing.TB, cfg registryConfig) *testRegistry {
	t.Helper()
	opts := []ggcrregistry.Option{
		ggcrregistry.Logger(log.New(io.Discard, "", 0)),
		ggcrregistry.WithReferrersSupport(cfg.referrers),
	}
	var blobs *scopedBlobs
	if cfg.scoped {
		blobs = &scopedBlobs{m: map[string]map[string][]byte{}}
		opts = append(opts, ggcrregistry.WithBlobHandler(blobs))
	}
	var h http.Handler = ggcrregistry.New(opts...)
	if blobs != nil {
		h = &mounter{next: h, blobs: blobs}
	}
	if cfg.wrap != nil {
		h = cfg.wrap(h)
	}
	rl := &requestLog{next: h}
	srv := httptest.NewServer(rl)
	t.Cleanup(srv.Close)
	return &testRegistry{host: strings.TrimPrefix(srv.URL, "http://"), log: rl}
}

// repo names a repository on r, e.g. r.repo("staging/web").
func (r *testRegistry) repo(path string) string { return r.host + "/" + path }

// request is one answered request.
type request struct {
	method, path, query string
	status              int
}

// requestLog records every request and its status.
type requestLog struct {
	next http.Handler
	mu   sync.Mutex
	reqs []request
}

func (l *requestLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	l.next.ServeHTTP(sw, r)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, request{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, status: sw.status})
}

// mark returns a position to count from.
func (l *requestLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

// since returns the requests answered after mark.
func (l *requestLog) since(mark int) []request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]request(nil), l.reqs[mark:]...)
}

// blobWrites counts requests that write blobs: upload initiations (POST,
// including mount requests), chunks (PATCH) and commits (PUT).
func blobWrites(reqs []request) int {
	n := 0
	for _, r := range reqs {
		if strings.Contains(r.path, "/blobs/uploads") && r.method != http.MethodGet && r.method != http.MethodHead {
			n++
		}
	}
	return n
}

func count(reqs []request, method, pathPart string) int {
	n := 0
	for _, r := range reqs {
		if r.method == method && strings.Contains(r.path+"?"+r.query, pathPart) {
			n++
		}
	}
	return n
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// scopedBlobs is a ggcr BlobHandler that keeps blobs per repository, so a
// blob pushed to one repository is absent from the others until it is
// uploaded or mounted there.
type scopedBlobs struct {
	mu sync.Mutex
	m  map[string]map[string][]byte // repo → digest → bytes
}

// repoOf undoes a quirk of ggcr's registry, which names the repository of
// an upload commit (PUT /v2/<repo>/blobs/uploads/<id>) "<repo>/blobs".
func repoOf(repo string) string { return strings.TrimSuffix(repo, "/blobs") }

func (s *scopedBlobs) Get(_ context.Context, repo string, h v1.Hash) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[repoOf(repo)][h.String()]
	if !ok {
		return nil, ggcrregistry.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (s *scopedBlobs) Stat(_ context.Context, repo string, h v1.Hash) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[repoOf(repo)][h.String()]
	if !ok {
		return 0, ggcrregistry.ErrNotFound
	}
	return int64(len(b)), nil
}

func (s *scopedBlobs) Put(_ context.Context, repo string, h v1.Hash, rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo = repoOf(repo)
	if s.m[repo] == nil {
		s.m[repo] = map[string][]byte{}
	}
	s.m[repo][h.String()] = b
	return nil
}

// mount links digest from repository from into repository to, as a
// registry does for POST /v2/<to>/blobs/uploads/?mount=<digest>&from=<from>.
func (s *scopedBlobs) mount(digest, from, to string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[from][digest]
	if !ok {
		return false
	}
	if s.m[to] == nil {
		s.m[to] = map[string][]byte{}
	}
	s.m[to][digest] = b
	return true
}

// mounter answers cross-repository mount requests (distribution spec
// "Mounting a blob from another repository") in front of ggcr's registry.
type mounter struct {
	next  http.Handler
	blobs *scopedBlobs
}

func (m *mounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.Method == http.MethodPost && q.Get("mount") != "" && q.Get("from") != "" {
		to := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v2/"), "/blobs/uploads/")
		if m.blobs.mount(q.Get("mount"), q.Get("from"), to) {
			w.Header().Set("Location", "/v2/"+to+"/blobs/"+q.Get("mount"))
			w.Header().Set("Docker-Content-Digest", q.Get("mount"))
			w.WriteHeader(http.StatusCreated)
			return
		}
	}
	m.next.ServeHTTP(w, r)
}

// failFirst answers 500 to the first n requests that match, then lets
// requests through: a registry having a bad moment.
func failFirst(n int, match func(*http.Request) bool) func(http.Handler) http.Handler {
	var mu sync.Mutex
	left := n
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			fail := left > 0 && match(r)
			if fail {
				left--
			}
			mu.Unlock()
			if fail {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, `{"errors":[{"code":"UNKNOWN","message":"injected failure"}]}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// basicAuth requires user:pass on every request, answering 401 with a
// Basic challenge otherwise.
func basicAuth(user, pass string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// staticKeychain answers every registry with one authenticator.
type staticKeychain struct{ auth authn.Authenticator }

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.auth, nil }

// anonymous is a keychain with no credentials, so tests never read the
// developer's ~/.docker/config.json.
var anonymous = staticKeychain{auth: authn.Anonymous}

// newAdapter returns an adapter with tiny retry delays and no credentials
// for tests.
func newAdapter(t testing.TB, opts Options) *Adapter {
	t.Helper()
	return newAdapterWithKeychain(t, opts, anonymous)
}

// newAdapterWithKeychain is newAdapter finding credentials in kc, as the
// Docker config would give them.
func newAdapterWithKeychain(t testing.TB, opts Options, kc authn.Keychain) *Adapter {
	t.Helper()
	if opts.Retry == (RetryPolicy{}) {
		opts.Retry = RetryPolicy{Attempts: 5, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	}
	a, err := New(opts)
	require.NoError(t, err)
	a.keychain = kc
	return a
}

// randomLayer is a layer of n random bytes; random bytes do not compress,
// so sizes are what they say.
func randomLayer(t testing.TB, n int) v1.Layer {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return static.NewLayer(b, types.OCILayer)
}

// ociImage builds an OCI image for platform ("linux/arm64/v8") from layers,
// created at created.
func ociImage(t testing.TB, platform string, created time.Time, layers ...v1.Layer) v1.Image {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(img, layers...)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	cf = cf.DeepCopy()
	p, err := v1.ParsePlatform(platform)
	require.NoError(t, err)
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: created}
	img, err = mutate.ConfigFile(img, cf)
	require.NoError(t, err)
	return img
}

// index builds a multi-platform OCI index over images, with each child's
// platform in its descriptor, as docker buildx writes them.
func index(t testing.TB, imgs ...v1.Image) v1.ImageIndex {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		p := cf.Platform()
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	return idx
}

// push writes t to ref ("host/repo:tag" or "host/repo@digest").
func push(t testing.TB, ref string, w remote.Taggable) {
	t.Helper()
	r, err := name.ParseReference(ref)
	require.NoError(t, err)
	require.NoError(t, remote.Push(r, w, remote.WithContext(t.Context())))
}

func digestOf(t testing.TB, w interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := w.Digest()
	require.NoError(t, err)
	return h
}

func wdigest(t testing.TB, h v1.Hash) image.Digest {
	t.Helper()
	d, err := image.ParseDigest(h.String())
	require.NoError(t, err)
	return d
}

// descriptor is the descriptor a referrer's subject field holds.
func descriptor(t testing.TB, w interface {
	Digest() (v1.Hash, error)
	Size() (int64, error)
	MediaType() (types.MediaType, error)
}) v1.Descriptor {
	t.Helper()
	h, err := w.Digest()
	require.NoError(t, err)
	n, err := w.Size()
	require.NoError(t, err)
	mt, err := w.MediaType()
	require.NoError(t, err)
	return v1.Descriptor{MediaType: mt, Digest: h, Size: n}
}

// cosignSignature is a manifest shaped like cosign's .sig images: one
// simple-signing payload layer carrying the signature in an annotation.
func cosignSignature(t testing.TB, subject v1.Hash) v1.Image {
	t.Helper()
	payload := []byte(`{"critical":{"image":{"docker-manifest-digest":"` + subject.String() + `"},"type":"cosign container image signature"}}`)
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{
		Layer:       static.NewLayer(payload, "application/vnd.dev.cosign.simplesigning.v1+json"),
		Annotations: map[string]string{"dev.cosignproject.cosign/signature": "MEUCIQ…test"},
	})
	require.NoError(t, err)
	return img
}

// intotoAttestation is an OCI 1.1 referrer: a DSSE envelope whose subject
// is the attested image and whose artifact type is in-toto. ggcr's registry
// reports the config media type as the artifact type in referrer listings,
// so that is where the type goes.
func intotoAttestation(t testing.TB, subject v1.Descriptor) v1.Image {
	t.Helper()
	envelope := []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}`)
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, "application/vnd.in-toto+json")
	img, err := mutate.AppendLayers(img, static.NewLayer(envelope, "application/vnd.dsse.envelope.v1+json"))
	require.NoError(t, err)
	return mutate.Subject(img, subject).(v1.Image)
}

// manifestIn reports whether repo ("host/path") serves digest h.
func manifestIn(t testing.TB, repo string, h v1.Hash) bool {
	t.Helper()
	r, err := name.NewRepository(repo)
	require.NoError(t, err)
	_, err = remote.Head(r.Digest(h.String()), remote.WithContext(t.Context()))
	return err == nil
}
