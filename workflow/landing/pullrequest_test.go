package landing_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/landing"
	"github.com/relcap/relcap/workflow/workflowtest"
)

var update = flag.Bool("update", false, "rewrite golden files")

var t0 = workflowtest.T0

// testProject is workflowtest.Project: app web in staging and prod.
func testProject(planApprovals int) *workflow.Project { return workflowtest.Project(planApprovals) }

// process is one relcap process: a Service over a shared world and ledger.
type process struct {
	svc     *workflow.Service
	journal *workflowtest.Journal
}

// prProject is testProject with staging's changes reviewed through pull
// requests: one approving review, by someone other than the captain.
func prProject(mut func(*workflow.Environment)) *workflow.Project {
	p := testProject(0)
	env := &p.Environments[0]
	env.Approvals.Promotion = 1
	env.EnvRepo.Review = forge.EnvRepoReview{Via: forge.ReviewByPullRequest, Forge: forge.Gitea, URL: "https://forge.test/team/env",
		Merge: forge.MergeByRelcap, Approvals: forge.ApprovalsFromForge, Users: []forge.User{{Login: "bob-forge", Principal: "bob"}}}
	if mut != nil {
		mut(env)
	}
	return p
}

type prWorld struct {
	w     *workflowtest.World
	l     *workflowtest.Ledger
	clock *workflowtest.Clock
	forge *workflowtest.FakeForge
	p     *workflow.Project
}

func newPRWorld(p *workflow.Project) *prWorld {
	w, clock := workflowtest.NewWorld(), workflowtest.NewClock(t0)
	return &prWorld{w: w, l: workflowtest.NewLedger(), clock: clock, forge: workflowtest.NewFakeForge(w, clock, 1), p: p}
}

// process is a relcap process whose Deps open the fake forge.
func (pw *prWorld) process(t *testing.T, actor string) process {
	t.Helper()
	j := workflowtest.NewJournal(pw.clock, actor)
	tf := workflowtest.Terraform{W: pw.w}
	svc, err := workflow.NewService(workflow.Deps{
		Project: pw.p, Ledger: pw.l, Journal: j, Clock: pw.clock, Actor: actor,
		Ownership: []workflow.OwnershipSource{workflowtest.Ownership{W: pw.w}},
		Planner:   tf, Applier: tf,
		Registry: workflowtest.Registry{W: pw.w}, EnvRepo: workflowtest.EnvRepo{W: pw.w},
		Convergence: workflowtest.Convergence{W: pw.w}, ConvergeTimeout: time.Minute,
		Forges: &workflowtest.FakeForgeOpener{Forge: pw.forge}, Lander: landing.PullRequests{},
	})
	require.NoError(t, err)
	return process{svc: svc, journal: j}
}

// startBlocked starts a staging release and runs it to its pull request.
func (pw *prWorld) startBlocked(t *testing.T, p process) *workflow.Release {
	t.Helper()
	r, err := p.svc.Start(t.Context(), workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	got, err := p.svc.Run(t.Context(), r.ID, nil)
	require.ErrorIs(t, err, fault.ErrAwaitingForge)
	require.Equal(t, workflow.Blocked, got.Step(workflow.StepPromotion).Status)
	require.NotNil(t, got.Checkpoints.PullRequest)
	require.Equal(t, 1, got.Checkpoints.PullRequest.Number)
	require.False(t, got.Checkpoints.Landed())
	return got
}

func TestPullRequestIsOpenedOnceAndMergedAtTheReviewedCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pw := newPRWorld(prProject(func(e *workflow.Environment) { e.Approvals.Approvers.Promotion = []string{"bob", "alice"} }))
	captain := pw.process(t, "alice")
	r := pw.startBlocked(t, captain)
	require.Contains(t, r.Step(workflow.StepPromotion).Message, "pull request #1 (https://forge.test/team/env/pulls/1) waits for 1 more approving review(s)")
	require.Equal(t, "relcap: promote web "+pw.w.Artifact.Digest.Short()+" to staging (release "+r.ID+")", pw.forge.PullRequests()[0].Title)
	require.Contains(t, pw.forge.Body, "relcap-release: "+r.ID)

	// Resuming reads the same pull request; it does not open another.
	_, err := captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrAwaitingForge)
	require.Equal(t, 1, pw.forge.Opens)

	// The captain's own review, a stranger's and a comment do not count.
	pw.forge.Approve(1, "alice")
	pw.forge.Approve(1, "mallory")
	pw.forge.Review(1, "bob-forge", forge.ReviewCommented)
	got, err := captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrAwaitingForge)
	msg := got.Step(workflow.StepPromotion).Message
	require.Contains(t, msg, "alice: alice opened or captains this promotion")
	require.Contains(t, msg, "mallory: mallory is not in approvers.promotion (bob, alice)")
	require.Contains(t, msg, "bob-forge → bob: did not approve (commented)")
	require.Zero(t, pw.forge.Merges)

	pw.forge.Approve(1, "bob-forge")
	final, err := captain.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
	require.Equal(t, 1, pw.forge.Merges)
	merged := pw.forge.PullRequests()[0]
	require.Equal(t, forge.PullRequestMerged, merged.State)
	require.Equal(t, merged.MergeCommit, final.Checkpoints.EnvCommit, "convergence waits for the merge commit, not the branch tip")
	require.NotEqual(t, final.Checkpoints.EnvPinned, final.Checkpoints.EnvCommit)
	pr := final.Checkpoints.PullRequest
	require.True(t, pr.ByRelcap)
	require.Equal(t, merged.MergeCommit, pr.MergeCommit)
	rec, _, ok := evidence.Of[evidence.PullRequestLanded](final.Step(workflow.StepPromotion).Evidence)
	require.True(t, ok)
	require.Equal(t, []string{"bob-forge → bob"}, rec.Reviewers)
	require.Equal(t, final.Checkpoints.EnvPinned, rec.Reviewed)

	kinds := captain.journal.Kinds()
	for _, k := range []string{"promotion.pr_opened", "promotion.pr_reviewed", "promotion.pr_merged", "release.converged"} {
		require.Contains(t, kinds, k)
	}
	for _, e := range captain.journal.Entries() {
		if e.Kind == landing.KindPromotionPRMerged {
			require.Contains(t, string(e.Data), `"merge_commit":"`+merged.MergeCommit+`"`)
			require.Contains(t, string(e.Data), `"login":"bob-forge","principal":"bob"`)
		}
	}
}

func TestPullRequestHeadMovedAfterApprovalIsNotMerged(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pw := newPRWorld(prProject(nil))
	captain := pw.process(t, "alice")
	r := pw.startBlocked(t, captain)
	pw.forge.Approve(1, "bob-forge")
	moved := pw.forge.Push(1)

	got, err := captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Zero(t, pw.forge.Merges, "a change pushed after approval is not merged")
	msg := got.Step(workflow.StepPromotion).Message
	require.Contains(t, msg, "approved on commit "+workflow.ShortHash(r.Checkpoints.EnvPinned))
	require.Contains(t, msg, "head moved to "+workflow.ShortHash(moved))
	require.Contains(t, msg, "the approvals must be renewed on the new commit")
	require.Contains(t, captain.journal.Kinds(), "promotion.pr_blocked")
	require.False(t, got.Checkpoints.Landed())

	// Renewed on the new commit, it merges that commit.
	pw.forge.Approve(1, "bob-forge")
	final, err := captain.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, moved, final.Checkpoints.PullRequest.HeadSHA)
	require.Equal(t, pw.forge.PullRequests()[0].MergeCommit, final.Checkpoints.EnvCommit)
}

func TestPullRequestClosedWithoutMergeBlocksWithTheNextAction(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pw := newPRWorld(prProject(nil))
	captain := pw.process(t, "alice")
	r := pw.startBlocked(t, captain)
	pw.forge.Close(1)

	got, err := captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.NotErrorIs(t, err, fault.ErrAwaitingForge, "waiting changes nothing: a person must act")
	require.Contains(t, got.Step(workflow.StepPromotion).Message, "was closed without merge: reopen pull request #1 on the forge and run relcap resume "+r.ID+", or roll back / start a new release")

	pw.forge.Reopen(1)
	pw.forge.Approve(1, "bob-forge")
	final, err := captain.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
}

func TestForgeRefusingTheMergeBlocksWithItsReason(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pw := newPRWorld(prProject(nil))
	pw.forge.MergeRefusal = "required status check ci/test failed"
	captain := pw.process(t, "alice")
	r := pw.startBlocked(t, captain)
	pw.forge.Approve(1, "bob-forge")

	got, err := captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, got.Step(workflow.StepPromotion).Message, "the forge refused to merge pull request #1")
	require.Contains(t, got.Step(workflow.StepPromotion).Message, "required status check ci/test failed")
	require.False(t, got.Checkpoints.Landed())
	require.Contains(t, captain.journal.Kinds(), "promotion.pr_blocked")
}

func TestNotMergeableWaitsWithTheForgesReason(t *testing.T) {
	t.Parallel()
	pw := newPRWorld(prProject(nil))
	pw.forge.RequiredReviews = 2 // the forge wants more than relcap counts
	captain := pw.process(t, "alice")
	r := pw.startBlocked(t, captain)
	pw.forge.Approve(1, "bob-forge")
	got, err := captain.svc.Run(t.Context(), r.ID, nil)
	require.ErrorIs(t, err, fault.ErrAwaitingForge)
	require.Contains(t, got.Step(workflow.StepPromotion).Message, "the forge does not let it merge yet: branch protection requires 2 approving review(s)")
	require.Zero(t, pw.forge.Merges)
}

// Gitea says nothing of its branch protection until asked to merge: the
// refusal for want of a review is a wait, retried once the review comes
// (the cockpit's ForgeMoved) or a minute later (a check that passed).
func TestForgeProtectionSpokenAtMergeIsAWaitNotABlock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pw := newPRWorld(prProject(func(env *workflow.Environment) { env.Approvals.Promotion = 0 }))
	pw.forge.ProtectionAtMerge = true
	captain := pw.process(t, "alice")
	r, err := captain.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	got, err := captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrAwaitingForge, "relcap needs no review here, Gitea's protection does")
	require.Contains(t, got.Step(workflow.StepPromotion).Message, "the forge's branch protection does not let pull request #1 merge yet: Does not have enough approvals")
	require.Equal(t, "Does not have enough approvals", got.Checkpoints.PullRequest.NotReady)
	require.NotContains(t, captain.journal.Kinds(), "promotion.pr_blocked")
	require.Zero(t, pw.forge.Merges)

	moved, err := captain.svc.ForgeMoved(ctx, r.ID)
	require.NoError(t, err)
	require.False(t, moved, "nothing changed on the forge: no new merge attempt every poll")
	pw.clock.Advance(landing.ForgeRetryInterval)
	moved, err = captain.svc.ForgeMoved(ctx, r.ID)
	require.NoError(t, err)
	require.True(t, moved, "a minute later the merge is tried again (a required check may have passed)")

	pw.forge.Approve(1, "bob-forge")
	moved, err = captain.svc.ForgeMoved(ctx, r.ID)
	require.NoError(t, err)
	require.True(t, moved, "a new review is something to do")
	got, err = captain.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.True(t, got.Checkpoints.Landed())
	require.Equal(t, 1, pw.forge.Merges)
}

func TestPullRequestMergedByHandIsPickedUpOnResume(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pw := newPRWorld(prProject(nil))
	captain := pw.process(t, "alice")
	r := pw.startBlocked(t, captain)
	pw.forge.Approve(1, "bob-forge")
	mc := pw.forge.MergeByHand(1, "carol")

	final, err := captain.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
	require.Equal(t, mc, final.Checkpoints.EnvCommit)
	require.False(t, final.Checkpoints.PullRequest.ByRelcap)
	require.Equal(t, "carol", final.Checkpoints.PullRequest.MergedBy)
	require.Equal(t, "bob", final.Checkpoints.PullRequest.Reviews[0].Principal, "the reviews are read when the merge is picked up")
	require.True(t, final.Checkpoints.PullRequest.Reviews[0].Counted)
	require.Zero(t, pw.forge.Merges)
}

func TestMergeByPersonWaitsForTheForgeToReportMerged(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pw := newPRWorld(prProject(func(e *workflow.Environment) { e.EnvRepo.Review.Merge = forge.MergeByPerson }))
	captain := pw.process(t, "alice")
	r := pw.startBlocked(t, captain)
	pw.forge.Approve(1, "bob-forge")

	got, err := captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrAwaitingForge)
	require.Contains(t, got.Step(workflow.StepPromotion).Message, "is approved (bob-forge → bob): waiting for a person to merge it on the forge")
	require.Zero(t, pw.forge.Merges)

	mc := pw.forge.MergeByHand(1, "bob-forge")
	final, err := captain.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, mc, final.Checkpoints.EnvCommit)
	require.Zero(t, pw.forge.Merges, "relcap never merged")
}

func TestApprovalsBothNeedForgeReviewsAndSignedRelcapApprovals(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pw := newPRWorld(prProject(func(e *workflow.Environment) { e.EnvRepo.Review.Approvals = forge.ApprovalsFromBoth }))
	captain := pw.process(t, "alice")
	r := pw.startBlocked(t, captain)
	pw.forge.Approve(1, "bob-forge")

	got, err := captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrApprovalRequired)
	require.NotErrorIs(t, err, fault.ErrAwaitingForge)
	require.Contains(t, got.Step(workflow.StepPromotion).Message, "also needs 1 more signed relcap approval(s)")
	require.Zero(t, pw.forge.Merges)

	_, check, err := pw.process(t, "bob").svc.ApproveRelease(ctx, r.ID, "reviewed")
	require.NoError(t, err)
	require.True(t, check.Satisfied())
	final, err := captain.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, pw.forge.PullRequests()[0].MergeCommit, final.Checkpoints.EnvCommit)
}

func TestRelcapApprovalIsRefusedWhereTheForgeApproves(t *testing.T) {
	t.Parallel()
	pw := newPRWorld(prProject(nil))
	captain := pw.process(t, "alice")
	r := pw.startBlocked(t, captain)
	_, _, err := pw.process(t, "bob").svc.ApproveRelease(t.Context(), r.ID, "lgtm")
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "approve it at https://forge.test/team/env/pulls/1")
}

// A reviewer's words reach the captain: the first line, clipped, with
// the terminal's control characters (the forge user's text) dropped.
func TestReviewCommentIsTheBodysFirstLineMadeSafe(t *testing.T) {
	t.Parallel()
	env := prProject(nil).Environments[0]
	pr := forge.PullRequest{Number: 1, HeadSHA: "h", Author: "relcap-bot"}
	long := strings.Repeat("x", 300)
	vs := landing.CountForgeReviews(env, "alice", pr, []forge.Review{
		{Login: "bob-forge", State: forge.ReviewChangesRequested, CommitSHA: "h", Body: "\n  freeze until 17:00\x1b[2J\nsecond line"},
		{Login: "carol", State: forge.ReviewApproved, CommitSHA: "h", Body: long},
	})
	require.Len(t, vs, 2)
	require.Equal(t, "freeze until 17:00[2J", vs[0].Comment)
	require.Len(t, []rune(vs[1].Comment), 160)
	require.True(t, strings.HasSuffix(vs[1].Comment, "…"))
}

func TestRollbackGoesThroughAPullRequest(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pw := newPRWorld(prProject(nil))
	captain := pw.process(t, "alice")
	first := pw.startBlocked(t, captain)
	pw.forge.Approve(1, "bob-forge")
	_, err := captain.svc.Run(ctx, first.ID, nil)
	require.NoError(t, err)

	pw.clock.Advance(time.Hour)
	rb, err := captain.svc.StartRollback(ctx, workflow.RollbackRequest{Env: "staging", To: first.ID})
	require.NoError(t, err)
	_, err = captain.svc.Run(ctx, rb.ID, nil)
	require.ErrorIs(t, err, fault.ErrAwaitingForge)
	prs := pw.forge.PullRequests()
	require.Len(t, prs, 2)
	require.True(t, strings.HasPrefix(prs[1].Title, "relcap: roll back web to release "+first.ID+" in staging"), prs[1].Title)
	pw.forge.Approve(2, "bob-forge")
	final, err := captain.svc.Run(ctx, rb.ID, nil)
	require.NoError(t, err)
	require.Equal(t, prs[1].Number, final.Checkpoints.PullRequest.Number)
	require.Equal(t, pw.forge.PullRequests()[1].MergeCommit, final.Checkpoints.EnvCommit)
}

func TestProductionNeedsAForgeReviewEvenWithoutApprovalsPromotion(t *testing.T) {
	t.Parallel()
	env := workflow.Environment{Name: "prod", Production: true}
	require.Equal(t, 1, landing.RequiredForgeReviews(env))
	env.Approvals.Promotion = 2
	require.Equal(t, 2, landing.RequiredForgeReviews(env))
	require.Zero(t, landing.RequiredForgeReviews(workflow.Environment{Name: "staging"}))
}

func TestCountForgeReviewsTakesEachPersonsLatestVerdict(t *testing.T) {
	t.Parallel()
	env := prProject(nil).Environments[0]
	pr := forge.PullRequest{Number: 1, HeadSHA: "bbbb", Author: "relcap-bot"}
	got := landing.CountForgeReviews(env, "alice", pr, []forge.Review{
		{Login: "bob-forge", State: forge.ReviewApproved, CommitSHA: "bbbb"},
		{Login: "bob-forge", State: forge.ReviewChangesRequested, CommitSHA: "bbbb"},
		{Login: "carol", State: forge.ReviewApproved, CommitSHA: "aaaa"},
		{Login: "dave", State: forge.ReviewApproved, CommitSHA: "bbbb"},
		{Login: "dave", State: forge.ReviewCommented, CommitSHA: "bbbb"},
		{Login: "relcap-bot", State: forge.ReviewApproved, CommitSHA: "bbbb"},
	})
	require.Len(t, got, 4)
	require.False(t, got[0].Counted, "changes requested after approving withdraws it")
	require.Equal(t, "bob", got[0].Principal)
	require.False(t, got[1].Counted)
	require.Contains(t, got[1].Why, "approved commit aaaa, but the pull request is now at bbbb")
	require.True(t, got[2].Counted, "a later comment leaves the approval standing")
	require.False(t, got[3].Counted, "the pull request's author is not its reviewer")
}

func TestPullRequestBodyGolden(t *testing.T) {
	t.Parallel()
	d, err := image.ParseDigest("sha256:" + strings.Repeat("ab", 32))
	require.NoError(t, err)
	body := landing.PullRequestBody(landing.PromotionSummary{
		App: "web", Env: "prod", ReleaseID: "web-prod-20261130T090000Z", Kind: workflow.KindRelease, Captain: "alice",
		Digest: d, Reference: "registry.test/ci/web:1.2.3", Repository: "registry.test/prod/web",
		Platforms: evidence.Platforms{"linux/amd64", "linux/arm64"}, Signed: true, Carried: evidence.ReferrerKinds{"signature", "attestation"},
		UpstreamEnv: "staging", Upstream: &workflow.ConvergenceRecord{ReleaseID: "web-staging-20261129T080000Z", Revision: strings.Repeat("c", 40), At: t0.Add(-time.Hour)},
		Plan:      landing.PlanEvidence{Fingerprint: strings.Repeat("f", 64), Applied: workflow.Applied{Done: true, StateSerial: 7}},
		Ownership: &evidence.OwnershipChecked{Objects: 12, Findings: 0},
		Branch:    "relcap/prod/web-prod-20261130T090000Z", Base: "main", Commit: strings.Repeat("d", 40),
		Diff: "--- a/apps/web/prod/kustomization.yaml\n+++ b/apps/web/prod/kustomization.yaml\n-    digest: sha256:old\n+    digest: " + d.String() + "\n",
	})
	golden := filepath.Join("testdata", "pull_request_body.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, []byte(body), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./workflow/landing -run TestPullRequestBodyGolden -update to write it")
	require.Equal(t, string(want), body)
}

func TestForgeMovedSaysWhenTheStepHasSomethingToDo(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pw := newPRWorld(prProject(nil))
	captain := pw.process(t, "alice")
	r := pw.startBlocked(t, captain)
	moved, err := captain.svc.ForgeMoved(ctx, r.ID)
	require.NoError(t, err)
	require.False(t, moved, "nothing happened on the forge")

	pw.forge.Review(1, "carol", forge.ReviewCommented)
	moved, err = captain.svc.ForgeMoved(ctx, r.ID)
	require.NoError(t, err)
	require.True(t, moved, "a new review is counted (or not) by the step")
	_, err = captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrAwaitingForge)
	moved, err = captain.svc.ForgeMoved(ctx, r.ID)
	require.NoError(t, err)
	require.False(t, moved, "the step recorded it")

	pw.forge.Approve(1, "bob-forge")
	moved, err = captain.svc.ForgeMoved(ctx, r.ID)
	require.NoError(t, err)
	require.True(t, moved)
	_, err = captain.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	moved, err = captain.svc.ForgeMoved(ctx, r.ID)
	require.NoError(t, err)
	require.False(t, moved, "landed: nothing to wait for")
}

// alreadyPinnedRepo is the fake environment repository whose branch pins
// the digest already: Pin commits nothing and returns the branch's tip.
type alreadyPinnedRepo struct{ workflowtest.EnvRepo }

func (alreadyPinnedRepo) Pin(_ context.Context, req workflow.PinRequest) (workflow.EnvChange, error) {
	return workflow.EnvChange{Branch: req.Target.Branch, Commit: strings.Repeat("e", 40), Existing: true, Pushed: true}, nil
}

func TestNothingToReviewWhenTheEnvironmentBranchPinsTheDigestAlready(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pw := newPRWorld(prProject(nil))
	j := workflowtest.NewJournal(pw.clock, "alice")
	tf := workflowtest.Terraform{W: pw.w}
	svc, err := workflow.NewService(workflow.Deps{Project: pw.p, Ledger: pw.l, Journal: j, Clock: pw.clock, Actor: "alice",
		Ownership: []workflow.OwnershipSource{workflowtest.Ownership{W: pw.w}}, Planner: tf, Applier: tf,
		Registry: workflowtest.Registry{W: pw.w}, EnvRepo: alreadyPinnedRepo{workflowtest.EnvRepo{W: pw.w}},
		Convergence: workflowtest.Convergence{W: pw.w}, ConvergeTimeout: time.Minute, Forges: &workflowtest.FakeForgeOpener{Forge: pw.forge}, Lander: landing.PullRequests{}})
	require.NoError(t, err)
	r, err := svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	got, err := svc.RunUntil(ctx, r.ID, nil, workflow.StepPromotion)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("e", 40), got.Checkpoints.EnvCommit)
	require.Nil(t, got.Checkpoints.PullRequest)
	require.Zero(t, pw.forge.Opens, "main into main is no pull request")
}
