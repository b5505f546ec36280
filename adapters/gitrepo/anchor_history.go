package gitrepo

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/fault"
)

// treeCacheSize bounds the trees a history walk keeps decoded: walking a
// chain, a commit's trees are needed again only for its child's diff.
const treeCacheSize = 64

// historyWalk reads every commit of JournalRef once, parents before
// children, diffing each one's sessions/ tree against its parents' (equal
// subtrees skipped by hash), and each anchor file's blob once.
type historyWalk struct {
	ctx context.Context
	r   *git.Repository
	j   *JournalAnchor

	trees     map[plumbing.Hash][]object.TreeEntry
	treeOrder []plumbing.Hash
	heads     map[string]audit.AnchoredHead // blob hash + path → its head, checked
	// first is each anchor file as first written: its blob and commit.
	first map[string]firstWritten
	// erased is each file's first erasure: the commit that removed it or
	// changed it from its first content.
	erased map[string]erasure
}

type firstWritten struct {
	blob   plumbing.Hash
	commit plumbing.Hash
}

type erasure struct {
	by      *object.Commit
	changed bool
}

func newHistoryWalk(ctx context.Context, r *git.Repository, j *JournalAnchor) *historyWalk {
	return &historyWalk{
		ctx: ctx, r: r, j: j,
		trees: map[plumbing.Hash][]object.TreeEntry{}, heads: map[string]audit.AnchoredHead{},
		first: map[string]firstWritten{}, erased: map[string]erasure{},
	}
}

// walk fills out with tip's heads, every commit reachable from tip, and
// what the tip no longer holds as first written.
func (w *historyWalk) walk(tip *object.Commit, out *audit.AnchorHistory) error {
	order, commits, err := w.topological(tip)
	if err != nil {
		return err
	}
	for _, h := range order {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		c := commits[h]
		out.Commits[h.String()] = true
		now, err := w.sessionsTree(c)
		if err != nil {
			return err
		}
		parents := c.ParentHashes
		if len(parents) == 0 {
			parents = []plumbing.Hash{plumbing.ZeroHash}
		}
		for _, p := range parents {
			before := plumbing.ZeroHash
			if !p.IsZero() {
				if before, err = w.sessionsTree(commits[p]); err != nil {
					return err
				}
			}
			err := w.diff("sessions", before, now, func(file string, old, cur plumbing.Hash) error {
				return w.event(c, file, old, cur)
			})
			if err != nil {
				return err
			}
		}
	}
	tipTree, err := w.sessionsTree(tip)
	if err != nil {
		return err
	}
	held := map[string]plumbing.Hash{}
	err = w.diff("sessions", plumbing.ZeroHash, tipTree, func(file string, _, cur plumbing.Hash) error {
		held[file] = cur
		h, err := w.head(file, cur)
		if err == nil && h != nil {
			out.Heads = append(out.Heads, *h)
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(out.Heads, func(a, b audit.AnchoredHead) int { return strings.Compare(a.Head.Session, b.Head.Session) })
	for _, file := range slices.Sorted(maps.Keys(w.first)) {
		f := w.first[file]
		if held[file] == f.blob {
			continue // removed or changed once, and restored as written
		}
		e, ok := w.erased[file]
		if !ok {
			continue
		}
		h, err := w.head(file, f.blob)
		if err != nil {
			return err
		}
		if h == nil {
			continue // not an anchor file
		}
		out.Erased = append(out.Erased, audit.ErasedAnchor{
			File: file, Head: *h, AddedIn: f.commit.String(), By: e.by.Hash.String(),
			Author: e.by.Author.Name + " <" + e.by.Author.Email + ">", At: e.by.Committer.When,
			Changed: e.changed, Subject: firstLine(e.by.Message),
		})
	}
	return nil
}

// event notes file going from blob old to cur in commit c (zero for
// absent).
func (w *historyWalk) event(c *object.Commit, file string, _, cur plumbing.Hash) error {
	if path.Ext(file) != ".json" {
		return nil // not an anchor file
	}
	if !cur.IsZero() {
		if _, err := w.head(file, cur); err != nil {
			return err
		}
	}
	f, seen := w.first[file]
	if !seen {
		if !cur.IsZero() {
			w.first[file] = firstWritten{blob: cur, commit: c.Hash}
		}
		return nil
	}
	if _, ok := w.erased[file]; ok || cur == f.blob {
		return nil
	}
	w.erased[file] = erasure{by: c, changed: !cur.IsZero()}
	return nil
}

// head reads and checks the anchor file at file with blob b, once per
// pair; nil for a file that is not an anchor file (outside sessions/ or
// not .json).
func (w *historyWalk) head(file string, b plumbing.Hash) (*audit.AnchoredHead, error) {
	if path.Ext(file) != ".json" {
		return nil, nil
	}
	key := b.String() + " " + file
	if h, ok := w.heads[key]; ok {
		return &h, nil
	}
	blob, err := w.r.BlobObject(b)
	if err != nil {
		return nil, fmt.Errorf("reading %s (%s) of %s in %s: %w", file, b, JournalRef, w.j.loc.display, err)
	}
	data, err := readBlob(blob)
	if err != nil {
		return nil, fmt.Errorf("reading %s of %s in %s: %w", file, JournalRef, w.j.loc.display, err)
	}
	var h audit.AnchoredHead
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("%w: %s (blob %s) of %s is not an anchored head (%v): it was edited outside relcap", fault.ErrTampered, file, b, w.j.Where(), err)
	}
	if AnchorFile(h.Head.Session) != file {
		return nil, fmt.Errorf("%w: %s (blob %s) of %s holds the head of session %q: it was edited outside relcap", fault.ErrTampered, file, b, w.j.Where(), h.Head.Session)
	}
	w.heads[key] = h
	return &h, nil
}

// topological lists every commit reachable from tip, parents before
// children, each once.
func (w *historyWalk) topological(tip *object.Commit) ([]plumbing.Hash, map[plumbing.Hash]*object.Commit, error) {
	commits := map[plumbing.Hash]*object.Commit{tip.Hash: tip}
	done := map[plumbing.Hash]bool{}
	expanded := map[plumbing.Hash]bool{}
	var order []plumbing.Hash
	stack := []plumbing.Hash{tip.Hash}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		switch {
		case done[h]:
			stack = stack[:len(stack)-1]
		case expanded[h]:
			stack = stack[:len(stack)-1]
			done[h] = true
			order = append(order, h)
		default:
			expanded[h] = true
			for _, p := range commits[h].ParentHashes {
				if done[p] {
					continue
				}
				if _, ok := commits[p]; !ok {
					c, err := w.r.CommitObject(p)
					if err != nil {
						return nil, nil, fmt.Errorf("reading commit %s of the history of %s in %s: %w", p, JournalRef, w.j.loc.display, err)
					}
					commits[p] = c
				}
				stack = append(stack, p)
			}
		}
	}
	return order, commits, nil
}

// sessionsTree is the hash of c's sessions/ tree, zero when it has none.
func (w *historyWalk) sessionsTree(c *object.Commit) (plumbing.Hash, error) {
	entries, err := w.tree(c.TreeHash)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for _, e := range entries {
		if e.Name == "sessions" && e.Mode == filemode.Dir {
			return e.Hash, nil
		}
	}
	return plumbing.ZeroHash, nil
}

// tree is tree h's entries, from a small cache.
func (w *historyWalk) tree(h plumbing.Hash) ([]object.TreeEntry, error) {
	if h.IsZero() {
		return nil, nil
	}
	if t, ok := w.trees[h]; ok {
		return t, nil
	}
	t, err := w.r.TreeObject(h)
	if err != nil {
		return nil, fmt.Errorf("reading tree %s of %s in %s: %w", h, JournalRef, w.j.loc.display, err)
	}
	if len(w.treeOrder) >= treeCacheSize {
		delete(w.trees, w.treeOrder[0])
		w.treeOrder = w.treeOrder[1:]
	}
	w.trees[h] = t.Entries
	w.treeOrder = append(w.treeOrder, h)
	return t.Entries, nil
}

// diff calls fn for each file under dir that differs between trees a and
// b (zero for none), with its blob on each side (zero where absent);
// subtrees with equal hashes are skipped.
func (w *historyWalk) diff(dir string, a, b plumbing.Hash, fn func(file string, old, cur plumbing.Hash) error) error {
	if a == b {
		return nil
	}
	ea, err := w.tree(a)
	if err != nil {
		return err
	}
	eb, err := w.tree(b)
	if err != nil {
		return err
	}
	// Git keeps a tree's entries sorted by name, a directory's as if it
	// ended in "/": one merge of the two lists finds what differs.
	for i, k := 0, 0; i < len(ea) || k < len(eb); {
		var x, y *object.TreeEntry
		switch {
		case k == len(eb):
			x = &ea[i]
		case i == len(ea):
			y = &eb[k]
		default:
			switch c := strings.Compare(entryKey(ea[i]), entryKey(eb[k])); {
			case c < 0:
				x = &ea[i]
			case c > 0:
				y = &eb[k]
			default:
				x, y = &ea[i], &eb[k]
			}
		}
		if x != nil {
			i++
		}
		if y != nil {
			k++
		}
		if x != nil && y != nil && x.Hash == y.Hash {
			continue
		}
		name, dirEntry, old, cur := "", false, plumbing.ZeroHash, plumbing.ZeroHash
		if x != nil {
			name, dirEntry, old = x.Name, x.Mode == filemode.Dir, x.Hash
		}
		if y != nil {
			name, dirEntry, cur = y.Name, y.Mode == filemode.Dir, y.Hash
		}
		var err error
		if dirEntry {
			err = w.diff(dir+"/"+name, old, cur, fn)
		} else {
			err = fn(dir+"/"+name, old, cur)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// entryKey is what git sorts a tree's entries by.
func entryKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
