//go:build e2e

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/forge/gitea"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
)

// The Gitea suite (issue 18) runs relcap's Gitea adapter against the lab's
// real Gitea, built into the lab cache on first use (relcap-lab build
// --gitea) and started in a temporary directory. Nothing is faked and
// nothing skips. Its tests are TestGitea…, outside the TestE2E matrix:
//
//	make e2e-gitea
//	go test -tags e2e -count=1 -timeout 30m -run TestGitea -v ./cmd/relcap-lab

// testGitea is one running Gitea of the suite.
type testGitea struct {
	GiteaState
	work string // a clone of captain/env
}

// startTestGitea builds (or reuses) Gitea, starts it and sets it up as
// `up --gitea` does; the cleanup stops it and checks its port is free.
func startTestGitea(t *testing.T, files map[string]string) *testGitea {
	t.Helper()
	cache, err := DefaultCacheDir()
	require.NoError(t, err)
	ctx := context.Background()
	b := Builder{CacheDir: cache, Log: testLog{t}}
	t0 := time.Now()
	g, err := b.BuildGitea(ctx)
	require.NoError(t, err)
	t.Logf("gitea build (or reuse) took %s", since(t0))

	dir := t.TempDir()
	ports, err := pickPorts(1)
	require.NoError(t, err)
	l := &launcher{dir: dir, out: testLog{t}, start: time.Now(), state: State{Dir: dir, Ports: Ports{Gitea: ports[0]}, StartedAt: time.Now().UTC()}}
	require.NoError(t, WriteState(dir, l.state))
	t.Cleanup(func() {
		l.abort()
		st, err := ReadState(dir)
		require.NoError(t, err)
		require.NoError(t, leftovers(st), "gitea left something behind")
	})
	st, err := StartGitea(ctx, l, g, filepath.Join(dir, "gitea"), ports[0], 2*time.Minute, files)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, StateFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the state file holds passwords and tokens")

	tg := &testGitea{GiteaState: st, work: filepath.Join(dir, "work")}
	// Public: cloned over HTTP without credentials, as Argo CD will.
	_, err = git(ctx, dir, "clone", "-q", st.CloneURL, tg.work)
	require.NoError(t, err)
	return tg
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (g *testGitea) user(t *testing.T, login string) GiteaUser {
	t.Helper()
	u, ok := g.User(login)
	require.True(t, ok, login)
	return u
}

// commit writes path in the clone on a branch (created from main when
// new) and commits it; it returns the commit.
func (g *testGitea) commit(t *testing.T, branch, path, content string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := git(ctx, g.work, "checkout", "-q", branch); err != nil {
		_, err = git(ctx, g.work, "checkout", "-q", "-b", branch, "origin/"+GiteaBranch)
		require.NoError(t, err)
	}
	require.NoError(t, os.WriteFile(filepath.Join(g.work, path), []byte(content), 0o644))
	_, err := git(ctx, g.work, "add", path)
	require.NoError(t, err)
	_, err = git(ctx, g.work, "commit", "-q", "-m", "change "+path+" on "+branch)
	require.NoError(t, err)
	sha, err := git(ctx, g.work, "rev-parse", "HEAD")
	require.NoError(t, err)
	return sha
}

// remoteMain is main's commit as Gitea serves it (git ls-remote).
func (g *testGitea) remoteMain(t *testing.T) string {
	t.Helper()
	out, err := git(context.Background(), g.work, "ls-remote", g.CloneURL, "refs/heads/"+GiteaBranch)
	require.NoError(t, err)
	f := strings.Fields(out)
	require.Len(t, f, 2, "ls-remote: %q", out)
	return f[0]
}

func (g *testGitea) sdkAs(t *testing.T, login string) *sdk.Client {
	t.Helper()
	c, err := giteaClient(context.Background(), g.URL, sdk.SetToken(g.user(t, login).Token))
	require.NoError(t, err)
	return c
}

// waitHead waits until Gitea's pull request shows head sha (Gitea updates
// a pull request after a push in the background).
func waitHead(t *testing.T, f *gitea.Adapter, number int, sha string) forge.PullRequest {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pr, err := f.PullRequest(context.Background(), number)
		require.NoError(t, err)
		if pr.HeadSHA == sha {
			return pr
		}
		require.True(t, time.Now().Before(deadline), "pull request #%d's head stayed %s, want %s", number, pr.HeadSHA, sha)
		time.Sleep(200 * time.Millisecond)
	}
}

func TestGiteaPromotionThroughProtectedMain(t *testing.T) {
	g := startTestGitea(t, map[string]string{"envs/staging/deployment.yaml": "image: app@sha256:1\n", "envs/prod/deployment.yaml": "image: app@sha256:1\n"})
	ctx := context.Background()
	captain, approver := g.user(t, GiteaCaptain), g.user(t, GiteaApprover)
	require.Equal(t, g.Seeded, g.remoteMain(t))
	var errs []error // every error the adapter returned, checked for tokens at the end

	// A direct push to main is refused by Gitea, even for the owner.
	direct := g.commit(t, "direct", "envs/staging/deployment.yaml", "image: app@sha256:direct\n")
	out, err := gitAs(ctx, g.work, captain, "push", "origin", direct+":refs/heads/"+GiteaBranch)
	require.Error(t, err, "a direct push to protected main must be refused")
	require.Contains(t, out, "Not allowed to push to protected branch "+GiteaBranch)
	require.NotContains(t, err.Error(), captain.Token)
	require.Equal(t, g.Seeded, g.remoteMain(t), "main must not move on a refused push")

	f, err := gitea.New(gitea.Options{URL: g.RepoURL, Token: captain.Token, Timeout: 20 * time.Second})
	require.NoError(t, err)
	require.Equal(t, g.RepoURL, f.Where())

	// relcap's branch, pushed, and its pull request.
	head := "relcap/staging/r1"
	sha := g.commit(t, head, "envs/staging/deployment.yaml", "image: app@sha256:2\n")
	_, err = gitAs(ctx, g.work, captain, "push", "-q", "origin", head)
	require.NoError(t, err)
	pr, err := f.OpenPullRequest(ctx, forge.OpenPullRequestRequest{Head: head, Base: GiteaBranch, Title: "relcap: promote r1 to staging", Body: "evidence"})
	require.NoError(t, err)
	require.Equal(t, forge.PullRequestOpen, pr.State)
	require.Equal(t, head, pr.Head)
	require.Equal(t, GiteaBranch, pr.Base)
	require.Equal(t, sha, pr.HeadSHA)
	require.Equal(t, GiteaCaptain, pr.Author)
	require.True(t, strings.HasPrefix(pr.URL, g.RepoURL+"/pulls/"), pr.URL)
	again, err := f.OpenPullRequest(ctx, forge.OpenPullRequestRequest{Head: head, Base: GiteaBranch, Title: "again"})
	require.NoError(t, err)
	require.Equal(t, pr.Number, again.Number, "opening again returns the open pull request of the branch")

	// Before any approval Gitea's protection refuses the merge.
	// That is a wait for a review, not a block.
	_, err = f.Merge(ctx, pr.Number, sha, "relcap: promote r1")
	require.ErrorIs(t, err, fault.ErrForgeNotReady)
	require.NotErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "Does not have enough approvals")
	errs = append(errs, err)
	require.Equal(t, g.Seeded, g.remoteMain(t))

	// The approver approves through the API, as themself.
	_, _, err = g.sdkAs(t, GiteaApprover).CreatePullReview(GiteaCaptain, GiteaEnvRepo, int64(pr.Number), sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "ok", CommitID: sha})
	require.NoError(t, err)
	reviews, err := f.Reviews(ctx, pr.Number)
	require.NoError(t, err)
	require.Len(t, reviews, 1)
	require.Equal(t, approver.Login, reviews[0].Login)
	require.Equal(t, forge.ReviewApproved, reviews[0].State)
	require.Equal(t, sha, reviews[0].CommitSHA)
	require.False(t, reviews[0].At.IsZero())

	// A stale head is refused before Gitea is asked.
	_, err = f.Merge(ctx, pr.Number, g.Seeded, "relcap: promote r1")
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "not the reviewed commit")
	errs = append(errs, err)

	// Approved: the merge goes through, and main is its merge commit.
	merge, err := f.Merge(ctx, pr.Number, sha, "relcap: promote r1 to staging\n\nrelease r1")
	require.NoError(t, err)
	require.Len(t, merge, 40)
	require.Equal(t, merge, g.remoteMain(t), "main's tip is the merge commit")
	merged, err := f.PullRequest(ctx, pr.Number)
	require.NoError(t, err)
	require.Equal(t, forge.PullRequestMerged, merged.State)
	require.Equal(t, merge, merged.MergeCommit)
	require.Equal(t, GiteaCaptain, merged.MergedBy)
	require.False(t, merged.MergedAt.IsZero())
	require.False(t, merged.Mergeable)
	again2, err := f.Merge(ctx, pr.Number, sha, "again")
	require.NoError(t, err, "merging a merged pull request returns its merge commit")
	require.Equal(t, merge, again2)

	// A pull request changed after its approval is not merged.
	head2 := "relcap/prod/r1"
	_, err = git(ctx, g.work, "fetch", "-q", "origin")
	require.NoError(t, err)
	sha2 := g.commit(t, head2, "envs/prod/deployment.yaml", "image: app@sha256:2\n")
	_, err = gitAs(ctx, g.work, captain, "push", "-q", "origin", head2)
	require.NoError(t, err)
	pr2, err := f.OpenPullRequest(ctx, forge.OpenPullRequestRequest{Head: head2, Base: GiteaBranch, Title: "relcap: promote r1 to prod"})
	require.NoError(t, err)
	require.NotEqual(t, pr.Number, pr2.Number)
	_, _, err = g.sdkAs(t, GiteaApprover).CreatePullReview(GiteaCaptain, GiteaEnvRepo, int64(pr2.Number), sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "ok", CommitID: sha2})
	require.NoError(t, err)
	sha2b := g.commit(t, head2, "envs/prod/deployment.yaml", "image: app@sha256:evil\n")
	_, err = gitAs(ctx, g.work, captain, "push", "-q", "origin", head2)
	require.NoError(t, err)
	waitHead(t, f, pr2.Number, sha2b)
	_, err = f.Merge(ctx, pr2.Number, sha2, "relcap: promote r1 to prod")
	require.ErrorIs(t, err, fault.ErrBlocked, "the reviewed commit is no longer the head")
	require.Contains(t, err.Error(), sha2[:12])
	require.Contains(t, err.Error(), sha2b[:12])
	errs = append(errs, err)
	// Gitea dismissed the approval of the older commit, and refuses the
	// new head, which nobody approved.
	var rev2 []forge.Review
	require.Eventually(t, func() bool {
		rev2, err = f.Reviews(ctx, pr2.Number)
		return err == nil && len(rev2) == 1 && rev2[0].State == forge.ReviewDismissed
	}, 30*time.Second, 200*time.Millisecond, "the approval of %s must read as dismissed: %+v (%v)", sha2, rev2, err)
	require.Equal(t, sha2, rev2[0].CommitSHA)
	_, err = f.Merge(ctx, pr2.Number, sha2b, "relcap: promote r1 to prod")
	require.ErrorIs(t, err, fault.ErrForgeNotReady)
	require.Contains(t, err.Error(), "Does not have enough approvals")
	errs = append(errs, err)
	require.Equal(t, merge, g.remoteMain(t), "main did not move")

	// A pull request closed without merge.
	head3 := "relcap/staging/r2"
	g.commit(t, head3, "envs/staging/deployment.yaml", "image: app@sha256:3\n")
	_, err = gitAs(ctx, g.work, captain, "push", "-q", "origin", head3)
	require.NoError(t, err)
	pr3, err := f.OpenPullRequest(ctx, forge.OpenPullRequestRequest{Head: head3, Base: GiteaBranch, Title: "relcap: promote r2 to staging"})
	require.NoError(t, err)
	closed := sdk.StateClosed
	_, _, err = g.sdkAs(t, GiteaCaptain).EditPullRequest(GiteaCaptain, GiteaEnvRepo, int64(pr3.Number), sdk.EditPullRequestOption{State: &closed})
	require.NoError(t, err)
	got3, err := f.PullRequest(ctx, pr3.Number)
	require.NoError(t, err)
	require.Equal(t, forge.PullRequestClosed, got3.State)
	require.Empty(t, got3.MergeCommit)
	_, err = f.Merge(ctx, pr3.Number, got3.HeadSHA, "no")
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "closed without merge")
	errs = append(errs, err)

	// An unknown pull request, and a token Gitea does not know.
	_, err = f.PullRequest(ctx, 9999)
	require.ErrorIs(t, err, fault.ErrNotFound)
	errs = append(errs, err)
	bad, err := gitea.New(gitea.Options{URL: g.RepoURL, Token: "0123456789abcdef0123456789abcdef01234567"})
	require.NoError(t, err)
	_, err = bad.PullRequest(ctx, pr.Number)
	require.Error(t, err)
	require.Contains(t, err.Error(), "token was refused")
	require.NotContains(t, err.Error(), "0123456789abcdef0123456789abcdef01234567")
	_, err = bad.Merge(ctx, pr.Number, sha, "x")
	require.Error(t, err)
	errs = append(errs, err)

	for _, e := range errs {
		for _, u := range g.Users {
			require.NotContains(t, e.Error(), u.Token, "an error carries %s's token", u.Login)
			require.NotContains(t, e.Error(), u.Password)
		}
		t.Logf("error as relcap shows it: %v", e)
	}
	require.False(t, errors.Is(errs[0], fault.ErrNotFound))

	// The lab's build links its version in (the SDK and Argo CD read it).
	v, _, err := g.sdkAs(t, GiteaCaptain).ServerVersion()
	require.NoError(t, err)
	require.Equal(t, GiteaVersion, v)
}
