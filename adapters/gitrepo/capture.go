package gitrepo

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/fault"
)

var _ breakglass.Capturer = (*Adapter)(nil)

// Capture writes req.Content to req.Path on a new branch relcap/<env>/<id>
// cut from the environment branch, commits it and pushes the branch when
// there is an origin: a change for review (a break-glass hotfix captured
// back into Git), never landed by relcap. Like Pin it touches no working
// tree, and capturing again with the same content returns the branch.
func (a *Adapter) Capture(ctx context.Context, req breakglass.CaptureRequest) (workflow.EnvChange, error) {
	file := cleanFile(req.Path)
	if req.Path == "" || path.IsAbs(file) || file == ".." || strings.HasPrefix(file, "../") || strings.HasPrefix(file, ".git/") {
		return workflow.EnvChange{}, fmt.Errorf("%w: capture path %q: want a path inside the environment repository", fault.ErrUsage, req.Path)
	}
	pin := workflow.PinRequest{Env: req.Env, ReleaseID: req.ID, Target: req.Target}
	if err := branchName(pin).Validate(); err != nil {
		return workflow.EnvChange{}, fmt.Errorf("%w: capture branch for %s/%s is not a valid branch name", fault.ErrUsage, req.Env, req.ID)
	}
	loc, err := locate(req.Target.Path)
	if err != nil {
		return workflow.EnvChange{}, err
	}
	unlock := a.lock(loc.key())
	defer unlock()
	r, err := a.open(ctx, loc)
	if err != nil {
		return workflow.EnvChange{}, loc.scrub(err)
	}
	base, err := baseCommit(r, loc, req.Target.Branch)
	if err != nil {
		return workflow.EnvChange{}, err
	}
	st := &pinState{repo: r, loc: loc, branch: branchName(pin), base: base, file: file}
	if _, err := r.Remote("origin"); err == nil {
		st.hasOrigin = true
	}
	if err := st.findExisting(); err != nil {
		return workflow.EnvChange{}, err
	}
	diff, err := unifiedDiff(file, filemode.Regular, nil, req.Content)
	if err != nil {
		return workflow.EnvChange{}, err
	}
	if st.existing != nil {
		return a.push(ctx, st, workflow.EnvChange{Branch: st.branch.Short(), Commit: st.existing.Hash.String(), Diff: diff, Existing: true})
	}
	s := r.Storer
	blob, err := writeBlob(s, req.Content)
	if err != nil {
		return workflow.EnvChange{}, fmt.Errorf("writing %s: %w", file, err)
	}
	tree, err := putInTree(s, base.TreeHash, strings.Split(file, "/"), blob)
	if err != nil {
		return workflow.EnvChange{}, fmt.Errorf("writing the tree for %s: %w", file, err)
	}
	sig := object.Signature{Name: a.name, Email: a.email, When: a.clock.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: strings.TrimRight(req.Message, "\n") + "\n", TreeHash: tree, ParentHashes: []plumbing.Hash{base.Hash}}
	obj := s.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return workflow.EnvChange{}, fmt.Errorf("encoding the commit: %w", err)
	}
	hash, err := s.SetEncodedObject(obj)
	if err != nil {
		return workflow.EnvChange{}, fmt.Errorf("writing the commit: %w", err)
	}
	if err := s.SetReference(plumbing.NewHashReference(st.branch, hash)); err != nil {
		return workflow.EnvChange{}, fmt.Errorf("creating branch %s: %w", st.branch.Short(), err)
	}
	ch, err := a.push(ctx, st, workflow.EnvChange{Branch: st.branch.Short(), Commit: hash.String(), Diff: diff})
	return ch, loc.scrub(err)
}

// putInTree is replaceInTree that also creates the file and any missing
// directories, keeping entries in git's order (a directory sorts as if its
// name ended in "/").
func putInTree(s storer.EncodedObjectStorer, root plumbing.Hash, parts []string, blob plumbing.Hash) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	if !root.IsZero() {
		t, err := object.GetTree(s, root)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = slices.Clone(t.Entries)
	}
	i := slices.IndexFunc(entries, func(e object.TreeEntry) bool { return e.Name == parts[0] })
	switch {
	case len(parts) == 1 && i >= 0:
		entries[i] = object.TreeEntry{Name: parts[0], Mode: filemode.Regular, Hash: blob}
	case len(parts) == 1:
		entries = append(entries, object.TreeEntry{Name: parts[0], Mode: filemode.Regular, Hash: blob})
	default:
		sub := plumbing.ZeroHash
		if i >= 0 {
			if entries[i].Mode != filemode.Dir {
				return plumbing.ZeroHash, fmt.Errorf("%s is not a directory", parts[0])
			}
			sub = entries[i].Hash
		}
		h, err := putInTree(s, sub, parts[1:], blob)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if i >= 0 {
			entries[i].Hash = h
		} else {
			entries = append(entries, object.TreeEntry{Name: parts[0], Mode: filemode.Dir, Hash: h})
		}
	}
	slices.SortFunc(entries, func(a, b object.TreeEntry) int { return strings.Compare(gitSortName(a), gitSortName(b)) })
	obj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

func gitSortName(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}
