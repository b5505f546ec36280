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
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/fault"
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

func fakeSignature(principal, namespace string, message []byte) approval.Signature {
	sum := sha256.Sum256(append([]byte(namespace+"\n"), message...))
	return approval.Signature{Armored: "fake-signature " + principal + " " + hex.EncodeToString(sum[:]), Key: "FAKE:" + principal}
}

// Sign signs as principal, or fails when principal has no key.
func (s *Signatures) Sign(_ context.Context, principal, namespace string, message []byte) (approval.Signature, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.keys[principal] {
		return approval.Signature{}, fmt.Errorf("%w: no key for %s", fault.ErrUsage, principal)
	}
	return fakeSignature(principal, namespace, message), nil
}

// SignAs is a signature as principal whether or not they hold a key: what
// someone forging a record would write.
func SignAs(principal, namespace string, message []byte) approval.Signature {
	return fakeSignature(principal, namespace, message)
}

// Verify checks that sig is principal's, of message in namespace, and that
// principal holds a key now.
func (s *Signatures) Verify(_ context.Context, principal, namespace string, message []byte, sig approval.Signature, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	signer, _, _ := strings.Cut(strings.TrimPrefix(sig.Armored, "fake-signature "), " ")
	switch {
	case !s.keys[signer]:
		return fmt.Errorf("%w: key %s is not in the people file", fault.ErrBlocked, sig.Key)
	case signer != principal:
		return fmt.Errorf("%w: signed with %s's key, not %s's", fault.ErrBlocked, signer, principal)
	case sig != fakeSignature(principal, namespace, message):
		return fmt.Errorf("%w: the signature does not match the statement", fault.ErrBlocked)
	}
	return nil
}

// Anchor is a fake JournalAnchor keeping a history of commits in memory,
// each a snapshot of the heads it holds. Err, when set, fails Anchor;
// ReadErr fails History; InPlace says it is written in place, where its
// keeper can rewind it.
type Anchor struct {
	mu      sync.Mutex
	commits []fakeAnchorCommit
	Err     error
	ReadErr error
	InPlace bool
}

type fakeAnchorCommit struct {
	id    string
	heads map[string]audit.AnchoredHead
}

var _ audit.JournalAnchor = (*Anchor)(nil)

// NewAnchor returns an empty anchor.
func NewAnchor() *Anchor { return &Anchor{} }

// tip is the newest snapshot, with a.mu held.
func (a *Anchor) tip() map[string]audit.AnchoredHead {
	if len(a.commits) == 0 {
		return map[string]audit.AnchoredHead{}
	}
	return a.commits[len(a.commits)-1].heads
}

// commit adds a commit holding heads, with a.mu held.
func (a *Anchor) commit(heads map[string]audit.AnchoredHead) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "fake anchor commit %d", len(a.commits)+1))
	id := hex.EncodeToString(sum[:20])
	a.commits = append(a.commits, fakeAnchorCommit{id: id, heads: heads})
	return id
}

func (a *Anchor) place(commit string) audit.AnchorPlace {
	return audit.AnchorPlace{Ref: "refs/relcap/journal", Commit: commit, Repo: "the fake repository", InPlace: a.InPlace}
}

// Anchor keeps h, once per session, in a new commit.
func (a *Anchor) Anchor(_ context.Context, h audit.SealedHead) (audit.AnchorPlace, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.Err != nil {
		return audit.AnchorPlace{}, a.Err
	}
	want := audit.NewAnchoredHead(h)
	tip := a.tip()
	if have, ok := tip[h.Head.Session]; ok {
		if have.Statement != want.Statement || have.Signature != want.Signature || have.Unsigned != want.Unsigned {
			return audit.AnchorPlace{}, fmt.Errorf("%w: session %s is anchored already", fault.ErrBlocked, h.Head.Session)
		}
		return a.place(a.commits[len(a.commits)-1].id), nil
	}
	next := maps.Clone(tip)
	next[h.Head.Session] = want
	return a.place(a.commit(next)), nil
}

// History returns the tip's heads by session, every commit, and what a
// commit held that the tip does not hold as first written.
func (a *Anchor) History(context.Context) (audit.AnchorHistory, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ReadErr != nil {
		return audit.AnchorHistory{}, a.ReadErr
	}
	out := audit.AnchorHistory{Commits: map[string]bool{}}
	tip := a.tip()
	for _, id := range slices.Sorted(maps.Keys(tip)) {
		out.Heads = append(out.Heads, tip[id])
	}
	first := map[string]audit.AnchoredHead{}
	added := map[string]string{}
	var prev map[string]audit.AnchoredHead
	erased := map[string]bool{}
	for _, c := range a.commits {
		out.Commits[c.id] = true
		out.Place = a.place(c.id)
		for _, id := range slices.Sorted(maps.Keys(prev)) {
			now, ok := c.heads[id]
			changed := ok && now.Statement != prev[id].Statement
			if (!ok || changed) && !erased[id] && !sameHead(tip, id, first[id]) {
				erased[id] = true
				out.Erased = append(out.Erased, audit.ErasedAnchor{
					File: "sessions/" + id + ".json", Head: first[id], AddedIn: added[id], By: c.id,
					Author: "fake <fake@example.com>", At: time.Unix(0, 0), Changed: changed, Subject: "fake commit",
				})
			}
		}
		for id, h := range c.heads {
			if _, ok := first[id]; !ok {
				first[id], added[id] = h, c.id
			}
		}
		prev = c.heads
	}
	return out, nil
}

func sameHead(heads map[string]audit.AnchoredHead, id string, h audit.AnchoredHead) bool {
	have, ok := heads[id]
	return ok && have.Statement == h.Statement && have.Signature == h.Signature
}

// Where names the fake.
func (a *Anchor) Where() string { return "the fake anchor" }

// Head returns session id's anchored head, as the tip holds it.
func (a *Anchor) Head(id string) (audit.AnchoredHead, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.tip()[id]
	return h, ok
}

// Replace overwrites session id's anchored head in every commit, as
// someone rewriting the whole history would.
func (a *Anchor) Replace(h audit.AnchoredHead) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.commits {
		if _, ok := c.heads[h.Head.Session]; ok {
			c.heads[h.Head.Session] = h
		}
	}
}

// Remove drops session id's anchored head from every commit, as someone
// rewriting the whole history would.
func (a *Anchor) Remove(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.commits {
		delete(c.heads, id)
	}
}

// EraseInNewCommit removes session id's head in a new commit on top: a
// fast-forward, which a server that only refuses rewrites allows.
func (a *Anchor) EraseInNewCommit(id string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := maps.Clone(a.tip())
	delete(next, id)
	return a.commit(next)
}

// ChangeInNewCommit overwrites h's session's head in a new commit on top.
func (a *Anchor) ChangeInNewCommit(h audit.AnchoredHead) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := maps.Clone(a.tip())
	next[h.Head.Session] = h
	return a.commit(next)
}

// Rewind drops the newest n commits, as git update-ref on a repository
// without an origin can.
func (a *Anchor) Rewind(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.commits = a.commits[:len(a.commits)-n]
}

// Reanchor commits h again on top, as someone rebuilding a rewound ref
// would: the head is there, at another commit.
func (a *Anchor) Reanchor(h audit.AnchoredHead) {
	a.ChangeInNewCommit(h)
}

// SessionFiles is a fake SessionFiles: journals as lines in memory, and
// recordings by name.
type SessionFiles struct {
	mu         sync.Mutex
	journals   map[string][]journal.Line
	recordings map[string]string // session/name → SHA-256
}

var _ audit.SessionFiles = (*SessionFiles)(nil)

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
		return nil, fmt.Errorf("journal of %s: %w", id, fault.ErrNotFound)
	}
	return slices.Clone(lines), nil
}

// SessionIDs lists the sessions with a journal, sorted.
func (f *SessionFiles) SessionIDs(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.journals)), nil
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
