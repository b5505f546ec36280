package gitrepo

import (
	"context"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// maxSnapshotSize bounds what Snapshot reads: an environment repository is
// manifests and values files, megabytes at most.
const maxSnapshotSize = 64 << 20

// Snapshot is the content of an environment repository at the tip of its
// branch: what Argo CD renders.
type Snapshot struct {
	// Files are the regular files by slash-separated path from the
	// repository's root; symlinks and submodules are left out.
	Files map[string][]byte
	// Revision is the commit read.
	Revision string
}

// Snapshot reads every regular file of t's repository at the tip of
// t.Branch (for a clone: origin's, after a fetch), for rendering the
// application offline. It never checks anything out.
func (a *Adapter) Snapshot(ctx context.Context, t workflow.EnvRepoTarget) (Snapshot, error) {
	if err := checkTarget(t); err != nil {
		return Snapshot{}, err
	}
	loc, err := locate(t.Path)
	if err != nil {
		return Snapshot{}, err
	}
	unlock := a.lock(loc.key())
	defer unlock()
	r, err := a.open(ctx, loc)
	if err != nil {
		return Snapshot{}, loc.scrub(err)
	}
	base, err := baseCommit(r, loc, t.Branch)
	if err != nil {
		return Snapshot{}, err
	}
	tree, err := base.Tree()
	if err != nil {
		return Snapshot{}, fmt.Errorf("reading the tree of %s in %s: %w", base.Hash, loc.display, err)
	}
	snap := Snapshot{Files: map[string][]byte{}, Revision: base.Hash.String()}
	var total int64
	err = tree.Files().ForEach(func(f *object.File) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if f.Mode != filemode.Regular && f.Mode != filemode.Executable && f.Mode != filemode.Deprecated {
			return nil
		}
		if total += f.Size; total > maxSnapshotSize {
			return fmt.Errorf("%w: the environment repository %s holds more than %d MiB of files at %s; relcap renders manifests and values files, not that", fault.ErrUsage, loc.display, maxSnapshotSize>>20, base.Hash.String()[:7])
		}
		rd, err := f.Reader()
		if err != nil {
			return fmt.Errorf("reading %s: %w", f.Name, err)
		}
		defer rd.Close()
		data, err := io.ReadAll(rd)
		if err != nil {
			return fmt.Errorf("reading %s: %w", f.Name, err)
		}
		snap.Files[f.Name] = data
		return nil
	})
	if err != nil {
		return Snapshot{}, err
	}
	return snap, nil
}
