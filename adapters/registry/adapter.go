// Package registry implements workflow.Registry over go-containerregistry
// (ggcr): it resolves references to digests and promotes a digest, with its
// signatures, attestations and SBOMs, from one repository to another.
//
// Promotion copies manifests byte for byte, so the digest in the target is
// the digest that was reviewed upstream. Blobs the target already holds are
// not sent again; between two repositories of one registry they are mounted
// rather than uploaded. Referrers are carried along in both schemes in use:
// the OCI 1.1 referrers API (manifests whose subject is the digest) and
// cosign's tag scheme (sha256-<hex>.sig, .att and .sbom in the same
// repository).
//
// No ggcr type leaves the package: references become strings and
// image.Digest, registry failures become errors that wrap the workflow
// sentinels (ErrUsage, ErrNotFound, ErrDigestMismatch) and, when retrying
// cannot help, *workflow.TerminalError.
package registry

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/secret"
)

var _ workflow.Registry = (*Adapter)(nil)

// Defaults for Options left at their zero value.
const (
	DefaultAttempts  = 5
	DefaultBaseDelay = 200 * time.Millisecond
	DefaultMaxDelay  = 5 * time.Second
	// DefaultJobs is how many blobs are copied at once; crane uses the same.
	DefaultJobs = 4
)

// Credentials says where the adapter finds registry credentials.
type Credentials int

const (
	// DockerConfig reads ~/.docker/config.json (or $DOCKER_CONFIG) and its
	// credential helpers, the place `docker login` writes to.
	DockerConfig Credentials = iota
	// Anonymous sends no credentials: the demo's sandbox registry needs
	// none, and a captain's Docker credentials have no business there.
	Anonymous
)

func (c Credentials) keychain() authn.Keychain {
	if c == Anonymous {
		return authn.NewMultiKeychain()
	}
	return authn.DefaultKeychain
}

// Options configure an Adapter. The zero value talks HTTPS to registries,
// with Docker's credentials and the default retry policy.
type Options struct {
	// Secrets learns every credential the adapter uses (password, token),
	// so none shows in what relcap prints or records; nil learns nothing.
	Secrets *secret.Set
	// Credentials says where registry credentials come from: the Docker
	// config by default.
	Credentials Credentials
	// Insecure allows plain HTTP to every registry. Without it, ggcr
	// already falls back to plain HTTP for loopback (127.0.0.1, localhost,
	// ::1, *.localhost) and private RFC 1918 addresses, after trying HTTPS.
	Insecure bool
	// InsecureRegistries allows plain HTTP to these registries only, named
	// as in references: "host" or "host:port". TLS certificates are still
	// verified wherever HTTPS is used.
	InsecureRegistries []string
	// Transport carries every request; nil means remote.DefaultTransport.
	// Authentication and retries are layered on top of it.
	Transport http.RoundTripper
	// Retry says how transient failures (5xx, 429, timeouts, resets) are
	// retried.
	Retry RetryPolicy
	// Jobs bounds how many blobs are copied at once; 0 means DefaultJobs.
	Jobs int
	// Progress, when set, receives promotion progress. Calls are
	// serialized, so it needs no locking of its own, but it runs on the
	// copying goroutines and must return quickly.
	Progress func(Progress)
}

// RetryPolicy is exponential backoff with jitter: attempt n waits about
// BaseDelay·2^(n-1), at most MaxDelay, and never past the context's end.
// Errors that retrying cannot fix (401, 403, 404, digest mismatch) are
// never retried.
type RetryPolicy struct {
	// Attempts is the total number of tries, including the first; 0 means
	// DefaultAttempts and 1 means no retry.
	Attempts int
	// BaseDelay is the wait after the first failure; 0 means
	// DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps any one wait; 0 means DefaultMaxDelay.
	MaxDelay time.Duration
}

// Phases a promotion reports in Progress.Phase, in order.
const (
	PhaseInspect   = "inspect"   // reading the source and the target
	PhaseBlobs     = "blobs"     // copying layers and configs; Done/Total in bytes
	PhaseManifests = "manifests" // writing manifests, children before indexes
	PhaseReferrers = "referrers" // copying signatures, attestations, SBOMs
	PhaseVerify    = "verify"    // reading the digest back from the target
	PhaseDone      = "done"
)

// Progress is how far a promotion has got. Done and Total count the bytes
// of the promoted artifact's blobs (layers and configs); blobs the target
// already held, or that were mounted, count as done without being sent.
// Digest and To tell concurrent promotions apart.
type Progress struct {
	Digest image.Digest
	To     string
	Phase  string
	Done   int64
	Total  int64
}

// Adapter is a workflow.Registry over OCI distribution registries. It holds
// no connection state between calls beyond the transport's connection pool,
// and is safe for concurrent use.
type Adapter struct {
	keychain    authn.Keychain
	insecureAll bool
	insecure    map[string]bool
	transport   http.RoundTripper
	policy      RetryPolicy
	jobs        int
	progress    func(Progress)
}

// New validates opts and returns an Adapter. Invalid options wrap
// fault.ErrUsage.
func New(opts Options) (*Adapter, error) {
	a := &Adapter{
		keychain:    opts.Credentials.keychain(),
		insecureAll: opts.Insecure,
		insecure:    map[string]bool{},
		transport:   opts.Transport,
		policy:      opts.Retry,
		jobs:        opts.Jobs,
		progress:    opts.Progress,
	}
	if a.keychain == nil {
		a.keychain = authn.DefaultKeychain
	}
	if opts.Secrets != nil {
		a.keychain = learningKeychain{Keychain: a.keychain, secrets: opts.Secrets}
	}
	if a.transport == nil {
		a.transport = remote.DefaultTransport
	}
	switch {
	case a.policy.Attempts < 0:
		return nil, fmt.Errorf("%w: registry retry attempts %d: want 0 (default) or more", fault.ErrUsage, a.policy.Attempts)
	case a.policy.BaseDelay < 0 || a.policy.MaxDelay < 0:
		return nil, fmt.Errorf("%w: registry retry delays must not be negative", fault.ErrUsage)
	case a.jobs < 0:
		return nil, fmt.Errorf("%w: registry jobs %d: want 0 (default) or more", fault.ErrUsage, a.jobs)
	}
	if a.policy.Attempts == 0 {
		a.policy.Attempts = DefaultAttempts
	}
	if a.policy.BaseDelay == 0 {
		a.policy.BaseDelay = DefaultBaseDelay
	}
	if a.policy.MaxDelay == 0 {
		a.policy.MaxDelay = DefaultMaxDelay
	}
	if a.policy.MaxDelay < a.policy.BaseDelay {
		a.policy.MaxDelay = a.policy.BaseDelay
	}
	if a.jobs == 0 {
		a.jobs = DefaultJobs
	}
	for _, h := range opts.InsecureRegistries {
		if strings.Contains(h, "://") || strings.Contains(h, "/") {
			return nil, fmt.Errorf("%w: insecure registry %q: want host or host:port, without scheme or path", fault.ErrUsage, h)
		}
		if _, err := name.NewRegistry(h, name.StrictValidation); err != nil {
			return nil, fmt.Errorf("%w: insecure registry %q: %w", fault.ErrUsage, h, err)
		}
		a.insecure[h] = true
	}
	return a, nil
}

// remoteOptions configures ggcr for one operation. ggcr's own retries are
// switched off: its backoff sleeps ignore the context and it retries at two
// levels (transport and operation), so the adapter retries each unit of work
// itself (see retry.go).
func (a *Adapter) remoteOptions(rt http.RoundTripper) []remote.Option {
	return []remote.Option{
		remote.WithAuthFromKeychain(a.keychain),
		remote.WithTransport(rt),
		remote.WithRetryBackoff(remote.Backoff{Steps: 1}),
		remote.WithRetryPredicate(func(error) bool { return false }),
		remote.WithRetryStatusCodes(),
		remote.WithJobs(a.jobs),
		remote.WithUserAgent("relcap"),
	}
}

// nameOptions are the parse options for names on registry host: strict (an
// explicit registry and tag, no Docker Hub defaults), and plain HTTP where
// allowed.
func (a *Adapter) nameOptions(host string) []name.Option {
	opts := []name.Option{name.StrictValidation}
	if a.insecureAll || a.insecure[host] {
		opts = append(opts, name.Insecure)
	}
	return opts
}

// parseReference parses a tag or digest reference. Errors wrap
// fault.ErrUsage and say what is wrong, which ggcr's ParseReference does
// not ("could not parse reference").
func (a *Adapter) parseReference(s string) (name.Reference, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("reference %q: %w: %s", s, fault.ErrUsage, fmt.Sprintf(format, args...))
	}
	if s == "" {
		return nil, bad("empty; want registry/repository:tag or registry/repository@sha256:<digest>")
	}
	if strings.Contains(s, "://") {
		return nil, bad("must not contain a URL scheme; write registry.example.com/team/web:1.2.3")
	}
	base, digest, byDigest := strings.Cut(s, "@")
	if byDigest {
		if _, err := image.ParseDigest(digest); err != nil {
			return nil, fmt.Errorf("reference %q: %w", s, err)
		}
	}
	host, repo := splitHost(base)
	repo, tag, hasTag := cutTag(repo)
	if repo != strings.ToLower(repo) {
		return nil, bad("repository %q must be lowercase", repo)
	}
	if host == "" {
		return nil, bad("no registry host; write it out, e.g. registry.example.com/%s", strings.TrimPrefix(s, "/"))
	}
	if hasTag && tag == "" {
		return nil, bad("empty tag after ':'")
	}
	if !hasTag && !byDigest {
		return nil, bad("no tag or digest; add :<tag> or @sha256:<digest>")
	}
	opts := a.nameOptions(host)
	var ref name.Reference
	var err error
	if byDigest {
		ref, err = name.NewDigest(s, opts...)
	} else {
		ref, err = name.NewTag(s, opts...)
	}
	if err != nil {
		return nil, bad("%v", err)
	}
	return ref, nil
}

// parseRepository parses a repository name without tag or digest, as in
// image.PromoteRequest.From and To.
func (a *Adapter) parseRepository(what, s string) (name.Repository, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s repository %q: %w: %s", what, s, fault.ErrUsage, fmt.Sprintf(format, args...))
	}
	host, repo := splitHost(s)
	if _, _, hasTag := cutTag(repo); hasTag || strings.Contains(s, "@") {
		return name.Repository{}, bad("want a repository without tag or digest, e.g. registry.example.com/staging/web")
	}
	if repo != strings.ToLower(repo) {
		return name.Repository{}, bad("repository %q must be lowercase", repo)
	}
	if host == "" {
		return name.Repository{}, bad("no registry host; write it out, e.g. registry.example.com/%s", s)
	}
	r, err := name.NewRepository(s, a.nameOptions(host)...)
	if err != nil {
		return name.Repository{}, bad("%v", err)
	}
	return r, nil
}

// splitHost splits "host/path" the way the distribution reference grammar
// does: the first element is a registry host only if it looks like one.
func splitHost(s string) (host, rest string) {
	first, after, ok := strings.Cut(s, "/")
	if ok && (first == "localhost" || strings.ContainsAny(first, ".:") || strings.HasPrefix(first, "[")) {
		return first, after
	}
	return "", s
}

// cutTag splits "path:tag"; a ':' before the last '/' is not a tag.
func cutTag(repo string) (path, tag string, ok bool) {
	i := strings.LastIndex(repo, ":")
	if i < 0 || strings.Contains(repo[i:], "/") {
		return repo, "", false
	}
	return repo[:i], repo[i+1:], true
}

// learningKeychain hands out the keychain's authenticators, teaching
// secrets each credential as it is used.
type learningKeychain struct {
	authn.Keychain
	secrets *secret.Set
}

// Resolve returns r's authenticator, wrapped to learn what it yields.
func (k learningKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	auth, err := k.Keychain.Resolve(r)
	if err != nil || auth == authn.Anonymous {
		return auth, err
	}
	return learningAuth{inner: auth, secrets: k.secrets}, nil
}

type learningAuth struct {
	inner   authn.Authenticator
	secrets *secret.Set
}

// Authorization returns the credential and adds its secret parts.
func (a learningAuth) Authorization() (*authn.AuthConfig, error) {
	return a.learn(a.inner.Authorization())
}

// AuthorizationContext is Authorization for authenticators that take a
// context (credential helpers).
func (a learningAuth) AuthorizationContext(ctx context.Context) (*authn.AuthConfig, error) {
	return a.learn(authn.Authorization(ctx, a.inner))
}

func (a learningAuth) learn(cfg *authn.AuthConfig, err error) (*authn.AuthConfig, error) {
	if err == nil && cfg != nil {
		a.secrets.Add(cfg.Password, cfg.Auth, cfg.IdentityToken, cfg.RegistryToken)
		if raw, derr := base64.StdEncoding.DecodeString(cfg.Auth); derr == nil {
			if _, pw, ok := strings.Cut(string(raw), ":"); ok {
				a.secrets.Add(pw) // "auth" is base64 of user:password
			}
		}
	}
	return cfg, err
}
