package gitrepo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/fault"
)

// JournalRef is the ref sealed session heads are anchored on: a chain of
// commits, one per anchored head, whose tree holds one file per session,
// sessions/<YYYYMM>/<session id>.json (the month the session's ID starts
// with, so no tree grows without bound). It only ever moves forward.
const JournalRef = plumbing.ReferenceName("refs/relcap/journal")

// journalSeen is where a clone keeps origin's JournalRef as it last saw
// it. It only moves forward: an origin ref that no longer contains what
// this machine saw (force-pushed) fails the fetch instead of being taken.
const journalSeen = plumbing.ReferenceName("refs/relcap/origin/journal")

// journalFetched is origin's JournalRef as just fetched, before it is
// checked against journalSeen.
const journalFetched = plumbing.ReferenceName("refs/relcap/origin/journal-fetched")

// anchorAttempts bounds the re-reads after a push that someone else's
// anchor beat.
const anchorAttempts = 10

// maxAnchorFile bounds an anchored head's file; one is about 1 KiB.
const maxAnchorFile = 64 << 10

// JournalAnchor anchors sealed session heads on JournalRef of one
// environment repository: pushed to origin for a clone URL (or a local
// checkout that has an origin), written in place for a local repository
// without one. Anchoring only fast-forwards the ref, never forces it: when
// someone else anchored meanwhile, it re-reads the ref and builds on it.
// It is audit.JournalAnchor, and safe for concurrent use.
type JournalAnchor struct {
	a   *Adapter
	loc location
	// beforePush, when set, runs between building an anchor commit and
	// pushing it: tests anchor from another machine there.
	beforePush func()
}

var _ audit.JournalAnchor = (*JournalAnchor)(nil)

// JournalAnchor returns the anchor on the environment repository at repo
// (a local path or a clone URL, as envrepo.path); a path that is neither
// wraps fault.ErrUsage.
func (a *Adapter) JournalAnchor(repo string) (*JournalAnchor, error) {
	loc, err := locate(repo)
	if err != nil {
		return nil, err
	}
	return &JournalAnchor{a: a, loc: loc}, nil
}

// Where names the anchor: the ref and the repository, without credentials.
func (j *JournalAnchor) Where() string { return JournalRef.String() + " of " + j.loc.display }

// AnchorFile is where session id's head is kept in the anchor's tree.
func AnchorFile(id string) string {
	shard := "other"
	if len(id) >= 6 && strings.Trim(id[:6], "0123456789") == "" {
		shard = id[:6]
	}
	return "sessions/" + shard + "/" + id + ".json"
}

// encodeAnchored is the file that anchors h.
func encodeAnchored(h audit.SealedHead) ([]byte, error) {
	b, err := json.MarshalIndent(audit.NewAnchoredHead(h), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the anchor of session %s: %w", h.Head.Session, err)
	}
	return append(b, '\n'), nil
}

// Anchor commits h's file on top of JournalRef and pushes it (for a
// repository with an origin) without force, re-reading and retrying when
// another anchor got there first. It returns where it is anchored:
// "refs/relcap/journal <commit> of <repository>", and whether it was
// written in place (a repository without an origin). The same head
// anchored again changes nothing; another head for a session already
// anchored is refused with fault.ErrBlocked.
func (j *JournalAnchor) Anchor(ctx context.Context, h audit.SealedHead) (audit.AnchorPlace, error) {
	where, err := j.anchor(ctx, h)
	return where, j.loc.scrub(err)
}

func (j *JournalAnchor) anchor(ctx context.Context, h audit.SealedHead) (audit.AnchorPlace, error) {
	none := audit.AnchorPlace{}
	id := h.Head.Session
	if id == "" || strings.ContainsAny(id, "/\\\x00") || id == "." || id == ".." {
		return none, fmt.Errorf("%w: session ID %q cannot name a file of the journal anchor", fault.ErrUsage, id)
	}
	data, err := encodeAnchored(h)
	if err != nil {
		return none, err
	}
	file := AnchorFile(id)
	unlock := j.a.lock(j.loc.key())
	defer unlock()
	r, origin, err := j.open(ctx)
	if err != nil {
		return none, err
	}
	for attempt := 1; ; attempt++ {
		tip, err := j.tip(ctx, r, origin)
		if err != nil {
			return none, err
		}
		if tip != nil {
			have, err := readAnchorFile(r, tip, file)
			if err != nil {
				return none, err
			}
			switch {
			case have == nil:
			case bytes.Equal(have, data):
				return j.place(tip.Hash, origin), nil
			default:
				return none, fmt.Errorf("%w: %s already holds another head for session %s (%s): a session is anchored once", fault.ErrBlocked, j.Where(), id, file)
			}
		}
		next, err := j.commit(r, tip, file, data, h)
		if err != nil {
			return none, err
		}
		if !origin {
			// In place: move the ref only if nobody moved it since it was
			// read.
			var old *plumbing.Reference
			if tip != nil {
				old = plumbing.NewHashReference(JournalRef, tip.Hash)
			}
			err := r.Storer.CheckAndSetReference(plumbing.NewHashReference(JournalRef, next), old)
			if errors.Is(err, storage.ErrReferenceHasChanged) && attempt < anchorAttempts {
				continue
			}
			if err != nil {
				return none, fmt.Errorf("moving %s in %s: %w", JournalRef, j.loc.display, err)
			}
			return j.place(next, origin), nil
		}
		if j.beforePush != nil {
			j.beforePush()
		}
		err = j.a.remote(ctx, j.loc, func(auth transport.AuthMethod) error {
			return r.PushContext(ctx, &git.PushOptions{
				RemoteName: "origin",
				RemoteURL:  j.loc.url,
				RefSpecs:   []config.RefSpec{config.RefSpec(next.String() + ":" + JournalRef.String())},
				Auth:       auth,
			})
		})
		switch {
		case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
			// What origin now holds is what this machine saw last.
			if err := r.Storer.SetReference(plumbing.NewHashReference(journalSeen, next)); err != nil {
				return none, fmt.Errorf("recording %s in the clone of %s: %w", JournalRef, j.loc.display, err)
			}
			return j.place(next, origin), nil
		case ctx.Err() != nil:
			return none, fmt.Errorf("pushing %s to origin of %s: %w", JournalRef, j.loc.display, ctx.Err())
		case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
			return none, fmt.Errorf("pushing %s to origin of %s: %w (store credentials for the host in git's credential helper, or use an ssh URL with an agent)", JournalRef, j.loc.display, err)
		}
		// Rejected: most likely someone else anchored meanwhile, so the
		// push was not a fast-forward. Re-read origin; if it moved, build
		// on it again.
		if attempt < anchorAttempts {
			if moved, rerr := j.moved(ctx, r, tip); rerr == nil && moved {
				continue
			}
		}
		return none, fmt.Errorf("pushing %s to origin of %s: %w", JournalRef, j.loc.display, err)
	}
}

// Anchors reads every head JournalRef's tip holds: History's heads.
func (j *JournalAnchor) Anchors(ctx context.Context) ([]audit.AnchoredHead, error) {
	h, err := j.History(ctx)
	return h.Heads, err
}

// History reads JournalRef's whole history, as origin holds it now (for a
// repository with an origin) or as the repository holds it: the heads
// its tip holds, every commit reachable from the tip, and every anchor
// file some commit held that the tip no longer holds as first written
// (removed or changed by a later commit, a fast-forward included). A ref
// that origin rewrote or deleted since this machine last read it is an
// error wrapping fault.ErrTampered; so is a file, in any commit, that
// is not the head of the session it is named after.
func (j *JournalAnchor) History(ctx context.Context) (audit.AnchorHistory, error) {
	h, err := j.history(ctx)
	return h, j.loc.scrub(err)
}

func (j *JournalAnchor) history(ctx context.Context) (audit.AnchorHistory, error) {
	unlock := j.a.lock(j.loc.key())
	defer unlock()
	r, origin, err := j.open(ctx)
	if err != nil {
		return audit.AnchorHistory{}, err
	}
	tip, err := j.tip(ctx, r, origin)
	if err != nil {
		return audit.AnchorHistory{}, err
	}
	out := audit.AnchorHistory{Place: j.place(plumbing.ZeroHash, origin), Commits: map[string]bool{}}
	if tip == nil {
		out.Place.Commit = ""
		return out, nil
	}
	out.Place = j.place(tip.Hash, origin)
	w := newHistoryWalk(ctx, r, j)
	if err := w.walk(tip, &out); err != nil {
		return audit.AnchorHistory{}, err
	}
	return out, nil
}

// open opens the repository and tells whether origin is where anchors
// live: always for a clone URL, and for a local checkout that has an
// origin.
func (j *JournalAnchor) open(ctx context.Context) (*git.Repository, bool, error) {
	r, err := j.a.open(ctx, j.loc)
	if err != nil {
		return nil, false, err
	}
	if j.loc.url != "" {
		return r, true, nil
	}
	if _, err := r.Remote("origin"); err == nil {
		return r, true, nil
	} else if !errors.Is(err, git.ErrRemoteNotFound) {
		return nil, false, fmt.Errorf("reading remotes of %s: %w", j.loc.display, err)
	}
	return r, false, nil
}

// tip is the anchor's newest commit, nil when nothing is anchored yet: for
// a repository with an origin, origin's as just fetched (without force);
// otherwise the repository's own ref.
func (j *JournalAnchor) tip(ctx context.Context, r *git.Repository, origin bool) (*object.Commit, error) {
	name := JournalRef
	if origin {
		name = journalSeen
		if err := j.fetch(ctx, r); err != nil {
			return nil, err
		}
	}
	ref, err := r.Reference(name, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s in %s: %w", name, j.loc.display, err)
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		return nil, fmt.Errorf("reading %s (%s) in %s: %w", JournalRef, ref.Hash(), j.loc.display, err)
	}
	return c, nil
}

// fetch brings origin's JournalRef into journalSeen, refusing anything but
// a fast-forward of what was seen before. It fetches into journalFetched
// and checks the ancestry itself: go-git drops a refused non-fast-forward
// silently when tags are not fetched.
func (j *JournalAnchor) fetch(ctx context.Context, r *git.Repository) error {
	seen, err := r.Reference(journalSeen, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		seen, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("reading %s in %s: %w", journalSeen, j.loc.display, err)
	}
	err = j.a.remote(ctx, j.loc, func(auth transport.AuthMethod) error {
		return r.FetchContext(ctx, &git.FetchOptions{
			RemoteName: "origin",
			RemoteURL:  j.loc.url,
			RefSpecs:   []config.RefSpec{config.RefSpec("+" + JournalRef.String() + ":" + journalFetched.String())},
			Auth:       auth,
			Tags:       git.NoTags,
		})
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.Is(err, git.NoMatchingRefSpecError{}), errors.Is(err, transport.ErrEmptyRemoteRepository):
		if seen != nil {
			return fmt.Errorf("%w: %s was deleted from origin of %s, where this machine last saw it at %s: restore it (git push origin %s:%s) and find out who deleted it",
				fault.ErrTampered, JournalRef, j.loc.display, seen.Hash(), seen.Hash(), JournalRef)
		}
		return nil // nothing anchored yet
	case ctx.Err() != nil:
		return fmt.Errorf("fetching %s from %s: %w", JournalRef, j.loc.display, ctx.Err())
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("fetching %s from %s: %w (store credentials for the host in git's credential helper, or use an ssh URL with an agent)", JournalRef, j.loc.display, err)
	default:
		return fmt.Errorf("fetching %s from %s: %w", JournalRef, j.loc.display, err)
	}
	fetched, err := r.Reference(journalFetched, true)
	if err != nil {
		return fmt.Errorf("reading %s in %s: %w", journalFetched, j.loc.display, err)
	}
	if seen != nil && seen.Hash() != fetched.Hash() {
		ok, err := descends(r, fetched.Hash(), seen.Hash())
		if err != nil {
			return fmt.Errorf("reading the history of %s in %s: %w", JournalRef, j.loc.display, err)
		}
		if !ok {
			return fmt.Errorf("%w: %s on origin of %s (%s) no longer contains %s, which this machine saw there: it was rewritten (force-pushed); compare the two, then restore it",
				fault.ErrTampered, JournalRef, j.loc.display, fetched.Hash(), seen.Hash())
		}
	}
	if err := r.Storer.SetReference(plumbing.NewHashReference(journalSeen, fetched.Hash())); err != nil {
		return fmt.Errorf("recording %s in %s: %w", journalSeen, j.loc.display, err)
	}
	return nil
}

// descends reports whether commit old is tip or one of its ancestors.
func descends(r *git.Repository, tip, old plumbing.Hash) (bool, error) {
	c, err := r.CommitObject(tip)
	if err != nil {
		return false, err
	}
	o, err := r.CommitObject(old)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return o.IsAncestor(c)
}

// moved re-reads origin's anchor and reports whether it moved past tip.
func (j *JournalAnchor) moved(ctx context.Context, r *git.Repository, tip *object.Commit) (bool, error) {
	now, err := j.tip(ctx, r, true)
	if err != nil || now == nil {
		return false, err
	}
	return tip == nil || now.Hash != tip.Hash, nil
}

// commit writes the commit that adds file to tip's tree (an empty tree
// for the first anchor), with tip as its parent.
func (j *JournalAnchor) commit(r *git.Repository, tip *object.Commit, file string, data []byte, h audit.SealedHead) (plumbing.Hash, error) {
	s := r.Storer
	blob, err := writeBlob(s, data)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("writing %s to %s: %w", file, j.loc.display, err)
	}
	root := plumbing.ZeroHash
	var parents []plumbing.Hash
	if tip != nil {
		root, parents = tip.TreeHash, []plumbing.Hash{tip.Hash}
	}
	tree, err := putInTree(s, root, strings.Split(file, "/"), blob)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("writing the tree for %s to %s: %w", file, j.loc.display, err)
	}
	sig := object.Signature{Name: j.a.name, Email: j.a.email, When: j.a.clock.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: anchorMessage(h, file), TreeHash: tree, ParentHashes: parents}
	obj := s.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encoding the anchor commit: %w", err)
	}
	hash, err := s.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("writing the anchor commit to %s: %w", j.loc.display, err)
	}
	return hash, nil
}

// anchorMessage says whose session the commit anchors, with trailers.
func anchorMessage(h audit.SealedHead, file string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "relcap: anchor session %s (%s by %s)\n\n", h.Head.Session, h.Head.Command, h.Head.Actor)
	fmt.Fprintf(&b, "The journal of session %s ends at entry %d, %s.\n", h.Head.Session, h.Head.Seq, h.Head.Hash)
	if h.Signed() {
		fmt.Fprintf(&b, "Signed by %s with key %s (namespace %s); the head and its signature are in %s.\n", h.Head.Actor, h.Signature.Key, approval.NamespaceJournal, file)
	} else {
		fmt.Fprintf(&b, "Unsigned: %s\n", h.Unsigned)
	}
	fmt.Fprintf(&b, "\nRelcap-Session: %s\nRelcap-Journal-Seq: %d\nRelcap-Journal-Hash: %s\n", h.Head.Session, h.Head.Seq, h.Head.Hash)
	return b.String()
}

// place is commit h of the anchor: written in place when the repository
// has no origin.
func (j *JournalAnchor) place(h plumbing.Hash, origin bool) audit.AnchorPlace {
	return audit.AnchorPlace{Ref: JournalRef.String(), Commit: h.String(), Repo: j.loc.display, InPlace: !origin}
}

// readAnchorFile reads file from c's tree, nil when absent.
func readAnchorFile(r *git.Repository, c *object.Commit, file string) ([]byte, error) {
	entry, err := findEntry(r, c.TreeHash, strings.Split(file, "/"))
	if err != nil || entry == nil {
		return nil, err
	}
	b, err := r.BlobObject(entry.Hash)
	if err != nil {
		return nil, fmt.Errorf("reading %s of %s: %w", file, JournalRef, err)
	}
	return readBlob(b)
}

func readBlob(b *object.Blob) ([]byte, error) {
	if b.Size > maxAnchorFile {
		return nil, fmt.Errorf("%d bytes is not an anchored head", b.Size)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}
