package signing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
)

var (
	_ workflow.SignatureVerifier = (*Verifier)(nil)
	_ workflow.PeopleFile        = (*Verifier)(nil)
)

// Verifier checks SSH signatures against the people file at Path.
//
// It reads the file again on every Verify: a signature counts only while
// the file, as it reads when the signature is used, gives the signing key
// to the signer. Removing a person's key from the file therefore withdraws
// what it signed, as `ssh-keygen -Y verify` with the new file would. The
// zero value has no file and verifies nothing. It is safe for concurrent
// use.
type Verifier struct {
	// Path is the people file, in git's allowed-signers format.
	Path string
	// Source, when set, finds the people file that counts: the protected
	// branch's (see PeopleSource), the working copy only where nothing
	// protects it. Nil reads the file at Path as it is.
	Source *PeopleSource
}

// NewVerifier returns a Verifier of the people file at path as it reads
// on this machine.
func NewVerifier(path string) *Verifier { return &Verifier{Path: path} }

// NewProtectedVerifier returns a Verifier of the people file that counts
// for the file at path: its protected branch's content (PeopleSource).
func NewProtectedVerifier(path string) *Verifier {
	return &Verifier{Path: path, Source: NewPeopleSource(path)}
}

// people returns the people file that counts now, and its name for
// messages.
func (v *Verifier) people(ctx context.Context) (*People, error) {
	if v.Source == nil {
		return LoadPeople(v.Path)
	}
	r, err := v.Source.read(ctx)
	if err != nil {
		return nil, err
	}
	return ParseAllowedSigners(peopleName(r.state), r.data)
}

// peopleName names a reading of the people file in messages.
func peopleName(st workflow.PeopleState) string {
	if st.Protected {
		return st.Where
	}
	return st.File
}

// PeopleState says which people file counts now (workflow.PeopleFile).
func (v *Verifier) PeopleState(ctx context.Context) (workflow.PeopleState, error) {
	if v.Source == nil {
		data, err := os.ReadFile(v.Path)
		if err != nil {
			_, err = LoadPeople(v.Path)
			return workflow.PeopleState{}, err
		}
		return workflow.PeopleState{File: v.Path, Revision: fileRevision(data), Where: "read as it is on this machine"}, nil
	}
	r, err := v.Source.read(ctx)
	if err != nil {
		return workflow.PeopleState{}, err
	}
	return r.state, nil
}

// VerifyIn is Verify against the people file of revision
// (workflow.PeopleFile).
func (v *Verifier) VerifyIn(ctx context.Context, revision, principal, namespace string, message []byte, sig approval.Signature, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	src := v.Source
	if src == nil {
		src = NewPeopleSource(v.Path)
	}
	data, err := src.content(ctx, revision)
	if err != nil {
		return err
	}
	people, err := ParseAllowedSigners(v.Path+" at "+short(strings.TrimPrefix(revision, gitRevisionPrefix)), data)
	if err != nil {
		return err
	}
	return verifyAgainst(people, principal, namespace, message, sig, at)
}

// Verify checks that sig is principal's signature of message in
// namespace, made with a key the people file gives principal for that
// namespace at time at (the time of the signed statement). It returns nil
// when it is, an error wrapping ErrUnverified that says why when it is
// not, and an error wrapping fault.ErrUsage when the people file is
// missing or malformed.
func (v *Verifier) Verify(ctx context.Context, principal, namespace string, message []byte, sig approval.Signature, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	people, err := v.people(ctx)
	if err != nil {
		return err
	}
	return verifyAgainst(people, principal, namespace, message, sig, at)
}

// verifyAgainst is Verify against one reading of the people file.
func verifyAgainst(people *People, principal, namespace string, message []byte, sig approval.Signature, at time.Time) error {
	if sig.IsZero() {
		return unverifiedf("%s's statement is not signed", principal)
	}
	s, err := sshsig.Unarmor([]byte(sig.Armored))
	if err != nil {
		return unverifiedf("the signature is not an armored SSH signature (-----BEGIN SSH SIGNATURE-----): %v", err)
	}
	if s.Namespace != namespace {
		return unverifiedf("the signature is for namespace %s, not %s: it was made for another purpose and does not count here", clip(s.Namespace), namespace)
	}
	fp := ssh.FingerprintSHA256(s.PublicKey)
	pub := findKey(people.KeysFor(principal, namespace, at), s.PublicKey)
	if pub == nil {
		return unverifiedf("%s", verifyRefusal(people.refuse(principal, namespace, s.PublicKey, at), principal, namespace, people.name, at))
	}
	if err := sshsig.Verify(bytes.NewReader(message), s, pub, s.HashAlgorithm, namespace); err != nil {
		if errors.Is(err, sshsig.ErrUnsupportedHashAlgorithm) || errors.Is(err, sshsig.ErrUnavailableHashAlgorithm) {
			return unverifiedf("the signature by key %s uses a hash relcap cannot check: %v", fp, err)
		}
		return unverifiedf("the signature does not match the statement (changed after signing): key %s did not sign these bytes", fp)
	}
	if sig.Key != "" && sig.Key != fp {
		return unverifiedf("the signature was made with key %s, but the record says %s: the record was altered", fp, clip(sig.Key))
	}
	return nil
}

// verifyRefusal words a refusal for someone checking principal's
// signature.
func verifyRefusal(r refusal, principal, namespace, file string, at time.Time) string {
	switch r.kind {
	case keyOfOthers:
		if len(r.owners) == 0 {
			return fmt.Sprintf("signed with key %s, which %s does not give %s", r.fp, file, principal)
		}
		return fmt.Sprintf("signed with key %s, which %s gives %s, not %s", r.fp, file, joinAnd(r.owners), principal)
	case namespaceExcluded:
		return r.namespaces(principal, namespace, file)
	case notYetValid, expired:
		return fmt.Sprintf("%s; the statement is dated %s", r.validity(principal, file), at.Format(time.RFC3339))
	}
	return fmt.Sprintf("key %s is not in %s (removed, or never added): it no longer vouches for %s", r.fp, file, principal)
}

// joinAnd lists names: "alice", "alice and carol", "alice, bob and carol".
func joinAnd(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	out := names[0]
	for _, n := range names[1 : len(names)-1] {
		out += ", " + n
	}
	return out + " and " + names[len(names)-1]
}
