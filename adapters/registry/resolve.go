package registry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
)

// Resolve turns a tag or digest reference into one digest. The reference is
// read once (one GET); everything else (child manifests, configs, referrers)
// is read by digest, so a tag moved meanwhile cannot mix two artifacts into
// one answer.
//
// A malformed reference wraps fault.ErrUsage; a tag, digest or repository
// that does not exist wraps fault.ErrNotFound. Both, and refused
// credentials, come back as *workflow.TerminalError.
func (a *Adapter) Resolve(ctx context.Context, ref string) (image.Artifact, error) {
	r, err := a.parseReference(ref)
	if err != nil {
		return image.Artifact{}, &workflow.TerminalError{Err: err}
	}
	op := "resolve " + ref
	repo := r.Context()
	host := repo.RegistryStr()
	s, err := a.newSession(nil)
	if err != nil {
		return image.Artifact{}, fmt.Errorf("%s: %w", op, err)
	}
	var root *remote.Descriptor
	if d, ok := r.(name.Digest); ok {
		h, err := v1.NewHash(d.DigestStr())
		if err != nil {
			return image.Artifact{}, &workflow.TerminalError{Err: fmt.Errorf("%s: %w: %w", op, fault.ErrUsage, err)}
		}
		root, err = s.getManifest(ctx, repo, h)
		if err != nil {
			return image.Artifact{}, explain(op, err, missing{
				manifest: "the digest is not in the repository",
				repo:     "the repository does not exist",
			})
		}
	} else {
		err = a.do(ctx, host, func(ctx context.Context) error {
			var err error
			root, err = s.puller.Get(ctx, r)
			return err
		})
		if err != nil {
			return image.Artifact{}, explain(op, err, missing{
				manifest: "the tag is not in the repository",
				repo:     "the repository does not exist",
			})
		}
	}
	art, _, err := s.describe(ctx, repo, root)
	if err != nil {
		return image.Artifact{}, explain(op, err, missing{})
	}
	art.Reference = ref
	return art, nil
}

// node is one manifest of an artifact: an image (or artifact) manifest with
// its blobs, or an index with its children.
type node struct {
	desc     *remote.Descriptor
	platform *v1.Platform    // as the parent index describes the child
	config   *v1.Descriptor  // image config; nil for an index
	blobs    []v1.Descriptor // config and layers, or an index's non-manifest entries
	children []*node
}

// tree is an artifact as stored: its manifests and its distinct blobs.
type tree struct {
	root      *node
	manifests []*node         // distinct, children before parents, root last
	blobs     []v1.Descriptor // distinct, in manifest order
}

// size is the artifact's stored size: manifests, configs and layers, each
// distinct blob once.
func (t *tree) size() int64 {
	var n int64
	for _, m := range t.manifests {
		n += m.desc.Size
	}
	for _, b := range t.blobs {
		n += b.Size
	}
	return n
}

// copyBytes is what a copy may have to send: the distributable blobs.
func (t *tree) copyBytes() int64 {
	var n int64
	for _, b := range t.blobs {
		if b.MediaType.IsDistributable() {
			n += b.Size
		}
	}
	return n
}

// collect reads every manifest below root, by digest, from repo.
func (s *session) collect(ctx context.Context, repo name.Repository, root *remote.Descriptor) (*tree, error) {
	n, err := s.expand(ctx, repo, root, nil, 0)
	if err != nil {
		return nil, err
	}
	t := &tree{root: n}
	seenM := map[v1.Hash]bool{}
	seenB := map[v1.Hash]bool{}
	var walk func(*node)
	walk = func(n *node) {
		for _, c := range n.children {
			walk(c)
		}
		if !seenM[n.desc.Digest] {
			seenM[n.desc.Digest] = true
			t.manifests = append(t.manifests, n)
		}
		for _, b := range n.blobs {
			if !seenB[b.Digest] {
				seenB[b.Digest] = true
				t.blobs = append(t.blobs, b)
			}
		}
	}
	walk(n)
	return t, nil
}

// maxDepth bounds index nesting; real artifacts nest one level, and a
// registry serving a cycle must not hang a promotion.
const maxDepth = 8

func (s *session) expand(ctx context.Context, repo name.Repository, desc *remote.Descriptor, platform *v1.Platform, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%s: indexes nested deeper than %d levels", desc.Digest, maxDepth)
	}
	n := &node{desc: desc, platform: platform}
	mt := desc.MediaType
	switch {
	case mt.IsSchema1():
		return nil, fmt.Errorf("%w: %s is a Docker schema 1 manifest, which registries are retiring and relcap does not promote; rebuild and push the image",
			fault.ErrUsage, desc.Digest)
	case mt.IsIndex():
		im, err := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
		if err != nil {
			return nil, fmt.Errorf("index %s: %w", desc.Digest, err)
		}
		var kids []v1.Descriptor
		for _, c := range im.Manifests {
			if c.MediaType.IsIndex() || c.MediaType.IsImage() || c.MediaType.IsSchema1() {
				kids = append(kids, c)
			} else {
				n.blobs = append(n.blobs, c)
			}
		}
		n.children = make([]*node, len(kids))
		err = parallel(ctx, s.a.jobs, len(kids), func(ctx context.Context, i int) error {
			c := kids[i]
			cd, err := s.getManifest(ctx, repo, c.Digest)
			if err != nil {
				return err
			}
			if cd.MediaType == "" {
				cd.MediaType = c.MediaType
			}
			n.children[i], err = s.expand(ctx, repo, cd, c.Platform, depth+1)
			return err
		})
		if err != nil {
			return nil, err
		}
	default:
		// Images, and artifacts that reuse the image manifest shape
		// (signatures, attestations, SBOMs, charts).
		m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
		if err != nil {
			return nil, fmt.Errorf("manifest %s (%s): %w", desc.Digest, mt, err)
		}
		if m.Config.Digest.Hex != "" {
			cfg := m.Config
			n.config = &cfg
			n.blobs = append(n.blobs, cfg)
		}
		n.blobs = append(n.blobs, m.Layers...)
	}
	return n, nil
}

// describe reads what a reviewer needs to know about the artifact at root in
// repo: size, platforms, creation time and referrers.
func (s *session) describe(ctx context.Context, repo name.Repository, root *remote.Descriptor) (image.Artifact, *tree, error) {
	d, err := image.ParseDigest(root.Digest.String())
	if err != nil {
		return image.Artifact{}, nil, err
	}
	art := image.Artifact{
		Repository: repo.Name(),
		Digest:     d,
		MediaType:  string(root.MediaType),
	}
	t, err := s.collect(ctx, repo, root)
	if err != nil {
		return image.Artifact{}, nil, err
	}
	art.Size = t.size()

	var (
		wg             sync.WaitGroup
		cfgErr, refErr error
		platforms      []string
		created        time.Time
		refs           []referrer
	)
	wg.Go(func() { platforms, created, cfgErr = s.platforms(ctx, repo, t.root) })
	wg.Go(func() { refs, refErr = s.listReferrers(ctx, repo, root.Digest) })
	wg.Wait()
	if cfgErr != nil {
		return image.Artifact{}, nil, cfgErr
	}
	if refErr != nil {
		return image.Artifact{}, nil, fmt.Errorf("list referrers: %w", refErr)
	}
	art.Platforms, art.Created = platforms, created
	for _, r := range refs {
		art.Referrers = append(art.Referrers, r.Referrer)
	}
	return art, t, nil
}

// platforms lists the platforms of the images under n ("linux/arm64/v8"),
// skipping the "unknown/unknown" entries build tools use for attestation
// manifests, and the newest creation time among their configs.
func (s *session) platforms(ctx context.Context, repo name.Repository, n *node) ([]string, time.Time, error) {
	type image struct {
		n        *node
		platform string
		created  time.Time
	}
	var images []*image
	var walk func(*node)
	walk = func(n *node) {
		if n.config != nil {
			p := ""
			if n.platform != nil {
				p = n.platform.String()
			}
			if !strings.HasPrefix(p, "unknown") {
				images = append(images, &image{n: n, platform: p})
			}
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(n)
	err := parallel(ctx, s.a.jobs, len(images), func(ctx context.Context, i int) error {
		im := images[i]
		if !im.n.config.MediaType.IsConfig() {
			return nil // an artifact: its config is not an image config
		}
		cfg, err := s.configFile(ctx, repo, *im.n.config)
		if err != nil {
			return fmt.Errorf("config of %s: %w", im.n.desc.Digest, err)
		}
		// Platform is nil for a config that names no OS or architecture
		// (images built by tools that leave them out).
		if p := cfg.Platform(); im.platform == "" && p != nil {
			im.platform = p.String()
		}
		im.created = cfg.Created.Time
		return nil
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	var out []string
	var newest time.Time
	for _, im := range images {
		if im.platform != "" && !slices.Contains(out, im.platform) {
			out = append(out, im.platform)
		}
		if im.created.After(newest) {
			newest = im.created
		}
	}
	return out, newest, nil
}

// maxConfig bounds the config blobs read; real ones are kilobytes.
const maxConfig = 8 << 20

// configFile reads an image config by digest. It does not go through
// remote.Descriptor.Image, whose reads use the context the manifest was
// fetched with, which may have ended.
func (s *session) configFile(ctx context.Context, repo name.Repository, desc v1.Descriptor) (*v1.ConfigFile, error) {
	if len(desc.Data) > 0 {
		return v1.ParseConfigFile(bytes.NewReader(desc.Data))
	}
	var cfg *v1.ConfigFile
	err := s.a.do(ctx, repo.RegistryStr(), func(ctx context.Context) error {
		l, err := s.puller.Layer(ctx, repo.Digest(desc.Digest.String()))
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, maxConfig))
		if err != nil {
			return err
		}
		cfg, err = v1.ParseConfigFile(bytes.NewReader(b))
		return err
	})
	return cfg, err
}

// Referrer schemes and kinds, as image.Referrer spells them.
const (
	schemeOCI    = "oci-referrers"
	schemeCosign = "cosign-tag"

	kindSignature   = "signature"
	kindAttestation = "attestation"
	kindSBOM        = "sbom"
)

// cosignSuffixes are the tags cosign attaches next to sha256-<hex>.
var cosignSuffixes = []struct{ suffix, kind string }{
	{".sig", kindSignature},
	{".att", kindAttestation},
	{".sbom", kindSBOM},
}

// referrer is a image.Referrer with what copying it needs.
type referrer struct {
	image.Referrer
	hash v1.Hash
	tag  string // the cosign tag; empty for an OCI referrer
}

// listReferrers finds what refers to repo@h: the OCI referrers API (ggcr
// falls back to the sha256-<hex> index tag where a registry lacks the API),
// and cosign's sha256-<hex>.sig/.att/.sbom tags, where a 404 means absent.
func (s *session) listReferrers(ctx context.Context, repo name.Repository, h v1.Hash) ([]referrer, error) {
	var oci []referrer
	cosign := make([]*referrer, len(cosignSuffixes))
	jobs := 1 + len(cosignSuffixes)
	err := parallel(ctx, jobs, jobs, func(ctx context.Context, i int) error {
		if i == 0 {
			var err error
			oci, err = s.ociReferrers(ctx, repo, h)
			return err
		}
		c := cosignSuffixes[i-1]
		tag := h.Algorithm + "-" + h.Hex + c.suffix
		if len(tag) > 128 { // longest tag the distribution spec allows
			return nil
		}
		got, found, err := s.head(ctx, repo.Tag(tag))
		if err != nil || !found {
			return err
		}
		d, err := image.ParseDigest(got.String())
		if err != nil {
			return err
		}
		cosign[i-1] = &referrer{Referrer: image.Referrer{Kind: c.kind, Digest: d, Scheme: schemeCosign}, hash: got, tag: tag}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, c := range cosign {
		if c != nil {
			oci = append(oci, *c)
		}
	}
	return oci, nil
}

func (s *session) ociReferrers(ctx context.Context, repo name.Repository, h v1.Hash) ([]referrer, error) {
	var im *v1.IndexManifest
	err := s.a.do(ctx, repo.RegistryStr(), func(ctx context.Context) error {
		idx, err := remote.Referrers(repo.Digest(h.String()), remote.Reuse(s.puller), remote.WithContext(ctx))
		if err != nil {
			return err
		}
		im, err = idx.IndexManifest()
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []referrer
	for _, desc := range im.Manifests {
		d, err := image.ParseDigest(desc.Digest.String())
		if err != nil {
			return nil, err
		}
		out = append(out, referrer{
			Referrer: image.Referrer{Kind: kindOf(desc), Digest: d, Scheme: schemeOCI},
			hash:     desc.Digest,
		})
	}
	return out, nil
}

// kindOf classifies an OCI referrer by its artifact type (the registry
// reports the config media type when the manifest has none).
func kindOf(desc v1.Descriptor) string {
	t := desc.ArtifactType
	lt := strings.ToLower(t)
	switch {
	case t == "application/vnd.dev.cosign.artifact.sig.v1+json",
		t == "application/vnd.dev.cosign.simplesigning.v1+json",
		t == "application/vnd.cncf.notary.signature":
		return kindSignature
	case strings.Contains(lt, "in-toto"), t == "application/vnd.dsse.envelope.v1+json",
		t == "application/vnd.dev.sigstore.bundle.v0.3+json":
		return kindAttestation
	case strings.Contains(lt, "spdx"), strings.Contains(lt, "cyclonedx"):
		return kindSBOM
	case t == "":
		return "artifact"
	default:
		return t
	}
}

// parallel runs f(0…n-1), at most jobs at a time. The first error cancels
// the context of the others and is returned; an ended parent context is
// returned as its error.
func parallel(ctx context.Context, jobs, n int, f func(context.Context, int) error) error {
	if n == 0 {
		return ctx.Err()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, max(jobs, 1))
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	fail := func(err error) {
		once.Do(func() {
			first = err
			cancel()
		})
	}
launch:
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break launch
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(ctx, i); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}
