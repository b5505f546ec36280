// Package gitrepo implements workflow.EnvRepo over go-git: it pins an image
// digest in a file of the environment repository (a kustomization, a Helm
// values file or plain Kubernetes manifests) on a branch of its own,
// relcap/<env>/<release-id>, commits and pushes it for review. No go-git
// type leaves the package.
//
// The environment repository is either a local checkout, used in place, or
// a clone URL, cloned (bare) into a cache directory and fetched before every
// use. Either way relcap commits with go-git plumbing: it writes the blob,
// the trees and the commit object and moves only its own branch ref. It
// never checks anything out, so a captain's working tree, index and HEAD are
// exactly as they were.
//
// The YAML edits (PinKustomize, PinHelmValues, PinManifest) are pure
// functions, exported for reuse and fuzzing; CurrentPin reads back what a
// file pins.
package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

var _ workflow.EnvRepo = (*Adapter)(nil)

// Default commit identity, used when Options leave it out.
const (
	DefaultAuthorName  = "relcap"
	DefaultAuthorEmail = "relcap@localhost"
)

// BranchPrefix starts every branch relcap creates.
const BranchPrefix = "relcap/"

// Options configure an Adapter.
type Options struct {
	// WorkDir caches clones of environment repositories given by URL, e.g.
	// $XDG_CACHE_HOME/relcap/envrepos. It is created with mode 0700 on first
	// use. Empty refuses URL targets; local checkouts need no cache.
	WorkDir string
	// AuthorName and AuthorEmail sign relcap's commits as author and
	// committer; empty means DefaultAuthorName and DefaultAuthorEmail.
	AuthorName  string
	AuthorEmail string
	// Auth authenticates fetch and push. Nil means go-git's defaults: the
	// SSH agent for ssh URLs, and no credentials otherwise (go-git does not
	// read git's credential helpers).
	Auth transport.AuthMethod
	// Credentials, when set and Auth is not, answers an http(s) origin
	// that asks for credentials the URL does not carry (cmd/relcap asks
	// git's credential helper, as git push does).
	Credentials Credentials
	// Clock stamps commits; nil means the wall clock.
	Clock workflow.Clock
}

// Adapter pins digests in environment repositories. It is safe for
// concurrent use; operations on the same repository are serialized within
// the process.
type Adapter struct {
	workDir string
	name    string
	email   string
	auth    transport.AuthMethod
	clock   workflow.Clock

	credentials Credentials

	mu    sync.Mutex
	locks map[string]*sync.Mutex
	// found are the credentials Credentials gave, by location key.
	found map[string]transport.AuthMethod
}

// New validates opts and returns an Adapter; bad options wrap
// fault.ErrUsage.
func New(opts Options) (*Adapter, error) {
	a := &Adapter{
		name:  opts.AuthorName,
		email: opts.AuthorEmail,
		auth:  opts.Auth,
		clock: opts.Clock,
		locks: map[string]*sync.Mutex{},
		found: map[string]transport.AuthMethod{},

		credentials: opts.Credentials,
	}
	if a.name == "" {
		a.name = DefaultAuthorName
	}
	if a.email == "" {
		a.email = DefaultAuthorEmail
	}
	// A commit header is "author Name <email> time zone"; these characters
	// would forge or break it.
	if strings.ContainsAny(a.name, "<>\n\r\x00") || strings.ContainsAny(a.email, "<>\n\r\x00 ") {
		return nil, fmt.Errorf("%w: git adapter: author %q <%s> cannot appear in a commit", fault.ErrUsage, a.name, a.email)
	}
	if opts.WorkDir != "" {
		dir, err := filepath.Abs(opts.WorkDir)
		if err != nil {
			return nil, fmt.Errorf("%w: git adapter: work directory %s: %w", fault.ErrUsage, opts.WorkDir, err)
		}
		a.workDir = dir
	}
	if a.clock == nil {
		a.clock = workflow.SystemClock{}
	}
	return a, nil
}

// Pin creates branch relcap/<env>/<release-id> from the tip of
// req.Target.Branch (for a clone: origin's branch as just fetched), pins
// req.Image@req.Digest in req.Target.File on it, commits, and pushes the
// branch to origin when there is one. It returns the branch, the full
// commit hash and the file's diff.
//
// It is idempotent: when the branch exists and already pins the digest it
// returns that commit with Existing set, pushing it if origin lacks it
// (unless, for a clone, origin's base branch already contains it: merged,
// and the branch deleted); when the branch pins something else it fails
// with fault.ErrBlocked.
// When Target.Branch itself already pins the digest there is nothing to
// commit: it returns Target.Branch and its tip with Existing set and no
// diff. Files that cannot be pinned fail with an *EditError, which wraps
// fault.ErrUsage. A failed push returns the change (Pushed false) with
// the error; calling Pin again retries the push.
func (a *Adapter) Pin(ctx context.Context, req workflow.PinRequest) (workflow.EnvChange, error) {
	st, err := a.prepare(ctx, req)
	if err != nil {
		return workflow.EnvChange{}, err
	}
	defer st.close()
	ch, err := a.pin(ctx, st, req)
	return ch, st.loc.scrub(err)
}

// Preview computes the change Pin would make and returns its branch and
// diff, writing nothing to the repository: no object, no branch, no commit.
// For a clone URL it does fetch into the cache, so the diff is against
// origin as it is now. Like Pin, it reports an existing branch that already
// pins the digest with Existing set, and refuses one that pins something
// else.
func (a *Adapter) Preview(ctx context.Context, req workflow.PinRequest) (workflow.EnvChange, error) {
	st, err := a.prepare(ctx, req)
	if err != nil {
		return workflow.EnvChange{}, err
	}
	defer st.close()
	if st.existing != nil {
		diff, err := st.existingDiff(req)
		if err != nil {
			return workflow.EnvChange{}, st.loc.scrub(err)
		}
		return workflow.EnvChange{Branch: st.branch.Short(), Commit: st.existing.Hash.String(), Diff: diff, Existing: true}, nil
	}
	if string(st.before) == string(st.after) {
		return workflow.EnvChange{Branch: req.Target.Branch, Commit: st.base.Hash.String(), Existing: true, Pushed: st.baseOnOrigin()}, nil
	}
	diff, err := unifiedDiff(st.file, st.mode, st.before, st.after)
	if err != nil {
		return workflow.EnvChange{}, fmt.Errorf("diff of %s: %w", st.file, err)
	}
	return workflow.EnvChange{Branch: st.branch.Short(), Diff: diff}, nil
}

// Pinned reads the reference that t.File pins on the tip of t.Branch (for
// a clone: origin's, after a fetch), as CurrentPin does; repo is the
// repository the environment pulls from, which manifests may already name.
// Rollback and break-glass use it to see what an environment runs.
func (a *Adapter) Pinned(ctx context.Context, t workflow.EnvRepoTarget, repo string) (Ref, error) {
	if err := checkTarget(t); err != nil {
		return Ref{}, err
	}
	loc, err := locate(t.Path)
	if err != nil {
		return Ref{}, err
	}
	unlock := a.lock(loc.key())
	defer unlock()
	r, err := a.open(ctx, loc)
	if err != nil {
		return Ref{}, loc.scrub(err)
	}
	base, err := baseCommit(r, loc, t.Branch)
	if err != nil {
		return Ref{}, err
	}
	file := cleanFile(t.File)
	data, _, err := readFile(r, base, file, t.Branch, loc)
	if err != nil {
		return Ref{}, err
	}
	ref, err := CurrentPin(data, t, repo)
	return ref, withFile(err, file)
}

// pinState is what Pin and Preview share: the repository opened (and
// locked), the base commit, the file before and after the edit, and the
// relcap branch if it exists.
type pinState struct {
	repo   *git.Repository
	loc    location
	branch plumbing.ReferenceName
	base   *object.Commit
	file   string
	mode   filemode.FileMode
	before []byte
	after  []byte
	// existing is the tip of the relcap branch when it exists, preferring
	// origin's copy of it; remoteTip is origin's tip as last fetched (clones
	// only), zero when unknown.
	existing  *object.Commit
	restored  []byte // the file at req.RestoreFrom, for a rollback
	remoteTip plumbing.Hash
	hasOrigin bool
	close     func()
}

func (a *Adapter) prepare(ctx context.Context, req workflow.PinRequest) (*pinState, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	t := req.Target
	loc, err := locate(t.Path)
	if err != nil {
		return nil, err
	}
	st := &pinState{loc: loc, file: cleanFile(t.File), branch: branchName(req)}
	st.close = a.lock(loc.key())
	ok := false
	defer func() {
		if !ok {
			st.close()
		}
	}()
	if st.repo, err = a.open(ctx, loc); err != nil {
		return nil, loc.scrub(err)
	}
	if st.base, err = baseCommit(st.repo, loc, t.Branch); err != nil {
		return nil, err
	}
	if _, err := st.repo.Remote("origin"); err == nil {
		st.hasOrigin = true
	} else if !errors.Is(err, git.ErrRemoteNotFound) {
		return nil, fmt.Errorf("reading remotes of %s: %w", loc.display, err)
	}
	if err := st.findExisting(); err != nil {
		return nil, err
	}
	if req.RestoreFrom != "" {
		if st.restored, err = st.restoredFile(req); err != nil {
			return nil, err
		}
	}
	if st.existing != nil {
		// Resuming: the branch decides, whatever the base holds now (it
		// may have moved on, or had the pin merged).
		if err := st.checkExisting(req); err != nil {
			return nil, err
		}
		ok = true
		return st, nil
	}
	if st.before, st.mode, err = readFile(st.repo, st.base, st.file, t.Branch, loc); err != nil {
		return nil, err
	}
	if st.after, err = st.desired(st.before, req); err != nil {
		return nil, err
	}
	ok = true
	return st, nil
}

// desired is what the file should hold after the change: data with the
// digest pinned or, for a rollback, the file as it was at RestoreFrom.
func (st *pinState) desired(data []byte, req workflow.PinRequest) ([]byte, error) {
	if st.restored != nil {
		data = st.restored
	}
	out, err := PinFile(data, req.Target, req.Image, req.Digest)
	if err != nil {
		return nil, withFile(err, st.file)
	}
	return out, nil
}

// restoredFile reads the file as it was at req.RestoreFrom.
func (st *pinState) restoredFile(req workflow.PinRequest) ([]byte, error) {
	h, err := st.repo.ResolveRevision(plumbing.Revision(req.RestoreFrom))
	var c *object.Commit
	if err == nil {
		c, err = st.repo.CommitObject(*h)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: commit %s, where release %s's environment converged, is not in %s (%v); promote its digest %s@%s instead to pin the digest alone",
			fault.ErrNotFound, workflow.ShortHash(req.RestoreFrom), req.ReleaseID, st.loc.display, err, req.Image, req.Digest)
	}
	data, _, err := readFile(st.repo, c, st.file, workflow.ShortHash(req.RestoreFrom), st.loc)
	return data, err
}

// checkRequest refuses requests that cannot be pinned, before any I/O.
func checkRequest(req workflow.PinRequest) error {
	if req.Digest.IsZero() {
		return fmt.Errorf("%w: refusing to pin release %s in %s without a digest: relcap pins digests, never tags", fault.ErrUsage, req.ReleaseID, req.Env)
	}
	if req.Env == "" || req.ReleaseID == "" {
		return fmt.Errorf("%w: pin request needs an environment and a release ID (got %q, %q)", fault.ErrUsage, req.Env, req.ReleaseID)
	}
	if err := branchName(req).Validate(); err != nil {
		return fmt.Errorf("%w: branch %s: environment %q or release ID %q cannot be part of a git branch name", fault.ErrUsage, branchName(req).Short(), req.Env, req.ReleaseID)
	}
	if err := checkRepo(req.Image); err != nil {
		return fmt.Errorf("pin image: %w", err)
	}
	return checkTarget(req.Target)
}

func checkTarget(t workflow.EnvRepoTarget) error {
	if t.Path == "" {
		return fmt.Errorf("%w: envrepo.path is empty; give a local checkout or a clone URL", fault.ErrUsage)
	}
	br := plumbing.NewBranchReferenceName(strings.TrimPrefix(t.Branch, "refs/heads/"))
	if t.Branch == "" || br.Validate() != nil {
		return fmt.Errorf("%w: envrepo.branch %q is not a branch name", fault.ErrUsage, t.Branch)
	}
	f := cleanFile(t.File)
	if t.File == "" || f == "." || path.IsAbs(f) || f == ".." || strings.HasPrefix(f, "../") || strings.HasPrefix(f, ".git/") {
		return fmt.Errorf("%w: envrepo.file %q: want a path inside the environment repository", fault.ErrUsage, t.File)
	}
	switch t.Format {
	case workflow.FormatKustomize, workflow.FormatManifest:
		if err := checkName("image name", t.Image); err != nil {
			return fmt.Errorf("envrepo.image: %w", err)
		}
	case workflow.FormatHelmValues:
		if _, err := valuesPath(t.ValuesPath); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: envrepo.format %q: want kustomize, helm-values or manifest", fault.ErrUsage, t.Format)
	}
	return nil
}

func cleanFile(f string) string { return path.Clean(filepath.ToSlash(f)) }

func branchName(req workflow.PinRequest) plumbing.ReferenceName {
	return plumbing.NewBranchReferenceName(BranchPrefix + req.Env + "/" + req.ReleaseID)
}

// withFile names the file in an *EditError.
func withFile(err error, file string) error {
	var e *EditError
	if errors.As(err, &e) && e.File == "" {
		e.File = file
	}
	return err
}

func (a *Adapter) lock(key string) func() {
	a.mu.Lock()
	m, ok := a.locks[key]
	if !ok {
		m = &sync.Mutex{}
		a.locks[key] = m
	}
	a.mu.Unlock()
	m.Lock()
	return m.Unlock
}
