package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// Land merges the reviewed relcap branch of req into the environment's
// branch (req.Target.Branch), which Argo CD follows, and returns the commit
// that branch now points at: the revision the convergence watch waits for.
//
// When the environment branch has not moved since the relcap branch was cut,
// the branch is fast-forwarded to the reviewed commit itself. When it has
// moved on, Land writes a merge commit whose parents are the branch tip and
// the reviewed commit and whose tree is the tip's tree with the same pin
// applied to the file: the only change on a relcap branch is that pin, so
// this is the three-way merge, done without a working tree. If the branch
// already pins the digest, Land changes nothing and reports Existing.
//
// A local repository whose environment branch is checked out in a working
// tree is refused: moving the ref under a captain's checkout would leave it
// looking dirty. Use a bare repository or a clone URL for such an
// environment.
func (a *Adapter) Land(ctx context.Context, req workflow.PinRequest) (workflow.EnvChange, error) {
	st, err := a.prepare(ctx, req)
	if err != nil {
		return workflow.EnvChange{}, err
	}
	defer st.close()
	ch, err := a.land(ctx, st, req)
	return ch, st.loc.scrub(err)
}

func (a *Adapter) land(ctx context.Context, st *pinState, req workflow.PinRequest) (workflow.EnvChange, error) {
	target := baseRef(st.loc, req.Target.Branch)
	local := plumbing.NewBranchReferenceName(strings.TrimPrefix(req.Target.Branch, "refs/heads/"))
	before, mode, err := readFile(st.repo, st.base, st.file, req.Target.Branch, st.loc)
	if err != nil {
		return workflow.EnvChange{}, err
	}
	after, err := st.desired(before, req)
	if err != nil {
		return workflow.EnvChange{}, err
	}
	if string(before) == string(after) {
		return workflow.EnvChange{Branch: local.Short(), Commit: st.base.Hash.String(), Existing: true, Pushed: st.baseOnOrigin()}, nil
	}
	if st.existing == nil {
		return workflow.EnvChange{}, fmt.Errorf("%w: branch %s does not exist in %s: pin (promote) before landing", fault.ErrUsage, st.branch.Short(), st.loc.display)
	}
	if req.Reviewed != "" && st.existing.Hash.String() != req.Reviewed {
		// The approvals sign the pinned commit: what moved the branch since
		// was never reviewed, and landing it would ship it anyway.
		return workflow.EnvChange{}, fmt.Errorf("%w: branch %s moved after it was pinned and approved (approved %s, now at %s): what was reviewed is not what would land; reset the branch to %s (git push --force-with-lease origin %s:%s) or roll the change into a new release",
			fault.ErrBlocked, st.branch.Short(), workflow.ShortHash(req.Reviewed), workflow.ShortHash(st.existing.Hash.String()), workflow.ShortHash(req.Reviewed), req.Reviewed, st.branch.Short())
	}
	if err := st.refuseCheckedOut(local); err != nil {
		return workflow.EnvChange{}, err
	}
	diff, err := unifiedDiff(st.file, mode, before, after)
	if err != nil {
		return workflow.EnvChange{}, fmt.Errorf("diff of %s: %w", st.file, err)
	}
	newTip := st.existing.Hash
	if ff, err := st.base.IsAncestor(st.existing); err != nil {
		return workflow.EnvChange{}, fmt.Errorf("comparing %s with %s: %w", local.Short(), st.branch.Short(), err)
	} else if !ff {
		if newTip, err = a.mergeCommit(st, req, after); err != nil {
			return workflow.EnvChange{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return workflow.EnvChange{}, fmt.Errorf("land %s: %w", st.branch.Short(), err)
	}
	ch := workflow.EnvChange{Branch: local.Short(), Commit: newTip.String(), Diff: diff}
	if st.loc.url != "" {
		// A clone: origin's branch is the truth. Push the new tip there,
		// refusing a non-fast-forward (someone landed meanwhile: landing
		// again re-reads it).
		spec := config.RefSpec(newTip.String() + ":" + local.String())
		err := a.remote(ctx, st.loc, func(auth transport.AuthMethod) error {
			return st.repo.PushContext(ctx, &git.PushOptions{RemoteName: "origin", RemoteURL: st.loc.url, RefSpecs: []config.RefSpec{spec}, Auth: auth})
		})
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return workflow.EnvChange{}, fmt.Errorf("pushing %s to origin of %s: %w; land again to retry", local.Short(), st.loc.display, err)
		}
		ch.Pushed = true
		_ = st.repo.Storer.SetReference(plumbing.NewHashReference(target, newTip))
		return ch, nil
	}
	if err := st.repo.Storer.SetReference(plumbing.NewHashReference(local, newTip)); err != nil {
		return workflow.EnvChange{}, fmt.Errorf("moving %s in %s: %w", local.Short(), st.loc.display, err)
	}
	return a.pushRef(ctx, st, local, ch)
}

// mergeCommit writes the merge of the reviewed branch into the moved-on
// environment branch: the tip's tree with the pinned file.
func (a *Adapter) mergeCommit(st *pinState, req workflow.PinRequest, after []byte) (plumbing.Hash, error) {
	s := st.repo.Storer
	blob, err := writeBlob(s, after)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("writing %s: %w", st.file, err)
	}
	tree, err := replaceInTree(s, st.base.TreeHash, strings.Split(st.file, "/"), blob)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("writing the tree for %s: %w", st.file, err)
	}
	sig := object.Signature{Name: a.name, Email: a.email, When: a.clock.Now()}
	c := &object.Commit{
		Author: sig, Committer: sig, TreeHash: tree,
		Message:      fmt.Sprintf("relcap: land %s into %s\n\nRelcap-Release: %s\nRelcap-Environment: %s\nRelcap-Digest: %s\n", st.branch.Short(), req.Target.Branch, req.ReleaseID, req.Env, req.Digest),
		ParentHashes: []plumbing.Hash{st.base.Hash, st.existing.Hash},
	}
	obj := s.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encoding the merge commit: %w", err)
	}
	return s.SetEncodedObject(obj)
}

// refuseCheckedOut refuses to move a branch checked out in a working tree.
func (st *pinState) refuseCheckedOut(branch plumbing.ReferenceName) error {
	if st.loc.dir == "" {
		return nil
	}
	if _, err := st.repo.Worktree(); errors.Is(err, git.ErrIsBareRepository) {
		return nil
	}
	head, err := st.repo.Storer.Reference(plumbing.HEAD)
	if err != nil || head.Type() != plumbing.SymbolicReference || head.Target() != branch {
		return nil
	}
	return fmt.Errorf("%w: %s is checked out in %s; relcap will not move it under a working tree: point envrepo.path at a bare repository or a clone URL, or merge %s yourself",
		fault.ErrBlocked, branch.Short(), st.loc.display, st.branch.Short())
}

// pushRef pushes a local repository's branch to its origin, if it has one.
func (a *Adapter) pushRef(ctx context.Context, st *pinState, ref plumbing.ReferenceName, ch workflow.EnvChange) (workflow.EnvChange, error) {
	if !st.hasOrigin {
		return ch, nil
	}
	spec := config.RefSpec(ref.String() + ":" + ref.String())
	err := st.repo.PushContext(ctx, &git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: a.auth})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return ch, fmt.Errorf("pushing %s to origin of %s: %w", ref.Short(), st.loc.display, err)
	}
	ch.Pushed = true
	return ch, nil
}
