package workflowtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/journal"
)

// Signatures is a fake Signer and SignatureVerifier. A fake signature
// names its signer and the SHA-256 of its namespace and message; only the
// principals in Keys can sign, and only their signatures verify, so
// removing a principal withdraws what they signed (as a people file does).
type Signatures struct {
	mu   sync.Mutex
	keys map[string]bool
}

var (
	_ workflow.Signer            = (*Signatures)(nil)
	_ workflow.SignatureVerifier = (*Signatures)(nil)
)

// NewSignatures gives each principal a key.
func NewSignatures(principals ...string) *Signatures {
	s := &Signatures{keys: map[string]bool{}}
	for _, p := range principals {
		s.keys[p] = true
	}
	return s
}

// Revoke takes principal's key away.
func (s *Signatures) Revoke(principal string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, principal)
}

func fakeSignature(principal, namespace string, message []byte) workflow.Signature {
	sum := sha256.Sum256(append([]byte(namespace+"\n"), message...))
	return workflow.Signature{Armored: "fake-signature " + principal + " " + hex.EncodeToString(sum[:]), Key: "FAKE:" + principal}
}

// Sign signs as principal, or fails when principal has no key.
func (s *Signatures) Sign(_ context.Context, principal, namespace string, message []byte) (workflow.Signature, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.keys[principal] {
		return workflow.Signature{}, fmt.Errorf("%w: no key for %s", workflow.ErrUsage, principal)
	}
	return fakeSignature(principal, namespace, message), nil
}

// SignAs is a signature as principal whether or not they hold a key: what
// someone forging a record would write.
func SignAs(principal, namespace string, message []byte) workflow.Signature {
	return fakeSignature(principal, namespace, message)
}

// Verify checks that sig is principal's, of message in namespace, and that
// principal holds a key now.
func (s *Signatures) Verify(_ context.Context, principal, namespace string, message []byte, sig workflow.Signature, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	signer, _, _ := strings.Cut(strings.TrimPrefix(sig.Armored, "fake-signature "), " ")
	switch {
	case !s.keys[signer]:
		return fmt.Errorf("%w: key %s is not in the people file", workflow.ErrBlocked, sig.Key)
	case signer != principal:
		return fmt.Errorf("%w: signed with %s's key, not %s's", workflow.ErrBlocked, signer, principal)
	case sig != fakeSignature(principal, namespace, message):
		return fmt.Errorf("%w: the signature does not match the statement", workflow.ErrBlocked)
	}
	return nil
}

// Anchor is a fake JournalAnchor keeping heads in memory. Err, when set,
// fails Anchor; ReadErr fails Anchors.
type Anchor struct {
	mu      sync.Mutex
	heads   map[string]workflow.AnchoredHead
	Err     error
	ReadErr error
}

var _ workflow.JournalAnchor = (*Anchor)(nil)

// NewAnchor returns an empty anchor.
func NewAnchor() *Anchor { return &Anchor{heads: map[string]workflow.AnchoredHead{}} }

// Anchor keeps h, once per session.
func (a *Anchor) Anchor(_ context.Context, h workflow.SealedHead) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.Err != nil {
		return "", a.Err
	}
	want := workflow.NewAnchoredHead(h)
	if have, ok := a.heads[h.Head.Session]; ok {
		if have.Statement != want.Statement || have.Signature != want.Signature || have.Unsigned != want.Unsigned {
			return "", fmt.Errorf("%w: session %s is anchored already", workflow.ErrBlocked, h.Head.Session)
		}
	}
	a.heads[h.Head.Session] = want
	return fmt.Sprintf("fake anchor #%d", len(a.heads)), nil
}

// Anchors returns the heads by session.
func (a *Anchor) Anchors(context.Context) ([]workflow.AnchoredHead, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ReadErr != nil {
		return nil, a.ReadErr
	}
	ids := slices.Sorted(maps.Keys(a.heads))
	out := make([]workflow.AnchoredHead, 0, len(ids))
	for _, id := range ids {
		out = append(out, a.heads[id])
	}
	return out, nil
}

// Where names the fake.
func (a *Anchor) Where() string { return "the fake anchor" }

// Head returns session id's anchored head.
func (a *Anchor) Head(id string) (workflow.AnchoredHead, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.heads[id]
	return h, ok
}

// Replace overwrites session id's anchored head, as someone rewriting the
// anchor would.
func (a *Anchor) Replace(h workflow.AnchoredHead) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.heads[h.Head.Session] = h
}

// Remove drops session id's anchored head.
func (a *Anchor) Remove(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.heads, id)
}

// SessionFiles is a fake SessionFiles: journals as lines in memory, and
// recordings by name.
type SessionFiles struct {
	mu         sync.Mutex
	journals   map[string][]journal.Line
	recordings map[string]string // session/name → SHA-256
}

var _ workflow.SessionFiles = (*SessionFiles)(nil)

// NewSessionFiles returns no files.
func NewSessionFiles() *SessionFiles {
	return &SessionFiles{journals: map[string][]journal.Line{}, recordings: map[string]string{}}
}

// SetJournal replaces session id's journal with the lines.
func (f *SessionFiles) SetJournal(id string, lines []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]journal.Line, len(lines))
	for i, l := range lines {
		out[i] = journal.Line{Number: i + 1, Text: []byte(l)}
	}
	f.journals[id] = out
}

// RemoveJournal deletes session id's journal.
func (f *SessionFiles) RemoveJournal(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.journals, id)
}

// JournalLines returns the journal, or ErrNotFound.
func (f *SessionFiles) JournalLines(_ context.Context, id string) ([]journal.Line, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lines, ok := f.journals[id]
	if !ok {
		return nil, fmt.Errorf("journal of %s: %w", id, workflow.ErrNotFound)
	}
	return slices.Clone(lines), nil
}

// RecordingSHA256 returns a recording's hash, or an error.
func (f *SessionFiles) RecordingSHA256(_ context.Context, id, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sum, ok := f.recordings[id+"/"+name]
	if !ok {
		return "", errors.New("no such file")
	}
	return sum, nil
}

// SetRecording makes session id's file name hash to sum.
func (f *SessionFiles) SetRecording(id, name, sum string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recordings[id+"/"+name] = sum
}

// RemoveRecording deletes session id's file name.
func (f *SessionFiles) RemoveRecording(id, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.recordings, id+"/"+name)
}
