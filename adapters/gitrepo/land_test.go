package gitrepo

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
)

func TestLandFastForwardsTheEnvironmentBranchToTheReviewedCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bare, _, _ := initOrigin(t, envFiles())
	a := newAdapter(t, t.TempDir())
	req := pinRequest("file://"+bare, "L1", digest(t, "a"))
	pinned, err := a.Pin(ctx, req)
	require.NoError(t, err)

	landed, err := a.Land(ctx, req)
	require.NoError(t, err)
	require.Equal(t, pinned.Commit, landed.Commit, "fast-forward to the reviewed commit")
	require.Equal(t, "main", landed.Branch)
	require.True(t, landed.Pushed)
	out, err := exec.Command("git", "-C", bare, "rev-parse", "main").Output()
	require.NoError(t, err)
	require.Equal(t, landed.Commit, strings.TrimSpace(string(out)))

	again, err := a.Land(ctx, req)
	require.NoError(t, err)
	require.True(t, again.Existing, "landing twice changes nothing")
	require.Equal(t, landed.Commit, again.Commit)
}

func TestLandMergesWhenTheEnvironmentBranchMovedOn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bare, work, workRepo := initOrigin(t, envFiles())
	a := newAdapter(t, t.TempDir())
	req := pinRequest("file://"+bare, "L2", digest(t, "a"))
	pinned, err := a.Pin(ctx, req)
	require.NoError(t, err)

	// Someone else changes another file on main meanwhile.
	commitFiles(t, workRepo, work, map[string]string{"README.md": "# env, edited\n"}, "docs")
	out, err := exec.Command("git", "-C", work, "push", "origin", "main").CombinedOutput()
	require.NoError(t, err, string(out))

	landed, err := a.Land(ctx, req)
	require.NoError(t, err)
	require.NotEqual(t, pinned.Commit, landed.Commit)
	parents, err := exec.Command("git", "-C", bare, "log", "-1", "--format=%P", "main").Output()
	require.NoError(t, err)
	require.Contains(t, string(parents), pinned.Commit, "the reviewed commit is merged, not copied")
	show, err := exec.Command("git", "-C", bare, "show", "main:"+kustomizeFile).Output()
	require.NoError(t, err)
	require.Contains(t, string(show), "digest: "+digest(t, "a").String())
	readme, err := exec.Command("git", "-C", bare, "show", "main:README.md").Output()
	require.NoError(t, err)
	require.Equal(t, "# env, edited\n", string(readme), "the other change is kept")
	fsck, err := exec.Command("git", "-C", bare, "fsck", "--strict").CombinedOutput()
	require.NoError(t, err, string(fsck))
}

func TestLandRefusesToMoveACheckedOutBranch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir, r := initRepo(t, envFiles())
	a := newAdapter(t, t.TempDir())
	req := pinRequest(dir, "L3", digest(t, "a"))
	_, err := a.Pin(ctx, req)
	require.NoError(t, err)
	head, err := r.Head()
	require.NoError(t, err)

	_, err = a.Land(ctx, req)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "bare repository or a clone URL")
	after, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
	require.NoError(t, err)
	require.Equal(t, head.Hash(), after.Hash())
}

func TestLandBeforePinIsAUsageError(t *testing.T) {
	t.Parallel()
	bare, _, _ := initOrigin(t, envFiles())
	a := newAdapter(t, t.TempDir())
	_, err := a.Land(t.Context(), pinRequest("file://"+bare, "L4", digest(t, "a")))
	require.ErrorIs(t, err, fault.ErrUsage)
}

// TestRollbackRestoresTheFileAsTheReleaseConverged: release A lands; a
// person then commits a bad change to the same file and release B pins a
// new digest on top. Restoring from A's landed commit brings back A's
// whole file (digest and manifests), as a new commit; resuming it is
// idempotent; an unknown commit says what to do instead.
func TestRollbackRestoresTheFileAsTheReleaseConverged(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bare, work, workRepo := initOrigin(t, envFiles())
	a := newAdapter(t, t.TempDir())
	release := pinRequest("file://"+bare, "A", digest(t, "a"))
	_, err := a.Pin(ctx, release)
	require.NoError(t, err)
	landedA, err := a.Land(ctx, release)
	require.NoError(t, err)
	clone, err := git.PlainOpen(bare)
	require.NoError(t, err)
	fileA := fileAt(t, clone, plumbing.NewBranchReferenceName("main"), kustomizeFile)

	out, err := exec.Command("git", "-C", work, "pull", "-q", "origin", "main").CombinedOutput()
	require.NoError(t, err, string(out))
	commitFiles(t, workRepo, work, map[string]string{kustomizeFile: fileA + "replicas:\n  - name: web\n    count: -1\n"}, "scale web")
	out, err = exec.Command("git", "-C", work, "push", "-q", "origin", "main").CombinedOutput()
	require.NoError(t, err, string(out))
	releaseB := pinRequest("file://"+bare, "B", digest(t, "b"))
	_, err = a.Pin(ctx, releaseB)
	require.NoError(t, err)
	_, err = a.Land(ctx, releaseB)
	require.NoError(t, err)

	rollback := pinRequest("file://"+bare, "R", digest(t, "a"))
	rollback.RestoreFrom = landedA.Commit
	preview, err := a.Preview(ctx, rollback)
	require.NoError(t, err)
	require.Contains(t, preview.Diff, "-    count: -1", "the review shows the bad change going away")
	require.Contains(t, preview.Diff, "+  digest: "+digest(t, "a").String())
	pinned, err := a.Pin(ctx, rollback)
	require.NoError(t, err)
	require.Equal(t, preview.Diff, pinned.Diff)
	landed, err := a.Land(ctx, rollback)
	require.NoError(t, err)
	require.NotEqual(t, landedA.Commit, landed.Commit, "a new change, not a reset")
	require.Equal(t, fileA, fileAt(t, clone, plumbing.NewBranchReferenceName("main"), kustomizeFile))
	again, err := a.Pin(ctx, rollback)
	require.NoError(t, err)
	require.True(t, again.Existing, "resuming finds the restore already made")

	lost := pinRequest("file://"+bare, "R2", digest(t, "a"))
	lost.RestoreFrom = strings.Repeat("ab", 20)
	_, err = a.Pin(ctx, lost)
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.Contains(t, err.Error(), "promote its digest "+webRepo+"@"+digest(t, "a").String()+" instead")
}

// TestLandRefusesABranchThatMovedAfterApproval: the approvers signed the
// pinned commit; a commit pushed onto the release's branch afterwards is
// not landed, and the error says how to get back to what was reviewed.
func TestLandRefusesABranchThatMovedAfterApproval(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bare, _, _ := initOrigin(t, envFiles())
	a := newAdapter(t, t.TempDir())
	req := pinRequest("file://"+bare, "L5", digest(t, "a"))
	pinned, err := a.Pin(ctx, req)
	require.NoError(t, err)

	// Someone pushes an unreviewed change onto the relcap branch.
	other := t.TempDir()
	for _, args := range [][]string{
		{"clone", "-q", "--branch", pinned.Branch, bare, other},
		{"-C", other, "-c", "user.name=mallory", "-c", "user.email=m@example.com", "commit", "-q", "--allow-empty", "-m", "sneak"},
		{"-C", other, "push", "-q", "origin", pinned.Branch},
	} {
		out, err := exec.Command("git", args...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}

	req.Reviewed = pinned.Commit
	_, err = a.Land(ctx, req)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "moved after it was pinned and approved")
	require.Contains(t, err.Error(), "git push --force-with-lease origin "+pinned.Commit+":"+pinned.Branch)
	main, err := exec.Command("git", "-C", bare, "rev-parse", "main").Output()
	require.NoError(t, err)
	require.NotEqual(t, pinned.Commit, strings.TrimSpace(string(main)), "nothing landed")
	log, err := exec.Command("git", "-C", bare, "log", "-1", "--format=%s", "main").Output()
	require.NoError(t, err)
	require.NotContains(t, string(log), "sneak")
}
