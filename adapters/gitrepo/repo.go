package gitrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/secret"
)

// maxFileSize bounds the file relcap edits; a pin file is a few kilobytes,
// and a blob of hundreds of megabytes is a wrong envrepo.file.
const maxFileSize = 16 << 20

// fetchSpec keeps every origin branch as a remote-tracking branch in a
// cached clone; relcap branches included, so one pushed from another
// machine is found.
const fetchSpec = config.RefSpec("+refs/heads/*:refs/remotes/origin/*")

// location is where an environment repository lives.
type location struct {
	// dir is the local checkout; empty for a URL.
	dir string
	// url is the clone URL as given, credentials included; empty for a
	// local checkout.
	url string
	// display names the repository in messages: the path, or the URL
	// without credentials.
	display string
	// secret is userinfo in the URL that must not reach a message.
	secret string
}

// scpLike is git's "[user@]host:path" clone address form.
var scpLike = regexp.MustCompile(`^([A-Za-z0-9._-]+@)?[A-Za-z0-9._-]+:.`)

// unsafeChars are replaced in cache directory names.
var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// locate tells a local checkout (an absolute path) from a clone URL
// (https://, ssh://, git://, file://, or user@host:path).
func locate(p string) (location, error) {
	switch {
	case filepath.IsAbs(p):
		dir := filepath.Clean(p)
		return location{dir: dir, display: dir}, nil
	case strings.Contains(p, "://") || scpLike.MatchString(p):
		display, secret := redactURL(p)
		return location{url: p, display: display, secret: secret}, nil
	}
	return location{}, fmt.Errorf("%w: envrepo.path %q is neither an absolute path nor a clone URL", fault.ErrUsage, p)
}

// redactURL returns the URL for display, and the userinfo that must be kept
// out of messages and files: a password, or an http(s) user name, which is
// where tokens go (secret.RedactURL and secret.SecretUserinfo decide both,
// for every URL relcap shows).
func redactURL(u string) (display, userinfo string) {
	return secret.RedactURL(u), secret.SecretUserinfo(u)
}

// storedURL is the URL written into a cached clone's config: without the
// secret, which is passed on each fetch and push instead, so no token sits
// on disk.
func (l location) storedURL() string {
	if l.secret == "" {
		return l.url
	}
	return strings.Replace(l.url, l.secret+"@", "", 1)
}

func (l location) key() string {
	if l.dir != "" {
		return l.dir
	}
	return "url:" + l.storedURL()
}

// scrub removes the secret from err's message, keeping err for errors.Is
// (relcap's one error scrubber, secret.Set.ScrubError).
func (l location) scrub(err error) error {
	if err == nil || l.secret == "" {
		return err
	}
	return secret.NewSet(l.secret).ScrubError(err)
}

// cacheDir names a clone in the cache: readable, and unique per repository
// (credentials are not part of the name).
func (l location) cacheDir(workDir string) string {
	stored := l.storedURL()
	sum := sha256.Sum256([]byte(stored))
	slug := stored
	if ep, err := transport.NewEndpoint(stored); err == nil {
		slug = ep.Host + "/" + ep.Path
	}
	slug = strings.Trim(unsafeChars.ReplaceAllString(slug, "_"), "._-")
	if len(slug) > 60 {
		slug = slug[len(slug)-60:]
	}
	return filepath.Join(workDir, slug+"-"+hex.EncodeToString(sum[:6]))
}

// open opens a local checkout, or brings the cached clone of a URL up to
// date with origin.
func (a *Adapter) open(ctx context.Context, l location) (*git.Repository, error) {
	if l.dir != "" {
		r, err := git.PlainOpenWithOptions(l.dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
		if errors.Is(err, git.ErrRepositoryNotExists) {
			return nil, fmt.Errorf("%w: envrepo.path %s is not a git repository; clone the environment repository there or fix the path", fault.ErrUsage, l.dir)
		}
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", l.dir, err)
		}
		return r, nil
	}
	if a.workDir == "" {
		return nil, fmt.Errorf("%w: envrepo.path %s is a URL, and no directory for clones is configured", fault.ErrUsage, l.display)
	}
	dir := l.cacheDir(a.workDir)
	r, err := git.PlainOpen(dir)
	switch {
	case errors.Is(err, git.ErrRepositoryNotExists):
		return a.clone(ctx, l, dir)
	case err != nil:
		return nil, fmt.Errorf("opening the clone of %s in %s: %w", l.display, dir, err)
	}
	if err := a.fetch(ctx, r, l); err != nil {
		return nil, err
	}
	return r, nil
}

// clone makes a bare clone of l in dir. It builds it in a temporary
// directory and renames it into place, so an interrupted clone never
// leaves a half-filled cache behind. Bare, because relcap commits with
// plumbing and never needs a working tree.
func (a *Adapter) clone(ctx context.Context, l location, dir string) (*git.Repository, error) {
	if err := os.MkdirAll(a.workDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the clone directory %s: %w", a.workDir, err)
	}
	tmp, err := os.MkdirTemp(a.workDir, filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("cloning %s: %w", l.display, err)
	}
	defer os.RemoveAll(tmp)
	r, err := git.PlainInit(tmp, true)
	if err != nil {
		return nil, fmt.Errorf("cloning %s: %w", l.display, err)
	}
	if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{l.storedURL()}, Fetch: []config.RefSpec{fetchSpec}}); err != nil {
		return nil, fmt.Errorf("cloning %s: %w", l.display, err)
	}
	if err := a.fetch(ctx, r, l); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another relcap may have cloned it meanwhile; use that one.
		if _, statErr := os.Stat(dir); statErr != nil {
			return nil, fmt.Errorf("cloning %s into %s: %w", l.display, dir, err)
		}
	}
	r, err = git.PlainOpen(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the clone of %s in %s: %w", l.display, dir, err)
	}
	return r, nil
}

// fetch brings every origin branch into refs/remotes/origin/, pruning the
// deleted ones so a relcap branch deleted on origin is not taken as
// existing.
func (a *Adapter) fetch(ctx context.Context, r *git.Repository, l location) error {
	err := a.remote(ctx, l, func(auth transport.AuthMethod) error {
		return r.FetchContext(ctx, &git.FetchOptions{
			RemoteName: "origin",
			RemoteURL:  l.url,
			RefSpecs:   []config.RefSpec{fetchSpec},
			Auth:       auth,
			Tags:       git.NoTags,
			Prune:      true,
		})
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate), errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("fetching %s: %w", l.display, ctx.Err())
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("fetching %s: %w (store credentials for the host in git's credential helper, or use an ssh URL with an agent)", l.display, err)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%w: fetching %s: %w; fix envrepo.path", fault.ErrUsage, l.display, err)
	}
	return fmt.Errorf("fetching %s: %w", l.display, err)
}

// baseRef is the branch relcap starts from: the local branch of a
// checkout, origin's branch (as just fetched) for a clone.
func baseRef(l location, branch string) plumbing.ReferenceName {
	branch = strings.TrimPrefix(branch, "refs/heads/")
	if l.dir != "" {
		return plumbing.NewBranchReferenceName(branch)
	}
	return plumbing.NewRemoteReferenceName("origin", branch)
}

func baseCommit(r *git.Repository, l location, branch string) (*object.Commit, error) {
	name := baseRef(l, branch)
	ref, err := r.Reference(name, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		where := l.display
		if l.dir == "" {
			where = "origin " + l.display
		}
		return nil, fmt.Errorf("%w: branch %s not found in %s; fix envrepo.branch", fault.ErrUsage, strings.TrimPrefix(branch, "refs/heads/"), where)
	}
	if err != nil {
		return nil, fmt.Errorf("reading branch %s of %s: %w", branch, l.display, err)
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		return nil, fmt.Errorf("reading the tip of %s in %s: %w", branch, l.display, err)
	}
	return c, nil
}

// readFile reads file from commit c, refusing what relcap must not edit
// as text: directories, symlinks, submodules and huge blobs.
func readFile(r *git.Repository, c *object.Commit, file, branch string, l location) ([]byte, filemode.FileMode, error) {
	entry, err := findEntry(r, c.TreeHash, strings.Split(file, "/"))
	if err != nil {
		return nil, 0, err
	}
	if entry == nil {
		return nil, 0, &EditError{File: file, Msg: fmt.Sprintf("does not exist on branch %s of %s; create it or fix envrepo.file", branch, l.display)}
	}
	if entry.Mode != filemode.Regular && entry.Mode != filemode.Executable && entry.Mode != filemode.Deprecated {
		return nil, 0, &EditError{File: file, Msg: fmt.Sprintf("is not a regular file on branch %s (mode %s); point envrepo.file at the file itself", branch, entry.Mode)}
	}
	b, err := r.BlobObject(entry.Hash)
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", file, err)
	}
	if b.Size > maxFileSize {
		return nil, 0, &EditError{File: file, Msg: fmt.Sprintf("is %d bytes; a pin file that large is not one relcap edits", b.Size)}
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", file, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", file, err)
	}
	return data, entry.Mode, nil
}

// findEntry walks the trees from root along parts; a missing entry is nil
// without error.
func findEntry(r *git.Repository, root plumbing.Hash, parts []string) (*object.TreeEntry, error) {
	t, err := r.TreeObject(root)
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", root, err)
	}
	for i, p := range parts {
		var e *object.TreeEntry
		for j := range t.Entries {
			if t.Entries[j].Name == p {
				e = &t.Entries[j]
				break
			}
		}
		if e == nil || i == len(parts)-1 {
			return e, nil
		}
		if e.Mode != filemode.Dir {
			return nil, nil
		}
		if t, err = r.TreeObject(e.Hash); err != nil {
			return nil, fmt.Errorf("reading tree %s: %w", e.Hash, err)
		}
	}
	return nil, nil
}

// findExisting looks for the relcap branch: origin's copy first (for a
// clone, as just fetched), then the local one.
func (st *pinState) findExisting() error {
	var tip plumbing.Hash
	if st.loc.url != "" {
		remote := plumbing.NewRemoteReferenceName("origin", st.branch.Short())
		if ref, err := st.repo.Reference(remote, true); err == nil {
			st.remoteTip, tip = ref.Hash(), ref.Hash()
		} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
			return fmt.Errorf("reading %s: %w", remote, err)
		}
	}
	if tip.IsZero() {
		ref, err := st.repo.Reference(st.branch, true)
		switch {
		case errors.Is(err, plumbing.ErrReferenceNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("reading %s: %w", st.branch, err)
		}
		tip = ref.Hash()
	}
	c, err := st.repo.CommitObject(tip)
	if err != nil {
		return fmt.Errorf("reading the tip of %s: %w", st.branch.Short(), err)
	}
	st.existing = c
	return nil
}

// checkExisting accepts an existing relcap branch only if it already pins
// the digest: pinning its file again would change nothing.
func (st *pinState) checkExisting(req workflow.PinRequest) error {
	data, _, err := readFile(st.repo, st.existing, st.file, st.branch.Short(), st.loc)
	if err == nil {
		var again []byte
		if again, err = st.desired(data, req); err == nil && string(again) == string(data) {
			return nil
		}
	}
	what := "something else"
	if err != nil {
		what = "nothing relcap can read (" + err.Error() + ")"
	} else if ref, rerr := CurrentPin(data, req.Target, req.Image); rerr == nil {
		what = ref.String()
	}
	return fmt.Errorf("%w: branch %s already exists in %s and pins %s in %s, not %s@%s; delete the branch or use a new release ID",
		fault.ErrBlocked, st.branch.Short(), st.loc.display, what, st.file, req.Image, req.Digest)
}

// existingDiff is the change the existing branch's tip made to the file.
func (st *pinState) existingDiff(req workflow.PinRequest) (string, error) {
	after, mode, err := readFile(st.repo, st.existing, st.file, st.branch.Short(), st.loc)
	if err != nil {
		return "", err
	}
	var before []byte
	if st.existing.NumParents() > 0 {
		parent, err := st.existing.Parent(0)
		if err != nil {
			return "", fmt.Errorf("reading the parent of %s: %w", st.branch.Short(), err)
		}
		before, _, err = readFile(st.repo, parent, st.file, req.Target.Branch, st.loc)
		var editErr *EditError
		if errors.As(err, &editErr) {
			before = nil // the branch created the file
		} else if err != nil {
			return "", err
		}
	}
	return unifiedDiff(st.file, mode, before, after)
}
