//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	forge "github.com/relcap/relcap/adapters/forge/gitea"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/landing"
)

// The release repository of TestGiteaPromotionThroughRelcap: one
// environment whose environment repository is the lab Gitea's captain/env,
// promoted through a pull request (envrepo.review). Argo CD is named but
// never dialled: promote stops at the landing.
const giteaRelcapConfig = `version: 1
app: web
ownership: ownership.yaml
environments:
  - name: staging
    terraform: {dir: infra/staging, workspace: default}
    registry: {repository: REGISTRY/staging/web, require_signature: false}
    envrepo:
      path: CLONE_URL
      branch: main
      file: apps/web/staging/kustomization.yaml
      image: web
      format: kustomize
      review: {via: pull_request, forge: gitea, url: REPO_URL, token_env: GITEA_TOKEN, users: {approver: bob}}
    argocd: {server: argocd.example.com:443, app: web-staging}
    approvals: {plan: 1, promotion: 1, distinct_from_author: true}
  - name: prod
    production: true
    terraform: {dir: infra/prod, workspace: default}
    registry: {repository: REGISTRY/prod/web, require_signature: false}
    envrepo:
      path: CLONE_URL
      branch: main
      file: apps/web/prod/kustomization.yaml
      image: web
      format: kustomize
      review: {via: pull_request, forge: gitea, url: REPO_URL, token_env: GITEA_TOKEN, users: {approver: bob}}
    argocd: {server: argocd.example.com:443, app: web-prod}
    approvals: {plan: 1, promotion: 1, distinct_from_author: true}
effort: {idle_threshold: 2m, baseline_hours_per_release: 3}
`

const giteaRelcapOwnership = `version: 1
rules:
  - match: {group: apps, kind: Deployment, namespace: web}
    owner: argocd
`

const giteaKustomization = `# web in staging — pinned by relcap
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deployment.yaml
images:
  - name: web
    newTag: "1.0.0"
`

// relcapAsCaptain runs the relcap binary as the captain would from their
// own shell: their own XDG directories and HOME, whose git credential
// helper holds their Gitea token for git push, and GITEA_TOKEN for the
// forge's API.
type relcapAsCaptain struct {
	bin, cfg, home string
	env            []string
	outputs        []string // every stdout and stderr, scanned for tokens
}

func (c *relcapAsCaptain) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"-c", c.cfg}, args...)...)
	cmd.Dir = filepath.Dir(c.cfg)
	cmd.Env = c.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	c.outputs = append(c.outputs, out.String(), errb.String())
	t.Logf("relcap %s: stdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out.String(), errb.String())
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), errb.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errb.String()
}

func (c *relcapAsCaptain) ledger(t *testing.T) []*workflow.Release {
	t.Helper()
	l, err := store.OpenSQLite(t.Context(), filepath.Join(c.home, "data", "relcap", "ledger.db"))
	require.NoError(t, err)
	defer l.Close()
	rs, err := l.ListReleases(t.Context(), workflow.ReleaseFilter{})
	require.NoError(t, err)
	return rs
}

func (c *relcapAsCaptain) release(t *testing.T, id string) *workflow.Release {
	t.Helper()
	for _, r := range c.ledger(t) {
		if r.ID == id {
			return r
		}
	}
	require.Failf(t, "no such release", "%s", id)
	return nil
}

// journal is every journal entry of every session, in order, as kind and
// raw body.
type journalLine struct {
	Kind string          `json:"kind"`
	Body json.RawMessage `json:"data"`
	Raw  string          `json:"-"`
}

func (c *relcapAsCaptain) journal(t *testing.T) []journalLine {
	t.Helper()
	return readJournals(t, filepath.Join(c.home, "data"))
}

// readJournals reads every session's journal under an XDG data
// directory.
func readJournals(t *testing.T, dataHome string) []journalLine {
	t.Helper()
	var lines []journalLine
	files, err := filepath.Glob(filepath.Join(dataHome, "relcap", "sessions", "*", "journal.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var l journalLine
			require.NoError(t, json.Unmarshal(sc.Bytes(), &l), f)
			l.Raw = sc.Text()
			lines = append(lines, l)
		}
	}
	return lines
}

func kindsOf(lines []journalLine, kind string) []journalLine {
	var out []journalLine
	for _, l := range lines {
		if l.Kind == kind {
			out = append(out, l)
		}
	}
	return out
}

// pushTestImage pushes one random image under every ref.
func pushTestImage(t *testing.T, refs ...string) string {
	t.Helper()
	img, err := random.Image(1024, 2)
	require.NoError(t, err)
	for _, ref := range refs {
		r, err := name.ParseReference(ref)
		require.NoError(t, err)
		require.NoError(t, remote.Write(r, img))
	}
	d, err := img.Digest()
	require.NoError(t, err)
	return d.String()
}

// relcapBinary builds relcap as a user installs it: with its Argo CD
// helper beside it, where relcap looks first.
func relcapBinary(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	dir := t.TempDir()
	for name, pkg := range map[string]string{"relcap": "./cmd/relcap", "relcap-argocd": "./cmd/relcap-argocd"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "build %s: %s", name, out)
	}
	return filepath.Join(dir, "relcap")
}

func forgeAdapter(repoURL, token string) (*forge.Adapter, error) {
	return forge.New(forge.Options{URL: repoURL, Token: token, Timeout: 20 * time.Second})
}

// pullRequest is a pull request of captain/env as Gitea serves it of captain/env as Gitea lists them.
func (g *testGitea) pullRequest(t *testing.T, number int) *sdk.PullRequest {
	t.Helper()
	pr, _, err := g.sdkAs(t, GiteaApprover).GetPullRequest(GiteaCaptain, GiteaEnvRepo, int64(number))
	require.NoError(t, err)
	return pr
}

// TestGiteaPromotionThroughRelcap is relcap itself, the binary, promoting
// through a pull request on the lab's real Gitea: it pushes its branch
// with the captain's credentials from git's credential helper, opens the
// pull request, waits for the approver's review on Gitea, merges through
// the API and records the merge commit; a pull request closed unmerged
// blocks with the next safe action.
func TestGiteaPromotionThroughRelcap(t *testing.T) {
	g := startTestGitea(t, map[string]string{"apps/web/staging/kustomization.yaml": giteaKustomization,
		"apps/web/prod/kustomization.yaml": strings.Replace(giteaKustomization, "staging", "prod", 1)})
	ctx := context.Background()
	captain, approver := g.user(t, GiteaCaptain), g.user(t, GiteaApprover)
	bin := relcapBinary(t)

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ru, err := url.Parse(srv.URL)
	require.NoError(t, err)
	host := ru.Host

	repo := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "infra/staging"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "infra/prod"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "ownership.yaml"), []byte(giteaRelcapOwnership), 0o644))
	cfg := filepath.Join(repo, "relcap.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(strings.NewReplacer("REGISTRY", host, "CLONE_URL", g.CloneURL, "REPO_URL", g.RepoURL).Replace(giteaRelcapConfig)), 0o644))

	// The captain's shell: git's credential store holds their token for
	// the Gitea host, as `git credential approve` (or a first git push)
	// would leave it.
	home := t.TempDir()
	gu, err := url.Parse(g.URL)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[credential]\n\thelper = store --file="+filepath.Join(home, ".git-credentials")+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".git-credentials"), []byte("http://"+captain.Login+":"+captain.Token+"@"+gu.Host+"\n"), 0o600))
	c := &relcapAsCaptain{bin: bin, cfg: cfg, home: home, env: []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "USER=captain", "GIT_CONFIG_NOSYSTEM=1",
		"XDG_DATA_HOME=" + filepath.Join(home, "data"), "XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"XDG_CACHE_HOME=" + filepath.Join(home, "cache"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"GITEA_TOKEN=" + captain.Token, "NO_COLOR=1",
	}}

	code, out, errOut := c.run(t, "validate")
	require.Equal(t, 0, code, out+errOut)

	// 1. promote pushes relcap's branch and opens the pull request, then
	// waits on the forge (exit 3) with its address.
	digest := pushTestImage(t, host+"/ci/web:1.4.2")
	code, out, errOut = c.run(t, "promote", "--env", "staging", "--image", host+"/ci/web:1.4.2")
	require.Equal(t, 3, code, out+errOut)
	require.Contains(t, out+errOut, "waiting on the forge")
	prURL := g.RepoURL + "/pulls/1"
	require.Contains(t, out+errOut, prURL)
	rs := c.ledger(t)
	require.Len(t, rs, 1)
	r1 := rs[0]
	require.NotNil(t, r1.Checkpoints.PullRequest)
	require.Equal(t, 1, r1.Checkpoints.PullRequest.Number)
	require.Empty(t, r1.Checkpoints.EnvCommit, "not landed before the review")
	require.Equal(t, g.Seeded, g.remoteMain(t))

	pr := g.pullRequest(t, 1)
	require.Equal(t, sdk.StateOpen, pr.State)
	require.Equal(t, GiteaBranch, pr.Base.Ref)
	require.Equal(t, "relcap/staging/"+r1.ID, pr.Head.Ref)
	require.Equal(t, GiteaCaptain, pr.Poster.UserName)
	require.Contains(t, pr.Body, digest)
	require.Contains(t, pr.Body, "relcap-release: "+r1.ID)
	require.Contains(t, pr.Title, r1.ID)
	head := pr.Head.Sha
	show, err := git(ctx, g.work, "fetch", "-q", "origin")
	require.NoError(t, err, show)
	pinned, err := git(ctx, g.work, "show", head+":apps/web/staging/kustomization.yaml")
	require.NoError(t, err)
	require.Contains(t, pinned, "digest: "+digest)

	// Waiting again changes nothing: no second pull request.
	code, out, errOut = c.run(t, "promote", "--env", "staging", "--image", host+"/ci/web@"+digest, "--release", r1.ID)
	require.Equal(t, 3, code, out+errOut)
	require.Contains(t, out+errOut, prURL)

	// 2. A direct push to main is still refused by Gitea.
	direct := g.commit(t, "direct", "apps/web/staging/kustomization.yaml", "direct\n")
	pushOut, err := gitAs(ctx, g.work, captain, "push", "origin", direct+":refs/heads/"+GiteaBranch)
	require.Error(t, err)
	require.Contains(t, pushOut, "protected branch")
	require.Equal(t, g.Seeded, g.remoteMain(t))

	// 3. The approver approves on Gitea, as themself.
	_, _, err = g.sdkAs(t, GiteaApprover).CreatePullReview(GiteaCaptain, GiteaEnvRepo, 1, sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "ok", CommitID: head})
	require.NoError(t, err)

	// 4. promote again merges through Gitea's API: main is the merge
	// commit, which the ledger records as the release's revision.
	code, out, errOut = c.run(t, "promote", "--env", "staging", "--image", host+"/ci/web@"+digest, "--release", r1.ID)
	require.Equal(t, 0, code, out+errOut)
	main := g.remoteMain(t)
	require.NotEqual(t, g.Seeded, main)
	merged := g.pullRequest(t, 1)
	require.True(t, merged.HasMerged)
	require.NotNil(t, merged.MergedCommitID)
	require.Equal(t, *merged.MergedCommitID, main, "main is the merge commit")
	r1 = c.release(t, r1.ID)
	require.Equal(t, main, r1.Checkpoints.EnvCommit, "the ledger's revision is the merge commit")
	require.Equal(t, main, r1.Checkpoints.PullRequest.MergeCommit)
	require.True(t, r1.Checkpoints.PullRequest.ByRelcap)

	lines := c.journal(t)
	opened := kindsOf(lines, "promotion.pr_opened")
	require.NotEmpty(t, opened)
	var o landing.PromotionPROpened
	require.NoError(t, json.Unmarshal(opened[0].Body, &o), opened[0].Raw)
	require.Equal(t, 1, o.Number)
	require.Equal(t, prURL, o.URL)
	reviewed := kindsOf(lines, "promotion.pr_reviewed")
	require.NotEmpty(t, reviewed)
	var rv landing.PromotionPRReviewed
	require.NoError(t, json.Unmarshal(reviewed[len(reviewed)-1].Body, &rv), reviewed[len(reviewed)-1].Raw)
	require.Equal(t, 1, rv.Number)
	require.Equal(t, 1, rv.Counted)
	require.Len(t, rv.Reviews, 1)
	require.Equal(t, approver.Login, rv.Reviews[0].Login)
	require.Equal(t, "bob", rv.Reviews[0].Principal)
	require.Equal(t, head, rv.Reviews[0].Commit)
	mergedLines := kindsOf(lines, "promotion.pr_merged")
	require.Len(t, mergedLines, 1)
	var m landing.PromotionPRMerged
	require.NoError(t, json.Unmarshal(mergedLines[0].Body, &m), mergedLines[0].Raw)
	require.Equal(t, 1, m.Number)
	require.Equal(t, main, m.MergeCommit)
	require.Equal(t, head, m.Reviewed)
	require.True(t, m.ByRelcap)
	require.Len(t, m.Reviewers, 1)
	require.Equal(t, "bob", m.Reviewers[0].Principal)

	// 5. A second release, into prod, whose pull request is closed
	// unmerged on Gitea, blocks with the next safe action. (Staging never
	// converges here, there being no Argo CD: the promotion says why it
	// goes on regardless, and relcap journals it.)
	// In staging's repository too, where prod copies it from.
	digest2 := pushTestImage(t, host+"/ci/web:1.4.3", host+"/staging/web:1.4.3")
	code, out, errOut = c.run(t, "promote", "--env", "prod", "--image", host+"/ci/web:1.4.3", "--force-unverified", "gitea suite: no Argo CD to converge staging")
	require.Equal(t, 3, code, out+errOut)
	require.Contains(t, out+errOut, g.RepoURL+"/pulls/2")
	var r2 *workflow.Release
	for _, r := range c.ledger(t) {
		if r.Env == "prod" {
			r2 = r
		}
	}
	require.NotNil(t, r2)
	pr2 := g.pullRequest(t, 2)
	require.Contains(t, pr2.Body, digest2)
	require.Contains(t, pr2.Body, "relcap-release: "+r2.ID)
	state := sdk.StateClosed
	_, _, err = g.sdkAs(t, GiteaCaptain).EditPullRequest(GiteaCaptain, GiteaEnvRepo, 2, sdk.EditPullRequestOption{State: &state})
	require.NoError(t, err)
	code, out, errOut = c.run(t, "promote", "--env", "prod", "--image", host+"/ci/web:1.4.3", "--release", r2.ID)
	require.Equal(t, 3, code, out+errOut)
	require.Contains(t, out+errOut, "closed without merge")
	require.Contains(t, out+errOut, "reopen pull request #2")
	require.Equal(t, main, g.remoteMain(t), "main did not move")

	// 6. Reopened and approved, then changed after the approval (someone
	// pushes to relcap's branch): relcap does not merge it, and names both
	// commits.
	state = sdk.StateOpen
	_, _, err = g.sdkAs(t, GiteaCaptain).EditPullRequest(GiteaCaptain, GiteaEnvRepo, 2, sdk.EditPullRequestOption{State: &state})
	require.NoError(t, err)
	head2 := g.pullRequest(t, 2).Head.Sha
	_, _, err = g.sdkAs(t, GiteaApprover).CreatePullReview(GiteaCaptain, GiteaEnvRepo, 2, sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "ok", CommitID: head2})
	require.NoError(t, err)
	_, err = git(ctx, g.work, "fetch", "-q", "origin")
	require.NoError(t, err)
	branch2 := "relcap/prod/" + r2.ID
	_, err = git(ctx, g.work, "checkout", "-q", "-b", branch2, "origin/"+branch2)
	require.NoError(t, err)
	moved := g.commit(t, branch2, "apps/web/prod/kustomization.yaml", "images: [{name: web, newName: evil/web}]\n")
	_, err = gitAs(ctx, g.work, captain, "push", "-q", "origin", branch2)
	require.NoError(t, err)
	f, err := forgeAdapter(g.RepoURL, captain.Token)
	require.NoError(t, err)
	waitHead(t, f, 2, moved)
	code, out, errOut = c.run(t, "promote", "--env", "prod", "--image", host+"/ci/web:1.4.3", "--release", r2.ID)
	require.Equal(t, 3, code, out+errOut)
	require.Contains(t, out+errOut, head2[:12])
	require.Contains(t, out+errOut, moved[:12])
	require.Equal(t, main, g.remoteMain(t), "a pull request changed after approval is not merged")
	require.False(t, g.pullRequest(t, 2).HasMerged)
	require.Empty(t, c.release(t, r2.ID).Checkpoints.EnvCommit)

	code, out, errOut = c.run(t, "journal", "verify")
	require.Equal(t, 0, code, out+errOut)

	// No token or password anywhere relcap wrote or printed: its
	// outputs, journals, ledger, caches (the clone's config included).
	secrets := map[string]string{}
	for _, u := range g.Users {
		secrets[u.Login+"'s token"] = u.Token
		secrets[u.Login+"'s password"] = u.Password
	}
	for i, o := range c.outputs {
		for what, s := range secrets {
			require.NotContains(t, o, s, "output %d carries %s", i, what)
		}
	}
	scanned := 0
	require.NoError(t, filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == filepath.Join(home, ".git-credentials") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		scanned++
		for what, s := range secrets {
			require.False(t, bytes.Contains(b, []byte(s)), "%s carries %s", p, what)
		}
		return nil
	}))
	t.Logf("scanned %d files relcap wrote for tokens", scanned)
}
