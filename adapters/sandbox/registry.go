package sandbox

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types and annotations of the demo signature and attestation. The
// signature has the shape cosign gives its .sig images (a simple-signing
// payload layer with the signature in an annotation), so relcap's registry
// adapter finds and copies it like a real one.
const (
	simpleSigningType  = "application/vnd.dev.cosign.simplesigning.v1+json"
	cosignSignatureKey = "dev.cosignproject.cosign/signature"
	inTotoType         = "application/vnd.in-toto+json"
	dsseEnvelopeType   = "application/vnd.dsse.envelope.v1+json"
	// noticeKey marks every demo artifact for what it is.
	noticeKey = "dev.relcap.sandbox/notice"
	notice    = "relcap sandbox demo artifact: not cryptographically verifiable; do not trust it outside the sandbox"
)

// platforms are the platforms of the demo image's index.
var platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}

// registryServer is ggcr's in-memory OCI distribution server on a loopback
// listener.
type registryServer struct {
	srv  *http.Server
	done chan struct{}
}

func (r *registryServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil {
		_ = r.srv.Close()
	}
	<-r.done
}

// startRegistry serves a registry with the OCI referrers API on 127.0.0.1;
// ggcr's registry would log every request, which is noise in a demo.
func (s *Sandbox) startRegistry(ctx context.Context) error {
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("sandbox registry: listen on loopback: %w", err)
	}
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)), ggcrregistry.WithReferrersSupport(true))
	rs := &registryServer{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(rs.done)
		if err := rs.srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logf("sandbox registry: %v", err)
		}
	}()
	// The registry stops with the sandbox's context, like the simulator.
	context.AfterFunc(ctx, func() { _ = rs.srv.Close() })
	s.registry = rs
	s.Registry = lis.Addr().String()
	return nil
}

// pushRelease pushes the release image as a multi-platform index with a
// demo signature (cosign tag scheme) and a demo provenance attestation (OCI
// referrer), so a promotion has everything a real one copies.
func (s *Sandbox) pushRelease(ctx context.Context) error {
	repo, err := name.NewRepository(s.Registry + "/ci/" + App)
	if err != nil {
		return fmt.Errorf("sandbox registry: %w", err)
	}
	created := time.Now().UTC().Truncate(time.Second)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img, err := platformImage(p, created)
		if err != nil {
			return fmt.Errorf("sandbox image for %s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
		s.Platforms = append(s.Platforms, p.String())
	}
	idx = mutate.Annotations(idx, map[string]string{
		"org.opencontainers.image.version":     ImageTag,
		"org.opencontainers.image.description": "relcap sandbox demo image (random layers, not runnable)",
	}).(v1.ImageIndex)
	tag := repo.Tag(ImageTag)
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("sandbox registry: push %s: %w", tag, err)
	}
	h, err := idx.Digest()
	if err != nil {
		return fmt.Errorf("sandbox registry: %w", err)
	}
	s.Image, s.Digest = tag.String(), h.String()

	sig, err := demoSignature(repo, h)
	if err != nil {
		return err
	}
	s.SignatureTag = h.Algorithm + "-" + h.Hex + ".sig"
	if err := remote.Write(repo.Tag(s.SignatureTag), sig, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("sandbox registry: push the demo signature: %w", err)
	}

	subject, err := descriptorOf(idx)
	if err != nil {
		return err
	}
	att, err := demoAttestation(repo, h, subject)
	if err != nil {
		return err
	}
	ad, err := att.Digest()
	if err != nil {
		return fmt.Errorf("sandbox registry: %w", err)
	}
	if err := remote.Write(repo.Digest(ad.String()), att, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("sandbox registry: push the demo attestation: %w", err)
	}
	return nil
}

// platformImage is one platform's image: two random layers under an OCI
// manifest whose config names the platform, as docker buildx writes them.
func platformImage(p v1.Platform, created time.Time) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for i := range 2 {
		l, err := random.Layer(int64(2048*(i+1)), types.OCILayer)
		if err != nil {
			return nil, err
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: created}
	cf.Config.Entrypoint = []string{"/web"}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.version": ImageTag,
		noticeKey:                          "relcap sandbox demo image: random layers, not runnable",
	}
	return mutate.ConfigFile(img, cf)
}

// demoSignature is a manifest shaped like cosign's signature images: a
// simple-signing payload naming the signed digest, and the "signature" in
// the annotation cosign uses. The value is a base64 text saying it is a
// demo, so nobody can mistake it for a verifiable signature.
func demoSignature(repo name.Repository, signed v1.Hash) (v1.Image, error) {
	payload, err := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]string{"docker-reference": repo.String()},
			"image":    map[string]string{"docker-manifest-digest": signed.String()},
			"type":     "cosign container image signature",
		},
		"optional": map[string]string{"note": notice},
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox signature payload: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: static.NewLayer(payload, simpleSigningType),
		Annotations: map[string]string{
			cosignSignatureKey: base64.StdEncoding.EncodeToString([]byte("relcap sandbox demo signature (not verifiable)")),
			noticeKey:          notice,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox signature: %w", err)
	}
	return mutate.Annotations(img, map[string]string{noticeKey: notice}).(v1.Image), nil
}

// demoAttestation is an OCI 1.1 referrer of subject: a DSSE envelope around
// an in-toto statement of SLSA provenance naming the sandbox as builder,
// with no signatures. ggcr's registry reports a referrer's config media
// type as its artifact type, so the in-toto type goes there.
func demoAttestation(repo name.Repository, h v1.Hash, subject v1.Descriptor) (v1.Image, error) {
	statement, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": repo.String(), "digest": map[string]string{h.Algorithm: h.Hex}}},
		"predicateType": "https://slsa.dev/provenance/v1",
		"predicate": map[string]any{
			"buildDefinition": map[string]any{"buildType": "https://relcap.dev/sandbox/demo-build@v1", "externalParameters": map[string]string{"tag": ImageTag}},
			"runDetails":      map[string]any{"builder": map[string]string{"id": "relcap sandbox (demo, unsigned)"}},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox attestation statement: %w", err)
	}
	envelope, err := json.Marshal(map[string]any{
		"payloadType": inTotoType,
		"payload":     base64.StdEncoding.EncodeToString(statement),
		"signatures":  []any{},
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox attestation envelope: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, inTotoType)
	img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(envelope, dsseEnvelopeType)})
	if err != nil {
		return nil, fmt.Errorf("sandbox attestation: %w", err)
	}
	img = mutate.Annotations(img, map[string]string{noticeKey: notice}).(v1.Image)
	return mutate.Subject(img, subject).(v1.Image), nil
}

// descriptorOf is the descriptor a referrer's subject field holds.
func descriptorOf(idx v1.ImageIndex) (v1.Descriptor, error) {
	h, err := idx.Digest()
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("sandbox index digest: %w", err)
	}
	n, err := idx.Size()
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("sandbox index size: %w", err)
	}
	mt, err := idx.MediaType()
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("sandbox index media type: %w", err)
	}
	return v1.Descriptor{MediaType: mt, Digest: h, Size: n}, nil
}
