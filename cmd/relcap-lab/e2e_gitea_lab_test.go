//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/stretchr/testify/require"
)

// TestGiteaLab is issue 18's end-to-end test: a lab whose Argo CD follows
// the environment repository on the lab's real Gitea, where main is
// protected and takes changes only through a pull request with one
// approving review. relcap promotes through it the way a captain would:
// it opens the pull request, waits, lands only after the approver's
// review (made in Gitea, through its API, as that user), merges, and
// converges on the merge commit, with kubectl and Argo CD agreeing. Run
// for each Argo CD version by lab/e2e-matrix.sh.
func TestGiteaLab(t *testing.T) {
	l := startLab(t, "--gitea")
	cfg := filepath.Join(l.dir, "relcap.yaml")
	clone, repoURL := l.env["RELCAP_LAB_GITEA_CLONE_URL"], l.env["RELCAP_LAB_GITEA_REPO"]
	captainToken, approverToken := l.env[GiteaTokenEnv], l.env[GiteaApproverTokenEnv]
	require.NotEmpty(t, clone)
	require.NotEmpty(t, captainToken)
	require.NotEmpty(t, approverToken)
	repo := func(env string) string { return l.env["RELCAP_LAB_REGISTRY"] + "/" + env + "/" + AppName }

	var outputs []string
	relcap := func(t *testing.T, args ...string) (int, string) {
		t.Helper()
		code, out := l.run(t, l.relcap, append([]string{"-c", cfg, "--no-tui", "--actor", "captain"}, args...)...)
		outputs = append(outputs, out)
		return code, out
	}
	giteaMain := func(t *testing.T) string {
		t.Helper()
		code, out := l.run(t, "git", "ls-remote", clone, "refs/heads/"+GiteaBranch)
		require.Equal(t, 0, code, out)
		f := strings.Fields(out)
		require.Len(t, f, 2, "ls-remote: %q", out)
		return f[0]
	}
	approver, err := giteaClient(t.Context(), l.env["RELCAP_LAB_GITEA_URL"], sdk.SetToken(approverToken))
	require.NoError(t, err)
	argoApp := func(t *testing.T, env, path string) string {
		t.Helper()
		return l.kubectl(t, "get", "application", ArgoApp(env), "-n", ArgoNamespace, "-o", "jsonpath={"+path+"}")
	}
	ledger := l.ledger(t)

	t.Run("argo cd follows gitea's repository, converged on its main", func(t *testing.T) {
		seeded := giteaMain(t)
		for _, env := range Envs {
			require.Equal(t, clone, argoApp(t, env, ".spec.source.repoURL"))
		}
		code, out := relcap(t, "converge", "--env", "staging", "--revision", seeded, "--timeout", "2m")
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "web-staging converged: synced at "+seeded[:12])
	})

	t.Run("a direct push to protected main is refused by gitea", func(t *testing.T) {
		work := t.TempDir()
		code, out := l.run(t, "git", "clone", "-q", clone, work)
		require.Equal(t, 0, code, out)
		for _, args := range [][]string{
			{"-c", "user.name=captain", "-c", "user.email=captain@lab", "commit", "-q", "--allow-empty", "-m", "straight to main"},
			{"push", "origin", "HEAD:refs/heads/" + GiteaBranch},
		} {
			code, out = l.run(t, "git", append([]string{"-C", work}, args...)...)
			outputs = append(outputs, out)
		}
		require.NotEqual(t, 0, code, "gitea must refuse the push (the credential helper gave the captain's token):\n%s", out)
		require.Contains(t, out, "protected", out)
	})

	// promote runs one environment's promotion through its pull request:
	// it waits on the forge, the approver approves in Gitea, and resume
	// merges and converges on the merge commit.
	promote := func(t *testing.T, env, ref, digest string, number int) {
		before := giteaMain(t)
		code, out := relcap(t, "promote", "--env", env, "--image", ref)
		require.Equal(t, 3, code, "the promotion waits on the forge:\n%s", out)
		require.Contains(t, out, "waiting on the forge")
		prURL := repoURL + "/pulls/" + strconv.Itoa(number)
		require.Contains(t, out, prURL)
		r := releaseOf(t, ledger, env, ref)
		require.NotNil(t, r)
		require.NotNil(t, r.Checkpoints.PullRequest)
		require.Equal(t, number, r.Checkpoints.PullRequest.Number)
		require.Empty(t, r.Checkpoints.EnvCommit, "nothing lands before the review")
		require.Equal(t, before, giteaMain(t), "main did not move")

		// resume without a review still waits: Gitea's protection wants
		// one approving review.
		code, out = relcap(t, "resume", r.ID, "--timeout", "1m")
		require.Equal(t, 3, code, out)
		require.Contains(t, out, "waiting on the forge")
		require.Equal(t, before, giteaMain(t))

		pr, _, err := approver.GetPullRequest(GiteaCaptain, GiteaEnvRepo, int64(number))
		require.NoError(t, err)
		require.Equal(t, GiteaCaptain, pr.Poster.UserName, "relcap opened it with the captain's token")
		require.Contains(t, pr.Body, digest, "the description carries the evidence")
		require.Contains(t, pr.Body, "relcap-release: "+r.ID)
		_, _, err = approver.CreatePullReview(GiteaCaptain, GiteaEnvRepo, int64(number), sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "digest checked", CommitID: pr.Head.Sha})
		require.NoError(t, err)

		code, out = relcap(t, "resume", r.ID, "--timeout", "4m")
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "converged in "+env)
		merge := giteaMain(t)
		require.NotEqual(t, before, merge)
		got := releaseOf(t, ledger, env, ref)
		require.Equal(t, merge, got.Checkpoints.EnvCommit, "the merge commit is the revision converged on")
		rec := got.Checkpoints.PullRequest
		require.Equal(t, forge.PullRequestMerged, rec.State)
		require.Equal(t, merge, rec.MergeCommit)
		require.True(t, rec.ByRelcap)
		require.Len(t, rec.Reviews, 1)
		require.Equal(t, GiteaApprover, rec.Reviews[0].Login)
		require.Equal(t, "bob", rec.Reviews[0].Principal)
		require.True(t, rec.Reviews[0].Counted, rec.Reviews[0].Why)
		require.Equal(t, "digest checked", rec.Reviews[0].Comment, "what the approver wrote reaches the captain")

		parents := strings.Fields(l.remoteGit(t, clone, "rev-list", "--parents", "-n", "1", merge))
		require.Len(t, parents, 3, "a merge commit of main and the pull request's head")
		require.Equal(t, before, parents[1])
		require.Equal(t, pr.Head.Sha, parents[2], "the reviewed commit is what merged")

		image, ready, want := l.live(t, env)
		require.Equal(t, repo(env)+"@"+digest, image, "the apiserver runs the promoted digest")
		require.Equal(t, want, ready)
		require.Equal(t, merge, argoApp(t, env, ".status.sync.revision"), "argo cd synced the merge commit")
		require.Equal(t, "Healthy", argoApp(t, env, ".status.health.status"))
	}

	ref, digest := l.pushBuild(t, "1.1.0")
	t.Run("staging: the pull request lands after the approver's review and converges on its merge commit", func(t *testing.T) {
		promote(t, "staging", ref, digest, 1)
	})
	t.Run("prod: the same digest, reviewed by the approver, no relcap approval needed", func(t *testing.T) {
		promote(t, "prod", ref, digest, 2)
	})

	t.Run("the journal links each pull request, its reviewer and its merge commit, and verifies", func(t *testing.T) {
		lines := readJournals(t, l.data)
		for _, env := range Envs {
			r := releaseOf(t, ledger, env, ref)
			var opened, reviewed, merged bool
			for _, jl := range lines {
				var body struct {
					Release     string                `json:"release"`
					Number      int                   `json:"number"`
					MergeCommit string                `json:"merge_commit"`
					Reviewers   []forge.ReviewVerdict `json:"reviewers"`
				}
				require.NoError(t, json.Unmarshal(jl.Body, &body))
				if body.Release != r.ID || body.Number != r.Checkpoints.PullRequest.Number {
					continue
				}
				switch jl.Kind {
				case "promotion.pr_opened":
					opened = true
				case "promotion.pr_reviewed":
					reviewed = true
				case "promotion.pr_merged":
					merged = true
					require.Equal(t, r.Checkpoints.EnvCommit, body.MergeCommit)
					require.Len(t, body.Reviewers, 1)
					require.Equal(t, "bob", body.Reviewers[0].Principal)
				}
			}
			require.True(t, opened && reviewed && merged, "%s: opened %v reviewed %v merged %v", env, opened, reviewed, merged)
		}
		code, out := relcap(t, "journal", "verify")
		require.Equal(t, 0, code, out)
	})

	t.Run("no token in any output", func(t *testing.T) {
		require.NotEmpty(t, outputs)
		for _, out := range outputs {
			for _, tok := range []string{captainToken, approverToken} {
				require.NotContains(t, out, tok)
			}
		}
	})
}

// remoteGit runs git over remote's main: it fetches main into a scratch
// repository, as rev-list needs the objects, and runs args there.
func (l *e2eLab) remoteGit(t *testing.T, remote string, args ...string) string {
	t.Helper()
	scratch := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if out, err := git(ctx, scratch, "init", "-q"); err != nil {
		require.NoError(t, err, out)
	}
	if out, err := git(ctx, scratch, "fetch", "-q", remote, "refs/heads/"+GiteaBranch); err != nil {
		require.NoError(t, err, out)
	}
	out, err := git(ctx, scratch, args...)
	require.NoError(t, err, out)
	return out
}
