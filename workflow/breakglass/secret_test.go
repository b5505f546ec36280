package breakglass_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// TestBreakGlassCaptureMasksSecretsInGitAndInThePullRequest: what a
// break-glass end writes outside relcap (the capture file and its commit
// message in the environment repository, the pull request's title and
// body on the forge) is masked like everything relcap writes. Before, the
// live state a person changed by hand (a password put in an environment
// variable) and a reason quoting a token went to Git and the forge in
// clear.
func TestBreakGlassCaptureMasksSecretsInGitAndInThePullRequest(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const password, token = "db-Pa55word/for+web", "argo-token-0123456789abcdef"
	w := newBGWorld(t, t0)
	w.p.Environments[0].EnvRepo.Review = forge.EnvRepoReview{Via: forge.ReviewByPullRequest, Forge: forge.GitLab, URL: "https://forge.test/team/env",
		Merge: forge.MergeByRelcap, Approvals: forge.ApprovalsFromForge}
	fakeForge := workflowtest.NewFakeForge(w.repo.W, w.clock, 1)
	j := workflowtest.NewJournal(w.clock, "alice")
	core, err := workflow.NewService(workflow.Deps{Project: w.p, Ledger: w.l, Journal: j, Clock: w.clock, Actor: "alice",
		Convergence: w.argo, EnvRepo: w.repo, Forges: &workflowtest.FakeForgeOpener{Forge: fakeForge}, Secrets: secret.NewSet(password, token)})
	require.NoError(t, err)
	svc := breakglass.New(core.Deps())
	b, err := svc.Start(ctx, breakglass.Request{Env: "staging", Reason: "token " + token + " rotated by hand", TTL: 30 * time.Minute})
	require.NoError(t, err)
	w.argo.SetDrift("web-staging", breakglass.Drift{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web",
		Live: `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"DB_PASSWORD","value":"` + password + `"}]}]}}}}`})
	w.repo.W.Branches["relcap/staging/"+b.ID] = "c0ffee0000000000000000000000000000000000"

	_, _, err = svc.End(ctx, "staging")
	require.NoError(t, err)
	require.Len(t, w.repo.captured, 1)
	prs := fakeForge.PullRequests()
	require.Len(t, prs, 1)
	for where, text := range map[string]string{
		"the capture file":      string(w.repo.captured[0].Content),
		"its commit message":    w.repo.captured[0].Message,
		"the pull request body": fakeForge.Body,
		"its title":             prs[0].Title,
	} {
		require.NotContains(t, text, password, where)
		require.NotContains(t, text, token, where)
	}
	require.Contains(t, string(w.repo.captured[0].Content), `"value": "(sensitive)"`, "the live state is kept, masked")
	require.Contains(t, fakeForge.Body, "token (sensitive) rotated by hand")
}
