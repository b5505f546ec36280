package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/relcap/relcap/workflow/image"
)

// session is the ggcr state of one Resolve or Promote: a Puller and a Pusher
// that each ping a registry and exchange a token once per repository and
// reuse them for every later request of the operation.
type session struct {
	a      *Adapter
	puller *remote.Puller
	pusher *remote.Pusher
	tally  *blobTally // nil when nothing is written
}

func (a *Adapter) newSession(tally *blobTally) (*session, error) {
	rt := a.transport
	if tally != nil {
		rt = &observer{inner: rt, tally: tally}
	}
	opts := a.remoteOptions(rt)
	puller, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	pusher, err := remote.NewPusher(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return &session{a: a, puller: puller, pusher: pusher, tally: tally}, nil
}

// digestRef is a reference to repo@h for reading. For sha256 it is a
// Tag-typed reference whose identifier is the digest: the request URL is the
// same (/v2/<repo>/manifests/sha256:…), but ggcr then leaves the digest
// comparison to us, so a registry serving other bytes is reported as
// fault.ErrDigestMismatch instead of ggcr's untyped error.
func digestRef(repo name.Repository, h v1.Hash) name.Reference {
	if h.Algorithm == "sha256" {
		return repo.Tag(h.String())
	}
	return repo.Digest(h.String())
}

// getManifest fetches the manifest repo@h and checks that its bytes hash to
// h.
func (s *session) getManifest(ctx context.Context, repo name.Repository, h v1.Hash) (*remote.Descriptor, error) {
	var desc *remote.Descriptor
	err := s.a.do(ctx, repo.RegistryStr(), func(ctx context.Context) error {
		var err error
		desc, err = s.puller.Get(ctx, digestRef(repo, h))
		return err
	})
	if err != nil {
		return nil, err
	}
	if desc.Digest != h {
		return nil, mismatch("%s serves a manifest for %s whose bytes hash to %s", repo, h, desc.Digest)
	}
	return desc, nil
}

// head asks for ref's digest without its body; found is false on 404.
func (s *session) head(ctx context.Context, ref name.Reference) (got v1.Hash, found bool, err error) {
	err = s.a.do(ctx, ref.Context().RegistryStr(), func(ctx context.Context) error {
		d, err := s.puller.Head(ctx, ref)
		if err != nil {
			return err
		}
		got = d.Digest
		return nil
	})
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
		return v1.Hash{}, false, nil
	}
	if err != nil {
		return v1.Hash{}, false, err
	}
	return got, true, nil
}

// blobOutcome is what became of one blob in the target; a later, stronger
// outcome wins (a blob found absent, then uploaded, was uploaded).
type blobOutcome int

const (
	blobPresent blobOutcome = iota + 1
	blobMounted
	blobUploaded
)

// blobTally counts what the target registry answered for each blob. ggcr's
// pusher decides per blob between "already there" (HEAD 200), "mounted"
// (POST ?mount= answered 201) and "uploaded" (PUT ?digest= answered 201)
// without telling its caller; observing the protocol is the one reliable
// place to learn which happened.
type blobTally struct {
	host   string // target registry as it appears in URLs
	prefix string // "/v2/<target repository>/blobs/"

	mu   sync.Mutex
	seen map[string]blobOutcome
}

func newBlobTally(target name.Repository) *blobTally {
	return &blobTally{
		host:   target.RegistryStr(),
		prefix: "/v2/" + target.RepositoryStr() + "/blobs/",
		seen:   map[string]blobOutcome{},
	}
}

func (t *blobTally) observe(req *http.Request, status int) {
	u := req.URL
	var digest string
	var outcome blobOutcome
	switch {
	case req.Method == http.MethodHead && status == http.StatusOK && u.Host == t.host &&
		strings.HasPrefix(u.Path, t.prefix) && !strings.Contains(u.Path[len(t.prefix):], "/"):
		digest, outcome = u.Path[len(t.prefix):], blobPresent
	case req.Method == http.MethodPost && status == http.StatusCreated && u.Host == t.host &&
		strings.HasPrefix(u.Path, t.prefix+"uploads") && u.Query().Get("mount") != "":
		digest, outcome = u.Query().Get("mount"), blobMounted
	case (req.Method == http.MethodPut || req.Method == http.MethodPost) && status == http.StatusCreated &&
		u.Query().Get("digest") != "":
		// The upload location may be on another host (pre-signed storage
		// URLs), so only the protocol's digest parameter identifies it.
		digest, outcome = u.Query().Get("digest"), blobUploaded
	default:
		return
	}
	t.record(digest, outcome)
}

// record notes outcome for digest unless a stronger one is known.
func (t *blobTally) record(digest string, outcome blobOutcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if outcome > t.seen[digest] {
		t.seen[digest] = outcome
	}
}

func (t *blobTally) counts() (present, mounted, uploaded int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, o := range t.seen {
		switch o {
		case blobPresent:
			present++
		case blobMounted:
			mounted++
		case blobUploaded:
			uploaded++
		}
	}
	return present, mounted, uploaded
}

// observer feeds every response to the tally. It sits innermost, under
// ggcr's authentication, so it sees the requests as sent.
type observer struct {
	inner http.RoundTripper
	tally *blobTally
}

func (o *observer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := o.inner.RoundTrip(req)
	if err == nil {
		o.tally.observe(req, resp.StatusCode)
	}
	return resp, err
}

// meter reports Progress, serialized and throttled to one report per MiB
// of blob bytes.
type meter struct {
	fn func(Progress)

	mu   sync.Mutex
	p    Progress
	last int64
}

const meterStep = 1 << 20

func (a *Adapter) newMeter(d image.Digest, to string) *meter {
	if a.progress == nil {
		return nil
	}
	return &meter{fn: a.progress, p: Progress{Digest: d, To: to}}
}

func (m *meter) phase(phase string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.p.Phase = phase
	m.last = m.p.Done
	m.fn(m.p)
}

func (m *meter) total(n int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.p.Total = n
}

func (m *meter) add(n int64) {
	if m == nil || n == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.p.Done += n
	if d := m.p.Done - m.last; d >= meterStep || d <= -meterStep || m.p.Done == m.p.Total {
		m.last = m.p.Done
		m.fn(m.p)
	}
}

// blobLayer is a source blob as the pusher sees it. Size and media type come
// from the manifest that names the blob, so the pusher does not HEAD the
// source for them; Compressed counts bytes for progress, restarting the
// count on every attempt.
type blobLayer struct {
	v1.Layer // the source blob, read lazily
	desc     v1.Descriptor
	meter    *meter
	sent     atomic.Int64
}

func (l *blobLayer) Digest() (v1.Hash, error)            { return l.desc.Digest, nil }
func (l *blobLayer) Size() (int64, error)                { return l.desc.Size, nil }
func (l *blobLayer) MediaType() (types.MediaType, error) { return l.desc.MediaType, nil }

func (l *blobLayer) Compressed() (io.ReadCloser, error) {
	rc, err := l.Layer.Compressed()
	if err != nil {
		return nil, err
	}
	l.meter.add(-l.sent.Swap(0))
	return &countingReader{ReadCloser: rc, l: l}, nil
}

// done accounts the whole blob, however it reached the target.
func (l *blobLayer) done() { l.meter.add(l.desc.Size - l.sent.Swap(l.desc.Size)) }

type countingReader struct {
	io.ReadCloser
	l *blobLayer
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		r.l.sent.Add(int64(n))
		r.l.meter.add(int64(n))
	}
	return n, err
}
