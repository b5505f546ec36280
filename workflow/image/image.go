// Package image holds what relcap knows of a container image: its digest,
// the artifact it resolves to with its referrers, and a reference as an
// environment repository pins it. It imports nothing of the release core.
package image

import (
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
)

// Digest is a validated content digest ("sha256:<64 hex>"). Promotion works
// on digests only: a tag can move, a digest cannot.
type Digest struct{ s string }

// ParseDigest validates s.
func ParseDigest(s string) (Digest, error) {
	algo, hex, ok := strings.Cut(s, ":")
	if !ok {
		return Digest{}, fmt.Errorf("%w: digest %q: want sha256:<64 hex digits>", fault.ErrUsage, s)
	}
	want := 0
	switch algo {
	case "sha256":
		want = 64
	case "sha512":
		want = 128
	default:
		return Digest{}, fmt.Errorf("%w: digest %q: unsupported algorithm %q", fault.ErrUsage, s, algo)
	}
	if len(hex) != want {
		return Digest{}, fmt.Errorf("%w: digest %q: want %d hex digits, got %d", fault.ErrUsage, s, want, len(hex))
	}
	for _, c := range hex {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return Digest{}, fmt.Errorf("%w: digest %q: %q is not a lowercase hex digit", fault.ErrUsage, s, c)
		}
	}
	return Digest{s: s}, nil
}

func (d Digest) String() string { return d.s }

// IsZero reports whether d is unset.
func (d Digest) IsZero() bool { return d.s == "" }

// Short is the digest's first finding.ShortLen hex digits, for screens.
func (d Digest) Short() string {
	_, hex, _ := strings.Cut(d.s, ":")
	return finding.ShortHash(hex)
}

// MarshalText stores the digest as its string.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.s), nil }

// UnmarshalText validates on load.
func (d *Digest) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = Digest{}
		return nil
	}
	v, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Artifact is an image resolved to its digest, with what a reviewer needs to
// know about it.
type Artifact struct {
	Reference  string    `json:"reference"` // as given: tag or digest reference
	Repository string    `json:"repository"`
	Digest     Digest    `json:"digest"`
	MediaType  string    `json:"media_type,omitempty"`
	Platforms  []string  `json:"platforms,omitempty"` // "linux/amd64", … for an index
	Size       int64     `json:"size,omitempty"`      // total bytes of manifests and layers
	Created    time.Time `json:"created,omitzero"`
	// Referrers are signatures, attestations and SBOMs attached to the digest.
	Referrers []Referrer `json:"referrers,omitempty"`
}

// Referrer is an artifact that refers to a digest: a signature, an
// attestation or an SBOM.
type Referrer struct {
	Kind   string `json:"kind"` // "signature", "attestation", "sbom", or the artifact type
	Digest Digest `json:"digest"`
	// Scheme says how it was found: "oci-referrers" or "cosign-tag".
	Scheme string `json:"scheme"`
}

// Signed reports whether a signature is attached.
func (a Artifact) Signed() bool {
	for _, r := range a.Referrers {
		if r.Kind == "signature" {
			return true
		}
	}
	return false
}

// PromoteRequest copies a digest, with its referrers, between repositories.
type PromoteRequest struct {
	Digest Digest
	// From is the repository the digest is copied from (the previous
	// environment's, or the reference's own for the first environment).
	From string
	To   string
}

// PromoteResult is what a copy did; the target digest has been verified to
// equal the source digest when it returns without error.
type PromoteResult struct {
	Target          Artifact `json:"target"`
	BlobsUploaded   int      `json:"blobs_uploaded"`
	BlobsMounted    int      `json:"blobs_mounted"`
	BlobsPresent    int      `json:"blobs_present"`
	ReferrersCopied int      `json:"referrers_copied"`
}

// ImageRef is an image reference as an environment repository pins it:
// repository plus a digest, or (in files relcap did not write) a tag.
type Ref struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag,omitempty"`
	Digest     Digest `json:"digest,omitzero"`
}

func (r Ref) String() string {
	s := r.Repository
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if !r.Digest.IsZero() {
		s += "@" + r.Digest.String()
	}
	return s
}
