package registry

import (
	"errors"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
)

var (
	built   = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	rebuilt = built.Add(time.Hour)
)

func manifestSize(t testing.TB, w interface{ RawManifest() ([]byte, error) }) int64 {
	t.Helper()
	b, err := w.RawManifest()
	require.NoError(t, err)
	return int64(len(b))
}

func imageSize(t testing.TB, img v1.Image) int64 {
	t.Helper()
	m, err := img.Manifest()
	require.NoError(t, err)
	n := manifestSize(t, img) + m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n
}

func TestResolveTagToDigest(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, registryConfig{})
	img := ociImage(t, "linux/amd64", built, randomLayer(t, 2048), randomLayer(t, 1024))
	push(t, reg.repo("ci/web:1.4.2"), img)
	a := newAdapter(t, Options{})

	ref := reg.repo("ci/web:1.4.2")
	art, err := a.Resolve(t.Context(), ref)
	require.NoError(t, err)

	require.Equal(t, wdigest(t, digestOf(t, img)), art.Digest)
	require.Equal(t, ref, art.Reference)
	require.Equal(t, reg.repo("ci/web"), art.Repository)
	require.Equal(t, string(types.OCIManifestSchema1), art.MediaType)
	require.Equal(t, []string{"linux/amd64"}, art.Platforms)
	require.True(t, built.Equal(art.Created), "created %v", art.Created)
	require.Equal(t, imageSize(t, img), art.Size)
	require.Empty(t, art.Referrers)
	require.False(t, art.Signed())

	// The same artifact by digest.
	byDigest, err := a.Resolve(t.Context(), reg.repo("ci/web@"+art.Digest.String()))
	require.NoError(t, err)
	require.Equal(t, art.Digest, byDigest.Digest)
	require.Equal(t, art.Size, byDigest.Size)
}

func TestResolveIndexListsPlatformsAndCountsSharedBlobsOnce(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, registryConfig{})
	shared := randomLayer(t, 4096)
	amd := ociImage(t, "linux/amd64", built, shared, randomLayer(t, 1000))
	arm := ociImage(t, "linux/arm64/v8", rebuilt, shared, randomLayer(t, 3000))
	idx := index(t, amd, arm)
	push(t, reg.repo("ci/web:multi"), idx)

	art, err := newAdapter(t, Options{}).Resolve(t.Context(), reg.repo("ci/web:multi"))
	require.NoError(t, err)

	require.Equal(t, wdigest(t, digestOf(t, idx)), art.Digest)
	require.Equal(t, string(types.OCIImageIndex), art.MediaType)
	require.Equal(t, []string{"linux/amd64", "linux/arm64/v8"}, art.Platforms)
	require.True(t, rebuilt.Equal(art.Created), "an index is as new as its newest image, got %v", art.Created)
	want := manifestSize(t, idx) + imageSize(t, amd) + imageSize(t, arm) - 4096
	require.Equal(t, want, art.Size, "the shared layer counts once")
}

// TestResolveFindsReferrers covers both schemes on a registry with the OCI
// referrers API and on one without (where ggcr keeps a sha256-<hex> index
// tag instead).
func TestResolveFindsReferrers(t *testing.T) {
	t.Parallel()
	for _, api := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers-api", false: "tag-fallback"}[api], func(t *testing.T) {
			t.Parallel()
			reg := newRegistry(t, registryConfig{referrers: api})
			img := ociImage(t, "linux/amd64", built, randomLayer(t, 512))
			h := digestOf(t, img)
			push(t, reg.repo("ci/web:1.0"), img)
			sig := cosignSignature(t, h)
			push(t, reg.repo("ci/web:sha256-"+h.Hex+".sig"), sig)
			att := intotoAttestation(t, descriptor(t, img))
			push(t, reg.repo("ci/web@"+digestOf(t, att).String()), att)

			art, err := newAdapter(t, Options{}).Resolve(t.Context(), reg.repo("ci/web:1.0"))
			require.NoError(t, err)
			require.ElementsMatch(t, []image.Referrer{
				{Kind: "signature", Digest: wdigest(t, digestOf(t, sig)), Scheme: "cosign-tag"},
				{Kind: "attestation", Digest: wdigest(t, digestOf(t, att)), Scheme: "oci-referrers"},
			}, art.Referrers)
			require.True(t, art.Signed())
		})
	}
}

func TestResolveRejectsBadReferences(t *testing.T) {
	t.Parallel()
	a := newAdapter(t, Options{})
	for _, tc := range []struct{ ref, says string }{
		{"UPPER/Case:tag", `repository "UPPER/Case" must be lowercase`},
		{"registry.example.com/Team/web:1", `repository "Team/web" must be lowercase`},
		{"repo@sha256:short", "want 64 hex digits, got 5"},
		{"registry.example.com/web@sha256:XYZ", "want 64 hex digits"},
		{"web:1.0", "no registry host"},
		{"registry.example.com/team/web", "no tag or digest"},
		{"registry.example.com/team/web:", "empty tag"},
		{"https://registry.example.com/team/web:1", "URL scheme"},
		{"", "empty"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			t.Parallel()
			_, err := a.Resolve(t.Context(), tc.ref)
			require.ErrorIs(t, err, fault.ErrUsage)
			var term *workflow.TerminalError
			require.ErrorAs(t, err, &term)
			require.ErrorContains(t, err, `reference "`+tc.ref+`"`)
			require.ErrorContains(t, err, tc.says)
		})
	}
}

func TestResolveMissingTagOrRepository(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, registryConfig{})
	push(t, reg.repo("ci/web:1.0"), ociImage(t, "linux/amd64", built, randomLayer(t, 64)))
	a := newAdapter(t, Options{})

	_, err := a.Resolve(t.Context(), reg.repo("ci/web:2.0"))
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.EqualError(t, err, "resolve "+reg.repo("ci/web:2.0")+": 404 MANIFEST_UNKNOWN: the tag is not in the repository")

	_, err = a.Resolve(t.Context(), reg.repo("ci/api:1.0"))
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.ErrorContains(t, err, "404 NAME_UNKNOWN: the repository does not exist")
	require.True(t, errors.As(err, new(*workflow.TerminalError)))
}
