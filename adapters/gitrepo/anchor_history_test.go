package gitrepo

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/audit"
)

// tamperAnchor checks refs/relcap/journal of repo out into a scratch
// clone, runs edit there, commits as mallory and pushes the commit back
// as an ordinary fast-forward: what a server that refuses only rewrites
// and deletions lets through. It returns the new commit.
func tamperAnchor(t *testing.T, repo string, edit func(dir string)) string {
	t.Helper()
	dir := t.TempDir()
	gitOut(t, dir, "init", "-q")
	gitOut(t, dir, "fetch", "-q", repo, JournalRef.String()+":refs/heads/journal")
	gitOut(t, dir, "checkout", "-q", "journal")
	edit(dir)
	gitOut(t, dir, "-c", "user.name=mallory", "-c", "user.email=mallory@example.com", "commit", "-qam", "tidy up the anchors")
	// No background gc in repo after the push: the test removes it.
	gitOut(t, dir, "-c", "receive.autogc=false", "push", "-q", repo, "journal:"+JournalRef.String())
	return strings.TrimSpace(gitOut(t, dir, "rev-parse", "HEAD"))
}

// TestAHeadErasedByAFastForwardStaysInTheHistory: a commit on top of the
// anchor that removes one session's file, and another that changes
// another's, are fast-forwards; History still names both, the commits
// that did it and the heads as first anchored, and no longer lists them
// among the tip's heads. A file removed and restored as written is not
// erased.
func TestAHeadErasedByAFastForwardStaysInTheHistory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bare, _, _ := initOrigin(t, envFiles())
	url := "file://" + filepath.ToSlash(bare)
	j := newAnchor(t, t.TempDir(), url)
	ids := []string{"20261130T100000Z-00000a", "20261130T110000Z-00000b", "20261130T120000Z-00000c", "20261201T090000Z-00000d"}
	for i, id := range ids {
		_, err := j.Anchor(ctx, sealedHead(id, int64(i+2)))
		require.NoError(t, err)
	}
	before, err := j.History(ctx)
	require.NoError(t, err)
	require.Len(t, before.Heads, 4)
	require.Empty(t, before.Erased)
	require.Len(t, before.Commits, 4)
	require.False(t, before.Place.InPlace, "pushed to origin")

	removed := tamperAnchor(t, bare, func(dir string) {
		gitOut(t, dir, "rm", "-q", AnchorFile(ids[1]))
	})
	changed := tamperAnchor(t, bare, func(dir string) {
		forged := sealedHead(ids[2], 99)
		data, err := encodeAnchored(forged)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, AnchorFile(ids[2])), data, 0o600))
	})
	// Removed and put back as it was: nothing is lost.
	first := gitOut(t, bare, "show", JournalRef.String()+":"+AnchorFile(ids[3]))
	tamperAnchor(t, bare, func(dir string) { gitOut(t, dir, "rm", "-q", AnchorFile(ids[3])) })
	tamperAnchor(t, bare, func(dir string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, AnchorFile(ids[3]))), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, AnchorFile(ids[3])), []byte(first), 0o600))
		gitOut(t, dir, "add", AnchorFile(ids[3]))
	})

	h, err := j.History(ctx)
	require.NoError(t, err, "every change was a fast-forward")
	require.Len(t, h.Commits, 8)
	require.True(t, h.Contains(removed[:12]))
	var tip []string
	for _, a := range h.Heads {
		tip = append(tip, a.Head.Session)
	}
	require.Equal(t, []string{ids[0], ids[2], ids[3]}, tip)
	require.Len(t, h.Erased, 2)
	byFile := map[string]audit.ErasedAnchor{}
	for _, e := range h.Erased {
		byFile[e.File] = e
	}
	gone := byFile[AnchorFile(ids[1])]
	require.Equal(t, removed, gone.By)
	require.False(t, gone.Changed)
	require.Equal(t, sealedHead(ids[1], 3), gone.Head.SealedHead, "the head as first anchored")
	require.Equal(t, "mallory <mallory@example.com>", gone.Author)
	require.Equal(t, "tidy up the anchors", gone.Subject)
	require.True(t, before.Commits[gone.AddedIn], "added by one of the relcap commits")
	edited := byFile[AnchorFile(ids[2])]
	require.Equal(t, changed, edited.By)
	require.True(t, edited.Changed)
	require.Equal(t, int64(4), edited.Head.Head.Seq, "the head as first anchored, not the forged one")
}

// TestAnAnchorInALocalRepositoryWithoutAnOriginIsInPlace: its keeper
// can rewind it alone; History says so, and a rewind leaves the lost
// commit out of Commits.
func TestAnAnchorInALocalRepositoryWithoutAnOriginIsInPlace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bare, _, _ := initOrigin(t, envFiles())
	j := newAnchor(t, t.TempDir(), bare)
	_, err := j.Anchor(ctx, sealedHead("20261130T100000Z-00000a", 2))
	require.NoError(t, err)
	second, err := j.Anchor(ctx, sealedHead("20261130T110000Z-00000b", 3))
	require.NoError(t, err)
	require.True(t, second.InPlace)
	require.Contains(t, second.Unprotected(), "anchor not protected: "+bare+" has no origin; rewinds cannot be detected")

	gitOut(t, bare, "update-ref", JournalRef.String(), JournalRef.String()+"~1")
	h, err := j.History(ctx)
	require.NoError(t, err, "in place, a rewind is not visible to the ref itself")
	require.True(t, h.Place.InPlace)
	require.Len(t, h.Heads, 1)
	require.Empty(t, h.Erased, "a rewind leaves no trace in the history")
	p, ok := audit.ParseAnchorPlace(second.String())
	require.True(t, ok)
	require.False(t, h.Contains(p.Commit), "but the commit the ledger recorded is gone from it")
}

// TestAnchorHistoryOfTwoThousandCommitsIsReadQuickly: 2,000 anchor
// commits, every session in the same month (one directory of 2,000
// files, the worst case), read in one walk.
func TestAnchorHistoryOfTwoThousandCommitsIsReadQuickly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bare, _, _ := initOrigin(t, envFiles())
	j := newAnchor(t, t.TempDir(), bare)
	const n = 2000
	// git fast-import writes the 2,000 commits relcap would have, one
	// file added by each, in a second.
	var stream bytes.Buffer
	for i := range n {
		h := sealedHead(fmt.Sprintf("20261130T%06dZ-%06x", i, i), int64(i+1))
		data, err := encodeAnchored(h)
		require.NoError(t, err)
		msg := anchorMessage(h, AnchorFile(h.Head.Session))
		fmt.Fprintf(&stream, "commit %s\nmark :%d\ncommitter relcap <relcap@example.com> %d +0000\ndata %d\n%s\n", JournalRef, i+1, testTime.Unix()+int64(i), len(msg), msg)
		if i > 0 {
			fmt.Fprintf(&stream, "from :%d\n", i)
		}
		fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n", AnchorFile(h.Head.Session), len(data), data)
	}
	imp := exec.Command("git", "-C", bare, "fast-import", "--quiet")
	imp.Stdin = &stream
	out, err := imp.CombinedOutput()
	require.NoError(t, err, "git fast-import: %s", out)
	// One removal in the middle of the history, by a fast-forward.
	tamperAnchor(t, bare, func(dir string) {
		gitOut(t, dir, "rm", "-q", AnchorFile(fmt.Sprintf("20261130T%06dZ-%06x", 1000, 1000)))
	})

	start := time.Now()
	h, err := j.History(ctx)
	took := time.Since(start)
	require.NoError(t, err)
	require.Len(t, h.Commits, n+1)
	require.Len(t, h.Heads, n-1)
	require.Len(t, h.Erased, 1)
	t.Logf("History of %d anchor commits (%d heads in one directory): %s", n+1, n, took)
	if !raceEnabled {
		// 1.3 s of CPU on the shared 2-core machine (5.5 s of wall time
		// under its load): the bound only catches a walk gone quadratic
		// in blobs or commits.
		require.Less(t, took, 30*time.Second, "one walk, blobs read once")
	}
	if os.Getenv("RELCAP_PROFILE_HISTORY") != "" {
		f, err := os.Create(os.Getenv("RELCAP_PROFILE_HISTORY"))
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(f))
		_, err = j.History(ctx)
		pprof.StopCPUProfile()
		require.NoError(t, err)
	}
}
