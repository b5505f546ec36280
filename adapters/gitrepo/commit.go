package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/relcap/relcap/workflow"
)

// pin makes (or finds) the commit and pushes it.
func (a *Adapter) pin(ctx context.Context, st *pinState, req workflow.PinRequest) (workflow.EnvChange, error) {
	if st.existing != nil {
		diff, err := st.existingDiff(req)
		if err != nil {
			return workflow.EnvChange{}, err
		}
		ch := workflow.EnvChange{Branch: st.branch.Short(), Commit: st.existing.Hash.String(), Diff: diff, Existing: true}
		if st.remoteTip == st.existing.Hash {
			ch.Pushed = true // origin has it, as just fetched
			return ch, nil
		}
		if st.loc.url != "" {
			// Origin lacks the branch but its base branch holds the
			// commit: the change was merged and the branch deleted.
			// Pushing it again would only resurrect the branch.
			if merged, err := st.existing.IsAncestor(st.base); err == nil && merged {
				ch.Pushed = true
				return ch, nil
			}
		}
		// The branch exists only here: an earlier push failed (or, for a
		// checkout, origin is ours to update). Push it now.
		return a.push(ctx, st, ch)
	}
	if string(st.before) == string(st.after) {
		// The base branch already pins the digest: nothing to commit, and
		// an empty commit would only add noise to review.
		return workflow.EnvChange{Branch: req.Target.Branch, Commit: st.base.Hash.String(), Existing: true, Pushed: st.baseOnOrigin()}, nil
	}
	if err := ctx.Err(); err != nil {
		return workflow.EnvChange{}, fmt.Errorf("pin in %s: %w", st.loc.display, err)
	}
	diff, err := unifiedDiff(st.file, st.mode, st.before, st.after)
	if err != nil {
		return workflow.EnvChange{}, fmt.Errorf("diff of %s: %w", st.file, err)
	}
	// Plumbing only: write the blob, the trees on the path to the file and
	// the commit, then create the branch ref. Checking the branch out (as
	// go-git's Worktree.Commit requires) would rewrite the captain's
	// working tree, index and HEAD under them; this changes none of them.
	s := st.repo.Storer
	blob, err := writeBlob(s, st.after)
	if err != nil {
		return workflow.EnvChange{}, fmt.Errorf("writing %s to %s: %w", st.file, st.loc.display, err)
	}
	tree, err := replaceInTree(s, st.base.TreeHash, strings.Split(st.file, "/"), blob)
	if err != nil {
		return workflow.EnvChange{}, fmt.Errorf("writing the tree for %s to %s: %w", st.file, st.loc.display, err)
	}
	sig := object.Signature{Name: a.name, Email: a.email, When: a.clock.Now()}
	c := &object.Commit{
		Author:       sig,
		Committer:    sig,
		Message:      commitMessage(req, st.file),
		TreeHash:     tree,
		ParentHashes: []plumbing.Hash{st.base.Hash},
	}
	obj := s.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return workflow.EnvChange{}, fmt.Errorf("encoding the commit: %w", err)
	}
	hash, err := s.SetEncodedObject(obj)
	if err != nil {
		return workflow.EnvChange{}, fmt.Errorf("writing the commit to %s: %w", st.loc.display, err)
	}
	if err := s.SetReference(plumbing.NewHashReference(st.branch, hash)); err != nil {
		return workflow.EnvChange{}, fmt.Errorf("creating branch %s in %s: %w", st.branch.Short(), st.loc.display, err)
	}
	return a.push(ctx, st, workflow.EnvChange{Branch: st.branch.Short(), Commit: hash.String(), Diff: diff})
}

// push sends the relcap branch to origin, when there is one: always for a
// clone, and for a local checkout when it has a remote named origin. It
// never forces: a branch that moved on origin is reported, not overwritten.
func (a *Adapter) push(ctx context.Context, st *pinState, ch workflow.EnvChange) (workflow.EnvChange, error) {
	if !st.hasOrigin {
		return ch, nil
	}
	spec := config.RefSpec(st.branch.String() + ":" + st.branch.String())
	err := a.remote(ctx, st.loc, func(auth transport.AuthMethod) error {
		return st.repo.PushContext(ctx, &git.PushOptions{
			RemoteName: "origin",
			RemoteURL:  st.loc.url,
			RefSpecs:   []config.RefSpec{spec},
			Auth:       auth,
		})
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		ch.Pushed = true
		return ch, nil
	case ctx.Err() != nil:
		return ch, fmt.Errorf("pushing %s to origin: %w", ch.Branch, ctx.Err())
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return ch, fmt.Errorf("pushing %s to origin of %s: %w (store credentials for the host in git's credential helper, use an ssh URL with an agent, or push it yourself with git push origin %s)", ch.Branch, st.loc.display, err, ch.Branch)
	}
	return ch, fmt.Errorf("pushing %s to origin of %s: %w", ch.Branch, st.loc.display, err)
}

func writeBlob(s storer.EncodedObjectStorer, data []byte) (plumbing.Hash, error) {
	obj := s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

// replaceInTree writes new trees from root down to the entry at parts,
// which now points at blob, and returns the new root. Only hashes change,
// so the entries stay in git's order.
func replaceInTree(s storer.EncodedObjectStorer, root plumbing.Hash, parts []string, blob plumbing.Hash) (plumbing.Hash, error) {
	t, err := object.GetTree(s, root)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	entries := slices.Clone(t.Entries)
	i := slices.IndexFunc(entries, func(e object.TreeEntry) bool { return e.Name == parts[0] })
	if i < 0 {
		return plumbing.ZeroHash, fmt.Errorf("no entry %s in tree %s", parts[0], root)
	}
	if len(parts) == 1 {
		entries[i].Hash = blob
	} else {
		if entries[i].Mode != filemode.Dir {
			return plumbing.ZeroHash, fmt.Errorf("%s is not a directory", parts[0])
		}
		sub, err := replaceInTree(s, entries[i].Hash, parts[1:], blob)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[i].Hash = sub
	}
	obj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

// commitMessage says what was pinned, where, for which release and from
// where, with trailers a later relcap (rollback, audit) can read; an
// explicit req.Message (rollback, break-glass) replaces it.
func commitMessage(req workflow.PinRequest, file string) string {
	if req.Message != "" {
		return strings.TrimRight(req.Message, "\n") + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "relcap: pin %s@%s in %s (release %s)\n\n", req.Image, req.Digest.Short(), req.Env, req.ReleaseID)
	fmt.Fprintf(&b, "Pin %s@%s\nin %s for release %s in %s.\n", req.Image, req.Digest, file, req.ReleaseID, req.Env)
	if req.Source != "" {
		fmt.Fprintf(&b, "The digest was promoted from %s.\n", req.Source)
	}
	b.WriteString("Committed by relcap.\n\n")
	fmt.Fprintf(&b, "Relcap-Release: %s\nRelcap-Environment: %s\nRelcap-Digest: %s\n", req.ReleaseID, req.Env, req.Digest)
	if req.Source != "" {
		fmt.Fprintf(&b, "Relcap-Source: %s\n", req.Source)
	}
	return b.String()
}

// baseOnOrigin reports whether the base branch is known to be on origin:
// for a clone it was fetched from there; for a local checkout nobody knows.
func (st *pinState) baseOnOrigin() bool { return st.loc.url != "" }
