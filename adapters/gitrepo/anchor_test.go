package gitrepo

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/fault"
)

// sealedHead is a signed-looking head of session id; the adapter does not
// check signatures, it keeps them.
func sealedHead(id string, seq int64) audit.SealedHead {
	return audit.SealedHead{
		Head: audit.SessionHead{
			Session: id, Actor: "ana", Command: "plan", Release: "web-staging-1",
			Seq: seq, Hash: strings.Repeat("ab", 32), At: testTime,
		},
		Signature: approval.Signature{Armored: "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n", Key: "SHA256:abc"},
	}
}

func newAnchor(t *testing.T, cache, repo string) *JournalAnchor {
	t.Helper()
	j, err := newAdapter(t, cache).JournalAnchor(repo)
	require.NoError(t, err)
	return j
}

// anchorChain lists JournalRef's commits, newest first, following first
// parents, and fails on a merge: the chain is linear.
func anchorChain(t *testing.T, r *git.Repository) []*object.Commit {
	t.Helper()
	ref, err := r.Reference(JournalRef, true)
	require.NoError(t, err)
	c, err := r.CommitObject(ref.Hash())
	require.NoError(t, err)
	var out []*object.Commit
	for {
		out = append(out, c)
		require.LessOrEqual(t, c.NumParents(), 1, "one parent per anchor commit")
		if c.NumParents() == 0 {
			return out
		}
		c, err = c.Parent(0)
		require.NoError(t, err)
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

func TestAnchorInALocalRepositoryChainsOneCommitPerSession(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bare, _, _ := initOrigin(t, envFiles())
	j := newAnchor(t, t.TempDir(), bare)
	require.Equal(t, "refs/relcap/journal of "+bare, j.Where())

	heads, err := j.Anchors(ctx)
	require.NoError(t, err)
	require.Empty(t, heads, "nothing anchored yet")

	first := sealedHead("20261130T135527Z-3f9a1c", 7)
	where, err := j.Anchor(ctx, first)
	require.NoError(t, err)
	require.Regexp(t, `^refs/relcap/journal [0-9a-f]{12} of `+bare+`$`, where)
	second := sealedHead("20261201T080000Z-000001", 3)
	second.Signature, second.Unsigned = approval.Signature{}, "the project names no people file"
	_, err = j.Anchor(ctx, second)
	require.NoError(t, err)

	again, err := j.Anchor(ctx, first)
	require.NoError(t, err, "anchoring the same head again is harmless")
	require.Regexp(t, `^refs/relcap/journal [0-9a-f]{12} of `, again)
	changed := first
	changed.Head.Hash = strings.Repeat("cd", 32)
	_, err = j.Anchor(ctx, changed)
	require.ErrorIs(t, err, fault.ErrBlocked, "a session is anchored once")

	r, err := git.PlainOpen(bare)
	require.NoError(t, err)
	chain := anchorChain(t, r)
	require.Len(t, chain, 2, "one commit per anchored head, nothing for the repeat")
	require.Contains(t, chain[1].Message, "relcap: anchor session 20261130T135527Z-3f9a1c (plan by ana)")
	require.Contains(t, chain[1].Message, "Relcap-Journal-Seq: 7")
	main, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
	require.NoError(t, err)
	tip, err := r.CommitObject(main.Hash())
	require.NoError(t, err)
	require.Empty(t, tip.ParentHashes, "the environment branch is untouched")

	heads, err = j.Anchors(ctx)
	require.NoError(t, err)
	require.Len(t, heads, 2)
	require.Equal(t, first, heads[0].SealedHead)
	require.Equal(t, second, heads[1].SealedHead)
	require.Equal(t, string(first.Head.Statement()), heads[0].Statement)

	// An auditor reads it with git alone; git finds the objects sound.
	show := gitOut(t, bare, "show", "refs/relcap/journal:sessions/202611/20261130T135527Z-3f9a1c.json")
	var file audit.AnchoredHead
	require.NoError(t, json.Unmarshal([]byte(show), &file))
	require.Equal(t, audit.AnchorVersion, file.Version)
	require.Equal(t, first.Signature, file.Signature)
	require.Contains(t, file.Statement, "hash: "+first.Head.Hash)
	require.Equal(t, "sessions/202612/20261201T080000Z-000001.json\n",
		gitOut(t, bare, "diff-tree", "--no-commit-id", "--name-only", "-r", chain[0].Hash.String()), "each commit adds its session's file")
	gitOut(t, bare, "fsck", "--strict")
}

func TestAnchorPushesWithoutForceAndRetriesWhenBeaten(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bare, _, _ := initOrigin(t, envFiles())
	url := "file://" + filepath.ToSlash(bare)
	ours := newAnchor(t, t.TempDir(), url)
	theirs := newAnchor(t, t.TempDir(), url)

	_, err := ours.Anchor(ctx, sealedHead("20261130T100000Z-00000a", 4))
	require.NoError(t, err)
	// Between our commit and our push, another machine anchors: our push
	// is not a fast-forward, is rejected, and we build on theirs.
	pushes := 0
	ours.beforePush = func() {
		pushes++
		if pushes == 1 {
			_, err := theirs.Anchor(ctx, sealedHead("20261130T110000Z-00000b", 9))
			require.NoError(t, err)
		}
	}
	_, err = ours.Anchor(ctx, sealedHead("20261130T120000Z-00000c", 2))
	require.NoError(t, err)
	require.Equal(t, 2, pushes, "one rejected push, one on top of theirs")

	r, err := git.PlainOpen(bare)
	require.NoError(t, err)
	chain := anchorChain(t, r)
	require.Len(t, chain, 3)
	require.Contains(t, chain[0].Message, "00000c")
	require.Contains(t, chain[1].Message, "00000b", "theirs kept, not overwritten")
	heads, err := theirs.Anchors(ctx)
	require.NoError(t, err)
	require.Len(t, heads, 3, "every machine reads every anchor")
}

func TestAnchorsFromManyMachinesAtOnceAllLand(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bare, _, _ := initOrigin(t, envFiles())
	url := "file://" + filepath.ToSlash(bare)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		j := newAnchor(t, t.TempDir(), url)
		wg.Go(func() {
			_, errs[i] = j.Anchor(ctx, sealedHead("20261130T10000"+string(rune('0'+i))+"Z-cafe00", int64(i+1)))
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "machine %d", i)
	}
	heads, err := newAnchor(t, t.TempDir(), url).Anchors(ctx)
	require.NoError(t, err)
	require.Len(t, heads, n)
	r, err := git.PlainOpen(bare)
	require.NoError(t, err)
	require.Len(t, anchorChain(t, r), n)
}

func TestAnAnchorRewrittenOrDeletedOnOriginIsTampering(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bare, _, _ := initOrigin(t, envFiles())
	url := "file://" + filepath.ToSlash(bare)
	j := newAnchor(t, t.TempDir(), url)
	_, err := j.Anchor(ctx, sealedHead("20261130T100000Z-00000a", 4))
	require.NoError(t, err)
	_, err = j.Anchor(ctx, sealedHead("20261130T110000Z-00000b", 5))
	require.NoError(t, err)

	// The captain drops the second anchor from origin, by hand.
	gitOut(t, bare, "update-ref", JournalRef.String(), JournalRef.String()+"~1")
	_, err = j.Anchors(ctx)
	require.ErrorIs(t, err, fault.ErrTampered)
	require.ErrorContains(t, err, "it was rewritten (force-pushed)")
	_, err = j.Anchor(ctx, sealedHead("20261130T120000Z-00000c", 1))
	require.ErrorIs(t, err, fault.ErrTampered, "nothing is built on a rewritten anchor")

	// A machine that never saw the anchor cannot tell; this one can.
	gitOut(t, bare, "update-ref", "-d", JournalRef.String())
	_, err = j.Anchors(ctx)
	require.ErrorIs(t, err, fault.ErrTampered)
	require.ErrorContains(t, err, "was deleted from origin")
}

func TestAnAnchorFileNamedForAnotherSessionIsTampering(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bare, _, _ := initOrigin(t, envFiles())
	j := newAnchor(t, t.TempDir(), bare)
	_, err := j.Anchor(ctx, sealedHead("20261130T100000Z-00000a", 4))
	require.NoError(t, err)
	r, err := git.PlainOpen(bare)
	require.NoError(t, err)
	tip := anchorChain(t, r)[0]
	data, err := encodeAnchored(sealedHead("20261130T100000Z-00000b", 4))
	require.NoError(t, err)
	next, err := j.commit(r, tip, "sessions/202611/20261130T100000Z-00000a.json", data, sealedHead("x", 1))
	require.NoError(t, err)
	require.NoError(t, r.Storer.SetReference(plumbing.NewHashReference(JournalRef, next)))
	_, err = j.Anchors(ctx)
	require.ErrorIs(t, err, fault.ErrTampered)
	require.ErrorContains(t, err, `holds the head of session "20261130T100000Z-00000b"`)
}

func TestAnchorWhereTheRepositoryIsUnreachableSaysWhyWithoutCredentials(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, err := newAnchor(t, t.TempDir(), filepath.Join(t.TempDir(), "missing")).Anchor(ctx, sealedHead("s1", 1))
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "is not a git repository")

	j := newAnchor(t, t.TempDir(), "http://relcap:s3cr3t-t0ken@127.0.0.1:1/env.git")
	require.NotContains(t, j.Where(), "s3cr3t-t0ken")
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = j.Anchor(short, sealedHead("s1", 1))
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cr3t-t0ken")
	_, err = j.Anchors(short)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cr3t-t0ken")

	_, err = newAnchor(t, t.TempDir(), t.TempDir()).Anchor(ctx, sealedHead("a/b", 1))
	require.ErrorIs(t, err, fault.ErrUsage, "a session ID is one file name")
}

func TestAnchorFileShardsByMonth(t *testing.T) {
	t.Parallel()
	require.Equal(t, "sessions/202611/20261130T135527Z-3f9a1c.json", AnchorFile("20261130T135527Z-3f9a1c"))
	require.Equal(t, "sessions/other/demo.json", AnchorFile("demo"))
	require.Equal(t, "sessions/other/2026ab-x.json", AnchorFile("2026ab-x"))
}
