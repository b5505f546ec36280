package gitrepo

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/workflowtest"
)

var testTime = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

const kustomizeFile = "apps/web/staging/kustomization.yaml"

// envFiles is a small environment repository.
func envFiles() map[string]string {
	return map[string]string{
		kustomizeFile:                  kustomization,
		"apps/web/staging/values.yaml": values,
		"apps/web/prod/deploy.yaml":    manifest,
		"README.md":                    "# env\n",
	}
}

func newAdapter(t *testing.T, workDir string) *Adapter {
	t.Helper()
	a, err := New(Options{WorkDir: workDir, Clock: workflowtest.NewClock(testTime)})
	require.NoError(t, err)
	return a
}

func sig(when time.Time) *object.Signature {
	return &object.Signature{Name: "Captain", Email: "captain@example.com", When: when}
}

// initRepo makes a non-bare repository on main with files committed.
func initRepo(t *testing.T, files map[string]string) (string, *git.Repository) {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	require.NoError(t, err)
	commitFiles(t, r, dir, files, "initial")
	return dir, r
}

func commitFiles(t *testing.T, r *git.Repository, dir string, files map[string]string, msg string) plumbing.Hash {
	t.Helper()
	wt, err := r.Worktree()
	require.NoError(t, err)
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		_, err := wt.Add(name)
		require.NoError(t, err)
	}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig(testTime.Add(-time.Hour))})
	require.NoError(t, err)
	return h
}

// initOrigin makes a bare repository holding files on main, and the
// checkout they were pushed from (whose origin it is).
func initOrigin(t *testing.T, files map[string]string) (bare, work string, workRepo *git.Repository) {
	t.Helper()
	bare = filepath.Join(t.TempDir(), "env.git")
	_, err := git.PlainInitWithOptions(bare, &git.PlainInitOptions{Bare: true, InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	require.NoError(t, err)
	work, workRepo = initRepo(t, files)
	_, err = workRepo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{bare}})
	require.NoError(t, err)
	require.NoError(t, workRepo.PushContext(t.Context(), &git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/main"}}))
	return bare, work, workRepo
}

func pinRequest(path, id string, d image.Digest) workflow.PinRequest {
	return workflow.PinRequest{
		Env:       "staging",
		ReleaseID: id,
		Target: workflow.EnvRepoTarget{Path: path, Branch: "main", File: kustomizeFile, Image: "web",
			Format: workflow.FormatKustomize},
		Image:  webRepo,
		Digest: d,
		Source: "registry.example.com/dev/web",
	}
}

func fileAt(t *testing.T, r *git.Repository, ref plumbing.ReferenceName, file string) string {
	t.Helper()
	h, err := r.ResolveRevision(plumbing.Revision(ref))
	require.NoError(t, err)
	c, err := r.CommitObject(*h)
	require.NoError(t, err)
	f, err := c.File(file)
	require.NoError(t, err)
	s, err := f.Contents()
	require.NoError(t, err)
	return s
}

func branchRef(id string) plumbing.ReferenceName {
	return plumbing.NewBranchReferenceName("relcap/staging/" + id)
}

// countObjects counts the files under .git/objects (loose objects, packs),
// to prove Preview writes none.
func countObjects(t *testing.T, gitDir string) int {
	t.Helper()
	n := 0
	require.NoError(t, filepath.WalkDir(filepath.Join(gitDir, "objects"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	}))
	return n
}

func refs(t *testing.T, r *git.Repository) map[string]string {
	t.Helper()
	it, err := r.References()
	require.NoError(t, err)
	out := map[string]string{}
	require.NoError(t, it.ForEach(func(ref *plumbing.Reference) error {
		out[ref.Name().String()] = ref.Strings()[1]
		return nil
	}))
	return out
}

func TestPinLocalCheckoutLeavesWorkingTreeAlone(t *testing.T) {
	t.Parallel()
	dir, r := initRepo(t, envFiles())
	// The captain is in the middle of something: a modified tracked file
	// and an untracked one.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# env, edited\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("wip\n"), 0o644))
	wt, err := r.Worktree()
	require.NoError(t, err)
	statusBefore, err := wt.Status()
	require.NoError(t, err)
	headBefore, err := r.Head()
	require.NoError(t, err)
	onDisk, err := os.ReadFile(filepath.Join(dir, kustomizeFile))
	require.NoError(t, err)

	d := digest(t, "a")
	a := newAdapter(t, t.TempDir())
	ch, err := a.Pin(t.Context(), pinRequest(dir, "R1", d))
	require.NoError(t, err)
	require.Equal(t, "relcap/staging/R1", ch.Branch)
	require.Len(t, ch.Commit, 40)
	require.False(t, ch.Pushed, "no origin, nothing pushed")
	require.False(t, ch.Existing)
	require.Contains(t, ch.Diff, "diff --git a/"+kustomizeFile+" b/"+kustomizeFile)
	require.Contains(t, ch.Diff, `-  newTag: "1.2.3" # moved by hand once`)
	require.Contains(t, ch.Diff, "+  digest: "+d.String())

	// The branch pins the digest, keeps the comments, drops the tag.
	got := fileAt(t, r, branchRef("R1"), kustomizeFile)
	require.Contains(t, got, "# Staging overlay for web. Keep this comment.")
	require.Contains(t, got, "# the web image, pinned by relcap")
	require.Contains(t, got, "- ../base   # shared manifests")
	require.Contains(t, got, "  digest: "+d.String())
	require.Contains(t, got, "  newName: "+webRepo)
	require.NotContains(t, got, "1.2.3")

	// One commit on top of main, by relcap, at the clock's time, changing
	// one file, with a message naming release, digest and source.
	c, err := r.CommitObject(plumbing.NewHash(ch.Commit))
	require.NoError(t, err)
	require.Equal(t, []plumbing.Hash{headBefore.Hash()}, c.ParentHashes)
	require.Equal(t, "relcap", c.Author.Name)
	require.Equal(t, "relcap@localhost", c.Committer.Email)
	require.True(t, c.Author.When.Equal(testTime))
	subject, body, _ := strings.Cut(c.Message, "\n\n")
	require.Equal(t, "relcap: pin "+webRepo+"@"+d.Short()+" in staging (release R1)", subject)
	require.Contains(t, body, "Relcap-Release: R1")
	require.Contains(t, body, "Relcap-Digest: "+d.String())
	require.Contains(t, body, "Relcap-Source: registry.example.com/dev/web")
	require.Contains(t, body, "Committed by relcap.")
	parent, err := c.Parent(0)
	require.NoError(t, err)
	patch, err := parent.Patch(c)
	require.NoError(t, err)
	require.Len(t, patch.FilePatches(), 1)
	require.Equal(t, patch.String(), ch.Diff, "our diff is the one git would show for the commit")

	// HEAD, index, working tree: untouched.
	headAfter, err := r.Head()
	require.NoError(t, err)
	require.Equal(t, headBefore.Name(), headAfter.Name())
	require.Equal(t, headBefore.Hash(), headAfter.Hash())
	statusAfter, err := wt.Status()
	require.NoError(t, err)
	require.Equal(t, statusBefore, statusAfter)
	require.Len(t, statusAfter, 2, "still one modified and one untracked file")
	onDiskAfter, err := os.ReadFile(filepath.Join(dir, kustomizeFile))
	require.NoError(t, err)
	require.Equal(t, string(onDisk), string(onDiskAfter))

	// Again: the same commit, reported as existing; no second commit.
	again, err := a.Pin(t.Context(), pinRequest(dir, "R1", d))
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.Equal(t, ch.Commit, again.Commit)
	require.Equal(t, ch.Diff, again.Diff)
	tip, err := r.Reference(branchRef("R1"), true)
	require.NoError(t, err)
	require.Equal(t, ch.Commit, tip.Hash().String())
}

func TestPinLocalCheckoutWithOriginPushes(t *testing.T) {
	t.Parallel()
	bare, work, _ := initOrigin(t, envFiles())
	d := digest(t, "b")
	a := newAdapter(t, t.TempDir())
	ch, err := a.Pin(t.Context(), pinRequest(work, "R2", d))
	require.NoError(t, err)
	require.True(t, ch.Pushed)

	origin, err := git.PlainOpen(bare)
	require.NoError(t, err)
	ref, err := origin.Reference(branchRef("R2"), true)
	require.NoError(t, err, "the branch is visible on origin")
	require.Equal(t, ch.Commit, ref.Hash().String())
	require.Contains(t, fileAt(t, origin, branchRef("R2"), kustomizeFile), "digest: "+d.String())

	again, err := a.Pin(t.Context(), pinRequest(work, "R2", d))
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.True(t, again.Pushed)
	require.Equal(t, ch.Commit, again.Commit)
}

func TestPinCloneURL(t *testing.T) {
	t.Parallel()
	bare, work, workRepo := initOrigin(t, envFiles())
	cache := t.TempDir()
	url := "file://" + filepath.ToSlash(bare)
	d := digest(t, "c")

	ch, err := newAdapter(t, cache).Pin(t.Context(), pinRequest(url, "R3", d))
	require.NoError(t, err)
	require.True(t, ch.Pushed)
	require.False(t, ch.Existing)
	origin, err := git.PlainOpen(bare)
	require.NoError(t, err)
	ref, err := origin.Reference(branchRef("R3"), true)
	require.NoError(t, err)
	require.Equal(t, ch.Commit, ref.Hash().String())
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	require.Len(t, entries, 1, "one cached clone, no temporary directory left")

	// A new process (new Adapter, same cache) resumes: existing, pushed.
	again, err := newAdapter(t, cache).Pin(t.Context(), pinRequest(url, "R3", d))
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.True(t, again.Pushed)
	require.Equal(t, ch.Commit, again.Commit)

	// With the cache gone, the branch is still found on origin.
	fresh, err := newAdapter(t, t.TempDir()).Pin(t.Context(), pinRequest(url, "R3", d))
	require.NoError(t, err)
	require.True(t, fresh.Existing)
	require.Equal(t, ch.Commit, fresh.Commit)

	// Origin's main moves on; the next release starts from the new tip.
	moved := commitFiles(t, workRepo, work, map[string]string{"README.md": "# env v2\n"}, "docs")
	require.NoError(t, workRepo.PushContext(t.Context(), &git.PushOptions{RemoteName: "origin"}))
	next, err := newAdapter(t, cache).Pin(t.Context(), pinRequest(url, "R4", digest(t, "d")))
	require.NoError(t, err)
	c, err := origin.CommitObject(plumbing.NewHash(next.Commit))
	require.NoError(t, err)
	require.Equal(t, []plumbing.Hash{moved}, c.ParentHashes)
}

// TestPinDoesNotResurrectAMergedBranch protects against pushing a relcap
// branch again after review merged it and deleted it on origin: the cached
// clone still has the branch, but origin's main now holds its commit.
func TestPinDoesNotResurrectAMergedBranch(t *testing.T) {
	t.Parallel()
	bare, _, _ := initOrigin(t, envFiles())
	cache, url, d := t.TempDir(), "file://"+bare, digest(t, "9")
	ch, err := newAdapter(t, cache).Pin(t.Context(), pinRequest(url, "R10", d))
	require.NoError(t, err)

	origin, err := git.PlainOpen(bare)
	require.NoError(t, err)
	require.NoError(t, origin.Storer.SetReference(plumbing.NewHashReference(plumbing.Main, plumbing.NewHash(ch.Commit))))
	require.NoError(t, origin.Storer.RemoveReference(branchRef("R10")))

	again, err := newAdapter(t, cache).Pin(t.Context(), pinRequest(url, "R10", d))
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.True(t, again.Pushed)
	require.Equal(t, ch.Commit, again.Commit)
	_, err = origin.Reference(branchRef("R10"), true)
	require.ErrorIs(t, err, plumbing.ErrReferenceNotFound, "the merged branch stays deleted")

	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	clone, err := git.PlainOpen(filepath.Join(cache, entries[0].Name()))
	require.NoError(t, err)
	_, err = clone.Reference(plumbing.NewRemoteReferenceName("origin", "relcap/staging/R10"), true)
	require.ErrorIs(t, err, plumbing.ErrReferenceNotFound, "the fetch pruned origin's deleted branch")
	local, err := clone.Reference(branchRef("R10"), true)
	require.NoError(t, err, "the cache still has its own copy, which the merge check found")
	require.Equal(t, ch.Commit, local.Hash().String())
}

func TestPinRetriesAFailedPush(t *testing.T) {
	t.Parallel()
	bare, work, workRepo := initOrigin(t, envFiles())
	cfg, err := workRepo.Config()
	require.NoError(t, err)
	cfg.Remotes["origin"].URLs = []string{filepath.Join(t.TempDir(), "missing.git")}
	require.NoError(t, workRepo.SetConfig(cfg))

	d := digest(t, "e")
	a := newAdapter(t, t.TempDir())
	ch, err := a.Pin(t.Context(), pinRequest(work, "R5", d))
	require.Error(t, err)
	require.ErrorContains(t, err, "pushing relcap/staging/R5 to origin")
	require.False(t, ch.Pushed)
	require.Len(t, ch.Commit, 40, "the commit exists locally")

	cfg.Remotes["origin"].URLs = []string{bare}
	require.NoError(t, workRepo.SetConfig(cfg))
	again, err := a.Pin(t.Context(), pinRequest(work, "R5", d))
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.True(t, again.Pushed)
	require.Equal(t, ch.Commit, again.Commit)
}

func TestPinHelmValuesAndManifest(t *testing.T) {
	t.Parallel()
	dir, r := initRepo(t, envFiles())
	a := newAdapter(t, "")
	d := digest(t, "f")

	hr := pinRequest(dir, "H1", d)
	hr.Target.Format, hr.Target.File, hr.Target.ValuesPath, hr.Target.Image = workflow.FormatHelmValues, "apps/web/staging/values.yaml", "image.digest", ""
	ch, err := a.Pin(t.Context(), hr)
	require.NoError(t, err)
	got := fileAt(t, r, branchRef("H1"), hr.Target.File)
	require.Contains(t, got, "    # the chart renders repository@digest when digest is set\n    repository: "+webRepo+"\n    digest: "+d.String()+"\n")
	require.Contains(t, got, "\n\nservice:\n", "blank lines survive")
	require.Contains(t, ch.Diff, "+    digest: "+d.String())

	mr := pinRequest(dir, "M1", d)
	mr.Env = "prod"
	mr.Target.Format, mr.Target.File = workflow.FormatManifest, "apps/web/prod/deploy.yaml"
	ch, err = a.Pin(t.Context(), mr)
	require.NoError(t, err)
	require.Equal(t, "relcap/prod/M1", ch.Branch)
	got = fileAt(t, r, plumbing.NewBranchReferenceName("relcap/prod/M1"), mr.Target.File)
	require.Equal(t, 3, strings.Count(got, webRepo+"@"+d.String()))
	require.Contains(t, got, "image: mesh-proxy:v1.30 # not ours")

	ref, err := a.Pinned(t.Context(), workflow.EnvRepoTarget{Path: dir, Branch: "relcap/prod/M1", File: mr.Target.File, Image: "web", Format: workflow.FormatManifest}, webRepo)
	require.NoError(t, err)
	require.Equal(t, d, ref.Digest)
	ref, err = a.Pinned(t.Context(), pinRequest(dir, "x", d).Target, webRepo)
	require.NoError(t, err)
	require.Equal(t, Ref{Repository: "web", Tag: "1.2.3"}, ref, "main still runs the tag")
}

func TestPreviewChangesNothing(t *testing.T) {
	t.Parallel()
	dir, r := initRepo(t, envFiles())
	gitDir := filepath.Join(dir, ".git")
	objects, before := countObjects(t, gitDir), refs(t, r)
	a := newAdapter(t, t.TempDir())
	d := digest(t, "1")

	pv, err := a.Preview(t.Context(), pinRequest(dir, "P1", d))
	require.NoError(t, err)
	require.Equal(t, "relcap/staging/P1", pv.Branch)
	require.Empty(t, pv.Commit)
	require.False(t, pv.Pushed)
	require.Contains(t, pv.Diff, "+  digest: "+d.String())
	require.Equal(t, objects, countObjects(t, gitDir), "no object written")
	require.Equal(t, before, refs(t, r), "no ref moved or created")

	ch, err := a.Pin(t.Context(), pinRequest(dir, "P1", d))
	require.NoError(t, err)
	require.Equal(t, pv.Diff, ch.Diff, "the preview is what Pin commits")

	pv, err = a.Preview(t.Context(), pinRequest(dir, "P1", d))
	require.NoError(t, err)
	require.True(t, pv.Existing)
	require.Equal(t, ch.Diff, pv.Diff)
}

func TestPinWhenMainAlreadyPins(t *testing.T) {
	t.Parallel()
	d := digest(t, "2")
	files := envFiles()
	pinned, err := PinKustomize([]byte(kustomization), "web", webRepo, d)
	require.NoError(t, err)
	files[kustomizeFile] = string(pinned)
	dir, r := initRepo(t, files)
	head, err := r.Head()
	require.NoError(t, err)

	ch, err := newAdapter(t, "").Pin(t.Context(), pinRequest(dir, "R6", d))
	require.NoError(t, err)
	require.Equal(t, workflow.EnvChange{Branch: "main", Commit: head.Hash().String(), Existing: true}, ch)
	_, err = r.Reference(branchRef("R6"), true)
	require.ErrorIs(t, err, plumbing.ErrReferenceNotFound, "no empty commit, no branch")
}

func TestPinRefuses(t *testing.T) {
	t.Parallel()
	dir, r := initRepo(t, envFiles())
	a := newAdapter(t, "")
	d := digest(t, "3")
	refsBefore := refs(t, r)

	cases := []struct {
		name   string
		change func(*workflow.PinRequest)
		is     error
		msg    string
	}{
		{"zero digest", func(q *workflow.PinRequest) { q.Digest = image.Digest{} }, fault.ErrUsage,
			"refusing to pin release R7 in staging without a digest"},
		{"missing file", func(q *workflow.PinRequest) { q.Target.File = "apps/web/qa/kustomization.yaml" }, fault.ErrUsage,
			"apps/web/qa/kustomization.yaml: does not exist on branch main of " + dir + "; create it or fix envrepo.file"},
		{"missing image entry", func(q *workflow.PinRequest) { q.Target.Image = "api" }, fault.ErrUsage,
			kustomizeFile + ":9: no images entry named api; add one or fix envrepo.image"},
		{"a directory", func(q *workflow.PinRequest) { q.Target.File = "apps/web" }, fault.ErrUsage,
			"apps/web: is not a regular file on branch main"},
		{"unknown branch", func(q *workflow.PinRequest) { q.Target.Branch = "trunk" }, fault.ErrUsage,
			"branch trunk not found in " + dir + "; fix envrepo.branch"},
		{"not a repository", func(q *workflow.PinRequest) { q.Target.Path = t.TempDir() }, fault.ErrUsage,
			"is not a git repository"},
		{"relative path", func(q *workflow.PinRequest) { q.Target.Path = "env" }, fault.ErrUsage,
			`envrepo.path "env" is neither an absolute path nor a clone URL`},
		{"URL without a cache", func(q *workflow.PinRequest) { q.Target.Path = "https://git.example.com/env.git" }, fault.ErrUsage,
			"no directory for clones is configured"},
		{"file outside", func(q *workflow.PinRequest) { q.Target.File = "../x.yaml" }, fault.ErrUsage,
			"want a path inside the environment repository"},
		{"tag in the image", func(q *workflow.PinRequest) { q.Image = webRepo + ":v1" }, fault.ErrUsage,
			"carries a tag or digest"},
		{"bad release ID", func(q *workflow.PinRequest) { q.ReleaseID = "a..b" }, fault.ErrUsage,
			"cannot be part of a git branch name"},
		{"helm tag key", func(q *workflow.PinRequest) {
			q.Target.Format, q.Target.File, q.Target.ValuesPath = workflow.FormatHelmValues, "apps/web/staging/values.yaml", "image.tag"
		}, fault.ErrUsage, "names a tag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q := pinRequest(dir, "R7", d)
			c.change(&q)
			for _, op := range []func(context.Context, workflow.PinRequest) (workflow.EnvChange, error){a.Pin, a.Preview} {
				_, err := op(t.Context(), q)
				require.ErrorIs(t, err, c.is)
				require.ErrorContains(t, err, c.msg)
			}
		})
	}
	t.Cleanup(func() { require.Equal(t, refsBefore, refs(t, r), "a refused pin creates nothing") })
}

func TestPinRefusesABranchPinningSomethingElse(t *testing.T) {
	t.Parallel()
	dir, _ := initRepo(t, envFiles())
	a := newAdapter(t, "")
	_, err := a.Pin(t.Context(), pinRequest(dir, "R8", digest(t, "4")))
	require.NoError(t, err)
	for _, op := range []func(context.Context, workflow.PinRequest) (workflow.EnvChange, error){a.Pin, a.Preview} {
		_, err = op(t.Context(), pinRequest(dir, "R8", digest(t, "5")))
		require.ErrorIs(t, err, fault.ErrBlocked)
		require.ErrorContains(t, err, "branch relcap/staging/R8 already exists")
		require.ErrorContains(t, err, "pins "+webRepo+"@"+digest(t, "4").String())
	}
}

func TestPinUsesMessageOverrideAndAuthor(t *testing.T) {
	t.Parallel()
	dir, r := initRepo(t, envFiles())
	a, err := New(Options{AuthorName: "Rel Cap", AuthorEmail: "captain@example.com", Clock: workflowtest.NewClock(testTime)})
	require.NoError(t, err)
	q := pinRequest(dir, "RB1", digest(t, "6"))
	q.Message = "relcap: roll back web in staging to release R1\n\nBreak-glass follow-up."
	ch, err := a.Pin(t.Context(), q)
	require.NoError(t, err)
	c, err := r.CommitObject(plumbing.NewHash(ch.Commit))
	require.NoError(t, err)
	require.Equal(t, q.Message+"\n", c.Message)
	require.Equal(t, "Rel Cap", c.Author.Name)
	require.Equal(t, "captain@example.com", c.Committer.Email)

	_, err = New(Options{AuthorName: "x>", AuthorEmail: "a@b"})
	require.ErrorIs(t, err, fault.ErrUsage)
}

func TestPinConcurrentReleasesOnOneRepository(t *testing.T) {
	t.Parallel()
	dir, r := initRepo(t, envFiles())
	a := newAdapter(t, "")
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = a.Pin(t.Context(), pinRequest(dir, "C"+string(rune('0'+i)), digest(t, string(rune('a'+i)))))
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err)
		require.Contains(t, fileAt(t, r, branchRef("C"+string(rune('0'+i))), kustomizeFile), digest(t, string(rune('a'+i))).String())
	}
}

func TestPinHonoursCancellation(t *testing.T) {
	t.Parallel()
	bare, _, _ := initOrigin(t, envFiles())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := newAdapter(t, t.TempDir()).Pin(ctx, pinRequest("file://"+bare, "R9", digest(t, "7")))
	require.ErrorIs(t, err, context.Canceled)
}

// TestPinWritesObjectsGitAccepts checks go-git's plumbing output with the
// real git CLI: the branch's log, fsck, and the working tree git sees.
func TestPinWritesObjectsGitAccepts(t *testing.T) {
	t.Parallel()
	gitBin, err := exec.LookPath("git")
	require.NoError(t, err, "the git CLI is needed (go-git's file transport runs git-upload-pack too)")
	dir, _ := initRepo(t, envFiles())
	run := func(args ...string) string {
		cmd := exec.CommandContext(t.Context(), gitBin, append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	statusBefore := run("status", "--porcelain")
	d := digest(t, "8")
	a := newAdapter(t, "")
	_, err = a.Pin(t.Context(), pinRequest(dir, "G1", d))
	require.NoError(t, err)
	hr := pinRequest(dir, "G2", d)
	hr.Target.Format, hr.Target.File, hr.Target.ValuesPath = workflow.FormatHelmValues, "apps/web/staging/values.yaml", "image.digest"
	_, err = a.Pin(t.Context(), hr)
	require.NoError(t, err)

	require.Equal(t, "relcap: pin "+webRepo+"@"+d.Short()+" in staging (release G1)\ninitial\n", run("log", "--format=%s", "relcap/staging/G1"))
	run("fsck", "--strict", "--no-dangling")
	require.Equal(t, kustomizeFile+"\n", run("diff", "--name-only", "main", "relcap/staging/G1"))
	require.Contains(t, run("show", "relcap/staging/G1:"+kustomizeFile), "digest: "+d.String())
	require.Equal(t, statusBefore, run("status", "--porcelain"))
	require.Equal(t, "main\n", run("branch", "--show-current"))
}

func TestLocate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]location{
		"/srv/env":                                 {dir: "/srv/env", display: "/srv/env"},
		"https://git.example.com/org/env.git":      {url: "https://git.example.com/org/env.git", display: "https://git.example.com/org/env.git"},
		"https://x:s3cret@git.example.com/env.git": {url: "https://x:s3cret@git.example.com/env.git", display: "https://x:xxxxx@git.example.com/env.git", secret: "x:s3cret"},
		"https://tok3n@git.example.com/env.git":    {url: "https://tok3n@git.example.com/env.git", display: "https://xxxxx@git.example.com/env.git", secret: "tok3n"},
		"ssh://git@git.example.com/org/env.git":    {url: "ssh://git@git.example.com/org/env.git", display: "ssh://git@git.example.com/org/env.git"},
		"git@git.example.com:org/env.git":          {url: "git@git.example.com:org/env.git", display: "git@git.example.com:org/env.git"},
		"git://git.example.com/env.git":            {url: "git://git.example.com/env.git", display: "git://git.example.com/env.git"},
		"file:///srv/env.git":                      {url: "file:///srv/env.git", display: "file:///srv/env.git"},
		// A password written with / unescaped (issue 26, attack 4).
		"https://x:to/ken@git.example.com/env.git": {url: "https://x:to/ken@git.example.com/env.git", display: "https://xxxxx@git.example.com/env.git", secret: "x:to/ken"},
	} {
		got, err := locate(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	l, _ := locate("https://x:s3cret@git.example.com/env.git")
	require.Equal(t, "https://git.example.com/env.git", l.storedURL())
	err := l.scrub(&EditError{Msg: "failed at https://x:s3cret@git.example.com"})
	require.NotContains(t, err.Error(), "s3cret")
	require.ErrorIs(t, err, fault.ErrUsage)
	other, _ := locate("https://y:other@git.example.com/env.git")
	require.Equal(t, l.cacheDir("/c"), other.cacheDir("/c"), "credentials are not part of the cache name")
	require.True(t, strings.HasPrefix(l.cacheDir("/c"), "/c/git.example.com_env.git-"))
}
