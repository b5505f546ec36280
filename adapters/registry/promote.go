package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
)

// Promote copies req.Digest, with its referrers, from req.From to req.To
// (repositories without tag, e.g. "registry.example.com/staging/web").
//
//   - Manifests and indexes are copied byte for byte, children before the
//     index, so the digest is unchanged.
//   - Blobs the target holds are not sent again; within one registry they
//     are mounted from the source repository.
//   - OCI referrers (manifests whose subject is the digest) and cosign tags
//     (sha256-<hex>.sig, .att, .sbom) are copied too, one level deep. A
//     cosign tag in the target that differs from the source's is
//     overwritten: the source's signatures are the ones reviewed.
//   - When the target already holds the digest and every referrer, nothing
//     is written: promoting twice is cheap and changes nothing.
//
// On success the digest has been read back from the target and Target
// describes it as found there. A digest missing from the source wraps
// fault.ErrNotFound; bytes in the target that are not the promoted ones
// wrap fault.ErrDigestMismatch; those and refused credentials come back
// as *workflow.TerminalError. Transient failures are retried per request
// (see RetryPolicy).
//
// BlobsUploaded, BlobsMounted and BlobsPresent count distinct blobs of the
// artifact and of the referrers copied. When the target already holds the
// artifact's manifest, its blobs count as present without being asked for:
// the distribution spec lets a registry refuse a manifest whose blobs it
// lacks, and production registries do (ggcr's remote.Write and crane rely on
// the same rule).
func (a *Adapter) Promote(ctx context.Context, req image.PromoteRequest) (image.PromoteResult, error) {
	var res image.PromoteResult
	if req.Digest.IsZero() {
		return res, &workflow.TerminalError{Err: fmt.Errorf("promote: %w: no digest given", fault.ErrUsage)}
	}
	h, err := v1.NewHash(req.Digest.String())
	if err != nil {
		return res, &workflow.TerminalError{Err: fmt.Errorf("promote %s: %w: %w", req.Digest, fault.ErrUsage, err)}
	}
	from, err := a.parseRepository("source", req.From)
	if err != nil {
		return res, &workflow.TerminalError{Err: fmt.Errorf("promote %s: %w", req.Digest, err)}
	}
	to, err := a.parseRepository("target", req.To)
	if err != nil {
		return res, &workflow.TerminalError{Err: fmt.Errorf("promote %s: %w", req.Digest, err)}
	}
	c := &copier{
		a:     a,
		from:  from,
		to:    to,
		h:     h,
		d:     req.Digest,
		tally: newBlobTally(to),
		meter: a.newMeter(req.Digest, to.Name()),
	}
	c.s, err = a.newSession(c.tally)
	if err != nil {
		return res, fmt.Errorf("promote %s: %w", req.Digest, err)
	}
	return c.run(ctx)
}

// copier is one promotion.
type copier struct {
	a        *Adapter
	s        *session
	from, to name.Repository
	h        v1.Hash
	d        image.Digest
	tally    *blobTally
	meter    *meter
}

// fail explains err with the side of the copy it came from: a registry
// answer names the request it answers.
func (c *copier) fail(err error, m missing) error {
	op := fmt.Sprintf("copy %s from %s to %s", c.d, c.from, c.to)
	var terr *transport.Error
	if errors.As(err, &terr) && terr.Request != nil {
		u := terr.Request.URL
		switch {
		case u.Host == c.from.RegistryStr() && strings.HasPrefix(u.Path, "/v2/"+c.from.RepositoryStr()+"/") &&
			(terr.Request.Method == http.MethodGet || terr.Request.Method == http.MethodHead):
			op = fmt.Sprintf("copy %s from %s", c.d, c.from)
		case u.Host == c.to.RegistryStr() && strings.HasPrefix(u.Path, "/v2/"+c.to.RepositoryStr()+"/"):
			op = fmt.Sprintf("copy %s to %s", c.d, c.to)
		}
	}
	return explain(op, err, m)
}

func (c *copier) run(ctx context.Context) (image.PromoteResult, error) {
	var res image.PromoteResult
	c.meter.phase(PhaseInspect)

	// Does the target hold the digest already, and what refers to it
	// upstream? Independent questions, asked together.
	var (
		have bool
		refs []referrer
	)
	err := parallel(ctx, 2, 2, func(ctx context.Context, i int) error {
		if i == 0 {
			got, found, err := c.s.head(ctx, digestRef(c.to, c.h))
			have = found && got == c.h
			return err
		}
		var err error
		refs, err = c.s.listReferrers(ctx, c.from, c.h)
		if err != nil {
			return fmt.Errorf("list referrers: %w", err)
		}
		return nil
	})
	if err != nil {
		return res, c.fail(err, missing{})
	}

	if !have {
		if err := c.copyArtifact(ctx); err != nil {
			return res, err
		}
	}

	c.meter.phase(PhaseReferrers)
	copied, carried, err := c.copyReferrers(ctx, refs)
	if err != nil {
		return res, c.fail(err, missing{})
	}

	c.meter.phase(PhaseVerify)
	if !have {
		if err := c.verify(ctx); err != nil {
			return res, err
		}
	}
	root, err := c.s.getManifest(ctx, c.to, c.h)
	if err != nil {
		return res, c.fail(err, missing{})
	}
	target, t, err := c.s.describe(ctx, c.to, root)
	if err != nil {
		return res, c.fail(err, missing{})
	}
	target.Reference = c.to.Digest(c.h.String()).Name()
	// A registry may index referrers after accepting them; those just
	// confirmed by digest or tag are there even if the listing lags.
	for _, r := range carried {
		if !containsReferrer(target.Referrers, r.Referrer) {
			target.Referrers = append(target.Referrers, r.Referrer)
		}
	}

	if have {
		for _, b := range t.blobs {
			if b.MediaType.IsDistributable() {
				c.tally.record(b.Digest.String(), blobPresent)
			}
		}
	}
	p, m, u := c.tally.counts()
	c.meter.phase(PhaseDone)
	return image.PromoteResult{
		Target:          target,
		BlobsUploaded:   u,
		BlobsMounted:    m,
		BlobsPresent:    p,
		ReferrersCopied: copied,
	}, nil
}

// copyArtifact copies the digest's blobs and manifests.
func (c *copier) copyArtifact(ctx context.Context) error {
	root, err := c.s.getManifest(ctx, c.from, c.h)
	if err != nil {
		return c.fail(err, missing{
			manifest: "the digest is not in the source repository",
			repo:     "the source repository does not exist",
		})
	}
	t, err := c.s.collect(ctx, c.from, root)
	if err != nil {
		return c.fail(err, missing{})
	}
	c.meter.total(t.copyBytes())
	if err := c.copyTree(ctx, t, c.to.Digest(c.h.String()), c.meter); err != nil {
		return c.fail(err, missing{})
	}
	return nil
}

// verify reads the digest back from the target. The manifest was PUT by
// digest, but a registry that converts manifests (media types, schema
// versions) would store other bytes under another digest.
func (c *copier) verify(ctx context.Context) error {
	got, found, err := c.s.head(ctx, digestRef(c.to, c.h))
	switch {
	case err != nil:
		return c.fail(err, missing{})
	case !found:
		return c.fail(mismatch("the target does not serve %s after the copy; the registry may have rewritten the manifest", c.h), missing{})
	case got != c.h:
		return c.fail(mismatch("the target answers %s for %s after the copy; the registry rewrote the manifest", got, c.h), missing{})
	}
	return nil
}

// copyTree copies t's blobs, then its manifests (children before the index
// that lists them, because registries check that), the root under ref.
func (c *copier) copyTree(ctx context.Context, t *tree, ref name.Reference, m *meter) error {
	m.phase(PhaseBlobs)
	err := parallel(ctx, c.a.jobs, len(t.blobs), func(ctx context.Context, i int) error {
		return c.copyBlob(ctx, t.blobs[i], m)
	})
	if err != nil {
		return err
	}
	m.phase(PhaseManifests)
	return c.putManifests(ctx, t.root, ref)
}

func (c *copier) putManifests(ctx context.Context, n *node, ref name.Reference) error {
	err := parallel(ctx, c.a.jobs, len(n.children), func(ctx context.Context, i int) error {
		child := n.children[i]
		return c.putManifests(ctx, child, c.to.Digest(child.desc.Digest.String()))
	})
	if err != nil {
		return err
	}
	// remote.Put sends the Descriptor's raw bytes with its media type, so
	// the target computes the same digest.
	return c.a.do(ctx, c.to.RegistryStr(), func(ctx context.Context) error {
		return c.s.pusher.Put(ctx, ref, n.desc)
	})
}

// copyBlob sends one blob to the target unless it is there already. The
// pusher HEADs the target first; within one registry the blob is offered as
// a remote.MountableLayer, for which ggcr asks the registry to mount it
// from the source repository (POST …/blobs/uploads/?mount=<digest>&from=<repo>)
// and uploads only if the registry declines.
func (c *copier) copyBlob(ctx context.Context, b v1.Descriptor, m *meter) error {
	if !b.MediaType.IsDistributable() {
		return nil // foreign layers stay where their URLs point
	}
	ref := c.from.Digest(b.Digest.String())
	bl := &blobLayer{desc: b, meter: m}
	err := c.a.retry(ctx, func(ctx context.Context) error {
		l, err := c.s.puller.Layer(ctx, ref)
		if err != nil {
			return err
		}
		bl.Layer = l
		var up v1.Layer = bl
		if c.from.Registry == c.to.Registry && c.from.RepositoryStr() != c.to.RepositoryStr() {
			up = &remote.MountableLayer{Layer: bl, Reference: ref}
		}
		return c.s.pusher.Upload(ctx, c.to, up)
	})
	if err != nil {
		// The pusher reads the source while it writes the target; credentials
		// advice must name the registry that refused.
		host := c.to.RegistryStr()
		var terr *transport.Error
		if errors.As(err, &terr) && terr.Request != nil && terr.Request.URL.Host == c.from.RegistryStr() {
			host = c.from.RegistryStr()
		}
		return fmt.Errorf("blob %s: %w", b.Digest, translate(err, host))
	}
	bl.done()
	return nil
}

// copyReferrers copies the referrers the target lacks. It returns how many
// it copied and all that are now in the target.
func (c *copier) copyReferrers(ctx context.Context, refs []referrer) (int, []referrer, error) {
	var copied atomic.Int64
	err := parallel(ctx, c.a.jobs, len(refs), func(ctx context.Context, i int) error {
		r := refs[i]
		var ref name.Reference = c.to.Digest(r.hash.String())
		look := digestRef(c.to, r.hash)
		if r.tag != "" {
			ref = c.to.Tag(r.tag)
			look = ref
		}
		got, found, err := c.s.head(ctx, look)
		if err != nil {
			return fmt.Errorf("%s %s: %w", r.Kind, r.hash, err)
		}
		if found && got == r.hash {
			return nil
		}
		desc, err := c.s.getManifest(ctx, c.from, r.hash)
		if err != nil {
			return fmt.Errorf("%s %s: %w", r.Kind, r.hash, err)
		}
		t, err := c.s.collect(ctx, c.from, desc)
		if err != nil {
			return fmt.Errorf("%s %s: %w", r.Kind, r.hash, err)
		}
		if err := c.copyTree(ctx, t, ref, nil); err != nil {
			return fmt.Errorf("%s %s: %w", r.Kind, r.hash, err)
		}
		copied.Add(1)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return int(copied.Load()), refs, nil
}

func containsReferrer(rs []image.Referrer, r image.Referrer) bool {
	for _, x := range rs {
		if x.Digest == r.Digest && x.Scheme == r.Scheme {
			return true
		}
	}
	return false
}
