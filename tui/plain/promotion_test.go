package plain_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/forge"
)

func TestPrintPromotionNamesThePullRequestAndItsReviews(t *testing.T) {
	t.Parallel()
	r := workflow.NewRelease("web-prod-1", "web", "prod", "registry.test/ci/web:1.2.3", "alice", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	st := r.Step(workflow.StepPromotion)
	st.Status, st.Message = workflow.Blocked, "pull request #3 (https://forge.test/team/env/pulls/3) waits for 1 more approving review(s)"
	r.Checkpoints.PullRequest = &forge.PullRequestRecord{Number: 3, URL: "https://forge.test/team/env/pulls/3", Head: "relcap/prod/web-prod-1", Base: "main",
		State: forge.PullRequestOpen, Reviews: []forge.ReviewVerdict{{Login: "alice", Principal: "alice", State: forge.ReviewApproved, Commit: "abcdef0123456789", Why: "alice captains this promotion"}}}
	var b bytes.Buffer
	plain.PrintPromotion(&b, r)
	require.Contains(t, b.String(), "pull request #3 https://forge.test/team/env/pulls/3 (relcap/prod/web-prod-1 into main): open\n")
	require.Contains(t, b.String(), "  review   alice approved on abcdef012345: not counted: alice captains this promotion\n")

	r.Checkpoints.PullRequest.MergeCommit, r.Checkpoints.PullRequest.ByRelcap = "0123456789abcdef", true
	b.Reset()
	plain.PrintPromotion(&b, r)
	require.Contains(t, b.String(), ": merged by relcap at 0123456789ab\n")
}
