package gitrepo

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
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
	require.ErrorIs(t, err, workflow.ErrBlocked)
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
	require.ErrorIs(t, err, workflow.ErrUsage)
}
