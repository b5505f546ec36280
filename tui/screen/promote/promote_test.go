package promote_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/screen/promote"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
)

type port struct{}

func (port) ApproveRelease(context.Context, string, string) (approval.Approval, approval.Check, error) {
	return approval.Approval{}, approval.Check{}, nil
}
func (port) MayApprove(string, approval.Kind, string) error { return nil }
func (port) Actor() string                                  { return "alice" }

// TestPromotionScreenShowsThePullRequestAndItsReviews: where it is, each
// review counted or why not, and that relcap waits on the forge (no
// approve key: approvals are given there).
func TestPromotionScreenShowsThePullRequestAndItsReviews(t *testing.T) {
	t.Parallel()
	r := workflow.NewRelease("web-staging-1", "web", "staging", "registry.test/ci/web:1.2.3", "alice", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	st := r.Step(workflow.StepPromotion)
	st.Status, st.Message = workflow.Blocked, "pull request #7 (https://forge.test/team/env/pulls/7) waits for 1 more approving review(s) of commit bbbbbbbbbbbb on the forge (0/1)"
	r.Checkpoints.EnvBranch, r.Checkpoints.EnvPinned = "relcap/staging/web-staging-1", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	r.Checkpoints.PullRequest = &forge.PullRequestRecord{Forge: forge.Gitea, Number: 7, URL: "https://forge.test/team/env/pulls/7",
		Head: "relcap/staging/web-staging-1", Base: "main", HeadSHA: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", State: forge.PullRequestOpen,
		Reviews: []forge.ReviewVerdict{
			{Login: "bob-forge", Principal: "bob", State: forge.ReviewApproved, Commit: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Why: "approved commit aaaaaaaaaaaa, but the pull request is now at bbbbbbbbbbbb: approvals must be renewed on the new commit"},
			{Login: "carol", Principal: "carol", State: forge.ReviewApproved, Commit: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", Counted: true},
		}}
	m := promote.New(port{}, theme.New(true), keys.Default())
	m.SetSize(200, 40)
	m, _ = m.Update(screen.RunStateMsg{Release: r, Err: fmt.Errorf("%w: %s", fault.ErrAwaitingForge, st.Message)})
	v := ansi.Strip(m.View())
	for _, want := range []string{
		"Pull req.  #7 https://forge.test/team/env/pulls/7 open at bbbbbbbbbbbb",
		"bob-forge → bob approved on aaaaaaaaaaaa · not counted: approved commit aaaaaaaaaaaa, but the pull request is now at bbbbbbbbbbbb: approvals must",
		"carol approved on bbbbbbbbbbbb · counted",
		"waiting on the forge: review and merge pull request #7 (https://forge.test/team/env/pulls/7) there; relcap re-checks every 5s",
	} {
		require.Contains(t, v, want)
	}
	require.NotContains(t, v, "approve as alice", "approvals are given on the forge")

	// At 80 columns the forge's reason and the address wrap instead of
	// being cut, and a wait on the forge reads as waiting, not blocked.
	m.SetSize(80, 40)
	st.Message = "the forge's branch protection does not let pull request #7 merge yet: Does not have enough approvals (relcap itself needs no review here; https://forge.test/team/env/pulls/7)"
	m, _ = m.Update(screen.RunStateMsg{Release: r, Err: fmt.Errorf("%w: %s", fault.ErrAwaitingForge, st.Message)})
	v = ansi.Strip(m.View())
	require.Contains(t, v, "◐ waiting: the forge's branch protection does not let pull request #7 merge yet")
	require.NotContains(t, v, "■ blocked")
	require.NotContains(t, v, "…", "nothing cut at the edge")
	require.Regexp(t, `Does not have\s+enough approvals`, v)
	require.Contains(t, v, "https://forge.test/team/env/pulls/7)")
	require.Contains(t, v, "continues once it can land")
	m.SetSize(200, 40)

	// Closed without merge: blocked, with the step's next action.
	r.Checkpoints.PullRequest.State = forge.PullRequestClosed
	st.Message = "pull request #7 (https://forge.test/team/env/pulls/7) was closed without merge: reopen pull request #7 on the forge and run relcap resume web-staging-1, or roll back / start a new release"
	m, _ = m.Update(screen.RunStateMsg{Release: r, Err: fmt.Errorf("%w: %s", fault.ErrBlocked, st.Message)})
	v = ansi.Strip(m.View())
	require.Contains(t, v, "closed without merge")
	require.Contains(t, v, "reopen pull request #7 on the forge and run relcap resume web-staging-1")
	require.Contains(t, v, "blocked by policy: act on the message above")
}
