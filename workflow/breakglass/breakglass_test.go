package breakglass_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// capturingRepo is the fake environment repository with the Capturer
// ability break-glass end needs.
type capturingRepo struct {
	workflowtest.EnvRepo
	mu       sync.Mutex
	captured []breakglass.CaptureRequest
}

func (c *capturingRepo) Capture(_ context.Context, req breakglass.CaptureRequest) (workflow.EnvChange, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.captured = append(c.captured, req)
	return workflow.EnvChange{Branch: "relcap/" + req.Env + "/" + req.ID, Commit: "c0ffee0000000000000000000000000000000000"}, nil
}

// bgWorld is what break-glass tests share: one ledger, one clock, one
// Argo CD and one people file, and a process per person.
type bgWorld struct {
	t      *testing.T
	p      *workflow.Project
	l      *workflowtest.Ledger
	clock  *workflowtest.Clock
	argo   *workflowtest.ArgoCD
	people *workflowtest.People
	repo   *capturingRepo
}

func newBGWorld(t *testing.T, start time.Time) *bgWorld {
	p := testProject(0)
	for i := range p.Environments {
		if p.Environments[i].Name == "prod" {
			p.Environments[i].Production = true
			p.Environments[i].Approvals.Signed = true
		}
	}
	clock := workflowtest.NewClock(start)
	return &bgWorld{t: t, p: p, l: workflowtest.NewLedger(), clock: clock, argo: workflowtest.NewArgoCD(clock),
		people: workflowtest.NewPeople("alice", "carol", "erin"), repo: &capturingRepo{EnvRepo: workflowtest.EnvRepo{W: workflowtest.NewWorld()}}}
}

// as is a relcap process of actor, holding actor's key.
func (w *bgWorld) as(actor string) process {
	w.t.Helper()
	j := workflowtest.NewJournal(w.clock, actor)
	core, err := workflow.NewService(workflow.Deps{
		Project: w.p, Ledger: w.l, Journal: j, Clock: w.clock, Actor: actor,
		Convergence: w.argo, EnvRepo: w.repo, Signer: workflowtest.Key(actor), Verifier: w.people,
	})
	require.NoError(w.t, err)
	return process{core: core, svc: breakglass.New(core.Deps()), journal: j}
}

// TestBreakGlassPausesWithADenyWindowThatArgoCDLiftsAtTheEndOfTheTimeBox:
// start leaves the sync policy alone and adds one deny window for the one
// application, from the start of the minute to the first whole minute
// after the time box; once it has closed, the next break-glass command
// removes it (its yearly schedule would open it again), once.
func TestBreakGlassPausesWithADenyWindowThatArgoCDLiftsAtTheEndOfTheTimeBox(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newBGWorld(t, t0.Add(40*time.Second)) // 09:00:40
	alice := w.as("alice")

	b, err := alice.svc.Start(ctx, breakglass.Request{Env: "staging", Reason: "OOM", TTL: 2 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, t0.Add(3*time.Minute), b.ExpiresAt, "closes at the first whole minute after 09:02:40")
	require.NotNil(t, b.Window)
	require.True(t, b.SelfEnding())
	require.Nil(t, b.SavedPolicy)
	want := workflow.SyncWindow{Kind: "deny", Project: "default", Applications: []string{"web-staging"}, Schedule: "0 9 30 11 *",
		Duration: 3 * time.Minute, TimeZone: "UTC", ManualSync: true}
	require.True(t, want.Same(*b.Window), "%s", b.Window)
	require.Equal(t, "default", b.Window.Project)
	require.Contains(t, b.Window.Description, b.ID)
	require.Equal(t, []string{"deny web-staging"}, w.argo.Calls(), "the sync policy is not touched")
	require.Contains(t, alice.journal.Kinds(), "breakglass.started")

	st, err := alice.svc.Status(ctx, "staging")
	require.NoError(t, err)
	require.NotNil(t, st.Held)
	require.True(t, st.Held.Active, "argo cd holds the pause")
	require.Equal(t, 2*time.Minute+20*time.Second, st.Left)

	_, err = alice.svc.Start(ctx, breakglass.Request{Env: "staging", Reason: "again", TTL: time.Minute})
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.ErrorContains(t, err, "already active")

	w.clock.Advance(4 * time.Minute)
	expired, err := alice.svc.Expired(ctx)
	require.NoError(t, err)
	require.Len(t, expired, 1)
	st, err = alice.svc.Status(ctx, "staging")
	require.NoError(t, err)
	require.True(t, st.WindowRemoved, "the closed window is removed")
	require.Nil(t, st.Held)
	require.Empty(t, w.argo.Windows())
	require.Equal(t, []string{"deny web-staging", "remove web-staging"}, w.argo.Calls())
	require.Contains(t, alice.journal.Kinds(), "breakglass.window-removed")
	_, err = alice.svc.Status(ctx, "staging")
	require.NoError(t, err)
	require.Len(t, w.argo.Calls(), 2, "removed once")

	_, err = alice.svc.Start(ctx, breakglass.Request{Env: "staging", Reason: "again", TTL: time.Minute})
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.ErrorContains(t, err, "end it first")

	st, change, err := alice.svc.End(ctx, "staging")
	require.NoError(t, err)
	require.True(t, st.Ended)
	require.Empty(t, change.Branch, "self-heal left no drift to capture")
	require.Len(t, w.argo.Calls(), 2, "nothing left to remove")
	kinds := alice.journal.Kinds()
	require.Equal(t, "breakglass.ended", kinds[len(kinds)-1])
	active, err := alice.svc.Active(ctx)
	require.NoError(t, err)
	require.Empty(t, active)
}

// TestBreakGlassEndCapturesTheDriftThenRemovesTheWindow: ended before the
// time box, the hotfix is captured for review first, then the window goes
// and Argo CD reconciles again at once.
func TestBreakGlassEndCapturesTheDriftThenRemovesTheWindow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newBGWorld(t, t0)
	alice := w.as("alice")
	b, err := alice.svc.Start(ctx, breakglass.Request{Env: "staging", Reason: "OOM: raise memory", TTL: 30 * time.Minute})
	require.NoError(t, err)
	w.argo.SetDrift("web-staging", breakglass.Drift{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Live: `{"spec":{"replicas":3}}`})
	w.clock.Advance(5 * time.Minute)

	st, change, err := alice.svc.End(ctx, "staging")
	require.NoError(t, err)
	require.Equal(t, "relcap/staging/"+b.ID, change.Branch)
	require.Len(t, w.repo.captured, 1)
	require.Contains(t, string(w.repo.captured[0].Content), `"replicas": 3`)
	require.True(t, st.WindowRemoved)
	require.Empty(t, w.argo.Windows())
	require.Equal(t, []string{"deny web-staging", "remove web-staging"}, w.argo.Calls())
	kinds := alice.journal.Kinds()
	i := slices.Index(kinds, "breakglass.captured")
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, []string{"breakglass.captured", "breakglass.window-removed", "breakglass.ended"}, kinds[i:], "captured before the window goes")
	r, err := w.l.LoadRelease(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseEnded, r.Status)
	require.False(t, r.Checkpoints.WindowRemoved.IsZero())
	require.Equal(t, change.Branch, r.Checkpoints.Capture)
}

// TestABreakGlassRecordedBeforeSyncWindowsEndsByRestoringItsPolicy: a
// record from before sync windows (automated sync turned off, the policy
// saved) still ends as it was started.
func TestABreakGlassRecordedBeforeSyncWindowsEndsByRestoringItsPolicy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newBGWorld(t, t0)
	r := workflow.NewRelease("web-staging-20261130-0845-bg", "web", "staging", "", "alice", t0.Add(-15*time.Minute))
	r.Kind = workflow.KindBreakGlass
	saved := workflow.SyncPolicy{Automated: true, SelfHeal: true, Prune: true}
	r.Checkpoints.BreakGlassPause = workflow.BreakGlassPause{SavedPolicy: &saved, ExpiresAt: t0.Add(-5 * time.Minute), Reason: "OOM"}
	require.NoError(t, w.l.SaveRelease(ctx, r))
	alice := w.as("alice")
	require.NoError(t, w.argo.SetSyncPolicy(ctx, appstate.AppRef{Env: "staging", Name: "web-staging"}, workflow.SyncPolicy{}))

	st, err := alice.svc.Status(ctx, "staging")
	require.NoError(t, err)
	require.False(t, st.SelfEnding(), "paused until end restores the policy")
	require.Equal(t, &saved, st.SavedPolicy)
	require.Negative(t, st.Left)

	_, _, err = alice.svc.End(ctx, "staging")
	require.NoError(t, err)
	policy, err := w.argo.SyncPolicy(ctx, appstate.AppRef{Env: "staging", Name: "web-staging"})
	require.NoError(t, err)
	require.Equal(t, saved, policy)
	require.NotContains(t, fmt.Sprint(w.argo.Calls()), "remove", "no window to remove")
	entries := alice.journal.Entries()
	require.Contains(t, string(entries[len(entries)-1].Data), `"restored_policy":{"automated":true,"self_heal":true,"prune":true}`)
}

// TestAPauseArgoCDDoesNotHoldLeavesNoWindowAndNoActiveRecord: when Argo CD
// does not report the window open, start takes it off again and closes
// the record, so no pause nobody knows of remains.
func TestAPauseArgoCDDoesNotHoldLeavesNoWindowAndNoActiveRecord(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newBGWorld(t, t0)
	w.argo.FailDeny(errors.New("argo cd does not report it active"))
	alice := w.as("alice")
	_, err := alice.svc.Start(ctx, breakglass.Request{Env: "staging", Reason: "OOM", TTL: 10 * time.Minute})
	require.ErrorContains(t, err, "argo cd does not report it active")
	require.ErrorContains(t, err, "nothing is paused")
	require.Empty(t, w.argo.Windows())
	active, err := alice.svc.Active(ctx)
	require.NoError(t, err)
	require.Empty(t, active)
	require.Contains(t, alice.journal.Kinds(), "breakglass.failed")
	w.clock.Advance(time.Hour)
	_, err = alice.svc.Status(ctx, "staging")
	require.ErrorIs(t, err, fault.ErrUsage, "no active break-glass")
	require.Equal(t, []string{"deny web-staging", "remove web-staging"}, w.argo.Calls(), "removed once, not again by the sweep")
}

// TestAPauseThatCannotBeTakenBackSaysSo: when the window stays on the
// project after a failed start (the lab's 3.6 run had the adapter not
// recognise the window the server stored), start says to remove it by
// hand instead of "nothing is paused".
func TestAPauseThatCannotBeTakenBackSaysSo(t *testing.T) {
	t.Parallel()
	w := newBGWorld(t, t0)
	w.argo.FailDeny(errors.New("argo cd did not keep the window"))
	w.argo.StickyWindows()
	_, err := w.as("alice").svc.Start(t.Context(), breakglass.Request{Env: "staging", Reason: "OOM", TTL: 10 * time.Minute})
	require.ErrorContains(t, err, "a window like it is still on the project")
	require.ErrorContains(t, err, "by hand (argocd proj windows list)")
	require.NotContains(t, err.Error(), "nothing is paused")
	require.Len(t, w.argo.Windows(), 1)
	w.clock.Advance(time.Hour)
	_, err = w.as("alice").svc.Status(t.Context(), "staging")
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Equal(t, []string{"deny web-staging", "remove web-staging", "remove web-staging"}, w.argo.Calls(), "once the time box is over, the sweep tries again")
}

// TestBreakGlassInProductionCountsOnlyASignedRecentLongEnoughApprovalByAnother:
// carol's signed approval of prod's application, for at least the time
// box, given within the last 30 minutes, used once, lets alice break the
// glass; nothing else does, and each refusal says why and is journaled.
func TestBreakGlassInProductionCountsOnlyASignedRecentLongEnoughApprovalByAnother(t *testing.T) {
	t.Parallel()
	req := breakglass.Request{Env: "prod", Reason: "checkout down", TTL: 30 * time.Minute, Approver: "carol"}
	for name, c := range map[string]struct {
		before func(w *bgWorld)
		req    func(*breakglass.Request)
		want   string
	}{
		"no approver named": {req: func(r *breakglass.Request) { r.Approver = "" }, want: "then pass --approver NAME"},
		"no approval":       {want: "carol has not approved break-glass of prod/web-prod"},
		"the actor's own": {
			before: func(w *bgWorld) { approveBG(w, "alice", 30*time.Minute) },
			req:    func(r *breakglass.Request) { r.Approver = "alice" },
			want:   "alice breaks the glass",
		},
		"a time box too short": {
			before: func(w *bgWorld) { approveBG(w, "carol", 10*time.Minute) },
			want:   "for a time box of 10m, shorter than --ttl 30m",
		},
		"too old": {
			before: func(w *bgWorld) { approveBG(w, "carol", time.Hour); w.clock.Advance(31 * time.Minute) },
			want:   "more than 30m ago",
		},
		"a key no longer in the people file": {
			before: func(w *bgWorld) { approveBG(w, "carol", time.Hour); w.people.Remove("carol") },
			want:   "signature does not verify: no key of carol in the people file",
		},
		"unsigned": {
			before: func(w *bgWorld) {
				require.NoError(t, w.l.RecordApproval(t.Context(), approval.Approval{Kind: approval.BreakGlass, Subject: "prod/web-prod", Env: "prod",
					Approver: "carol", At: w.clock.Now(), TimeBox: time.Hour, Comment: "typed by hand"}))
			},
			want: "unsigned",
		},
		"another environment's": {
			before: func(w *bgWorld) {
				require.NoError(t, w.l.RecordApproval(t.Context(), approval.Approval{Kind: approval.BreakGlass, Subject: "staging/web-staging", Env: "staging",
					Approver: "carol", At: w.clock.Now(), TimeBox: time.Hour}))
			},
			want: "carol has not approved break-glass of prod/web-prod",
		},
		"not on approvers.breakglass": {
			before: func(w *bgWorld) {
				approveBG(w, "carol", time.Hour)
				w.p.Environments[1].Approvals.Approvers.BreakGlass = []string{"erin"}
			},
			want: "carol may not approve breakglass here: approvers.breakglass lists erin",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newBGWorld(t, t0)
			if c.before != nil {
				c.before(w)
			}
			r := req
			if c.req != nil {
				c.req(&r)
			}
			alice := w.as("alice")
			_, err := alice.svc.Start(t.Context(), r)
			require.ErrorIs(t, err, fault.ErrBlocked)
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, "relcap approve --breakglass --env prod --ttl 30m", "says what to ask for")
			require.Empty(t, w.argo.Calls(), "nothing is paused")
			require.Contains(t, alice.journal.Kinds(), "breakglass.refused")
		})
	}

	t.Run("carol's approval, once", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		w := newBGWorld(t, t0)
		approved := approveBG(w, "carol", 45*time.Minute)
		w.clock.Advance(10 * time.Minute)
		alice := w.as("alice")
		b, err := alice.svc.Start(ctx, req)
		require.NoError(t, err)
		require.Equal(t, "carol", b.Approver)
		require.Equal(t, []string{"deny web-prod"}, w.argo.Calls())
		entries := alice.journal.Entries()
		var started breakglass.BreakGlassStarted
		for _, e := range entries {
			if e.Kind == breakglass.KindBreakGlassStarted {
				require.NoError(t, json.Unmarshal(e.Data, &started))
			}
		}
		require.NotNil(t, started.Approval, "the journal names the approval used")
		require.Equal(t, "carol", started.Approval.Approver)
		require.Equal(t, 45*time.Minute, started.Approval.TimeBox)
		require.Equal(t, approved.Signature, started.Approval.Signature)
		r, err := w.l.LoadRelease(ctx, b.ID)
		require.NoError(t, err)
		require.True(t, approved.At.Equal(r.Checkpoints.ApprovedAt))

		_, _, err = alice.svc.End(ctx, "prod")
		require.NoError(t, err)
		_, err = alice.svc.Start(ctx, req)
		require.ErrorIs(t, err, fault.ErrBlocked)
		require.ErrorContains(t, err, "break-glass "+b.ID+" already used that approval")
	})
}

// approveBG records who's signed break-glass approval of prod for ttl.
func approveBG(w *bgWorld, who string, ttl time.Duration) approval.Approval {
	w.t.Helper()
	a, _, err := w.as(who).core.ApproveBreakGlass(w.t.Context(), "prod", ttl, "checkout is down")
	require.NoError(w.t, err)
	require.False(w.t, a.Signature.IsZero())
	return a
}

// TestBreakGlassApprovalsAreSignedForProductionOnly: approving break-glass
// needs the approver's own key in the people file, a reason and a time
// box, and a production environment.
func TestBreakGlassApprovalsAreSignedForProductionOnly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newBGWorld(t, t0)
	_, _, err := w.as("dave").core.ApproveBreakGlass(ctx, "prod", time.Hour, "x")
	require.ErrorIs(t, err, fault.ErrBlocked, "dave's key is not in the people file")
	require.ErrorContains(t, err, "cannot sign as dave")
	for name, c := range map[string]struct {
		env    string
		ttl    time.Duration
		reason string
		want   string
	}{
		"staging":      {"staging", time.Hour, "x", "staging is not a production environment"},
		"no reason":    {"prod", time.Hour, " ", "needs --reason"},
		"no time box":  {"prod", 0, "x", "--ttl must be more than 0"},
		"over the cap": {"prod", 25 * time.Hour, "x", "at most 24h0m0s"},
	} {
		_, _, err := w.as("carol").core.ApproveBreakGlass(ctx, c.env, c.ttl, c.reason)
		require.ErrorIs(t, err, fault.ErrUsage, name)
		require.ErrorContains(t, err, c.want, name)
	}
	a, check, err := w.as("carol").core.ApproveBreakGlass(ctx, "prod", time.Hour, "checkout is down")
	require.NoError(t, err)
	require.True(t, check.Satisfied())
	require.Equal(t, "prod/web-prod", a.Subject)
	require.Contains(t, string(a.Statement()), "time-box: 1h0m0s\n")
}

// TestAnApprovalStatementNamesATimeBoxOnlyWhenItHasOne: statements signed
// before time boxes existed read exactly as they did.
func TestAnApprovalStatementNamesATimeBoxOnlyWhenItHasOne(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	plan := approval.Approval{Kind: approval.Plan, Env: "prod", Subject: "fp1", Approver: "bob", At: at, Comment: "ok"}
	require.Equal(t, "relcap approval v1\nkind: plan\nenv: prod\nsubject: fp1\napprover: bob\nat: 2026-12-01T10:00:00Z\ncomment: \"ok\"\n", string(plan.Statement()))
	bg := approval.Approval{Kind: approval.BreakGlass, Env: "prod", Subject: "prod/web-prod", Approver: "carol", At: at, TimeBox: 30 * time.Minute}
	require.Equal(t, "relcap approval v1\nkind: breakglass\nenv: prod\nsubject: prod/web-prod\ntime-box: 30m0s\napprover: carol\nat: 2026-12-01T10:00:00Z\n", string(bg.Statement()))
}

// TestDenyWindowOpensAtTheMinuteAndClosesOnAWholeMinuteAfterTheTimeBox
// covers the arithmetic, the year's end included.
func TestDenyWindowOpensAtTheMinuteAndClosesOnAWholeMinuteAfterTheTimeBox(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		now      time.Time
		ttl      time.Duration
		schedule string
		dur      time.Duration
	}{
		{time.Date(2027, 3, 5, 12, 40, 30, 0, time.UTC), 2 * time.Minute, "40 12 5 3 *", 3 * time.Minute},
		{time.Date(2027, 3, 5, 12, 40, 0, 0, time.UTC), 2 * time.Minute, "40 12 5 3 *", 2 * time.Minute},
		{time.Date(2027, 3, 5, 12, 40, 0, 1, time.UTC), 30 * time.Second, "40 12 5 3 *", time.Minute},
		{time.Date(2027, 12, 31, 23, 59, 50, 0, time.UTC), time.Hour, "59 23 31 12 *", 61 * time.Minute},
		{time.Date(2027, 3, 5, 13, 40, 30, 0, time.FixedZone("CET", 3600)), time.Minute, "40 12 5 3 *", 2 * time.Minute},
	} {
		w, closes := breakglass.DenyWindow("argocd/web-prod", c.now, c.ttl)
		require.Equal(t, c.schedule, w.Schedule, c.now)
		require.Equal(t, c.dur, w.Duration, c.now)
		require.Equal(t, []string{"web-prod"}, w.Applications, "Argo CD matches the bare name")
		require.Equal(t, "UTC", w.TimeZone)
		require.True(t, w.ManualSync)
		require.False(t, closes.Before(c.now.Add(c.ttl)), "never before the time box ends")
		require.Less(t, closes.Sub(c.now.Add(c.ttl)), time.Minute, "at most a minute after")
		require.Zero(t, closes.Second())
	}
}

// TestBreakGlassCaptureIsReviewedInAPullRequest: where the environment's
// changes go through the forge, the capture branch is opened as a pull
// request for people to merge or close; relcap does not merge it.
func TestBreakGlassCaptureIsReviewedInAPullRequest(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newBGWorld(t, t0)
	w.p.Environments[0].EnvRepo.Review = forge.EnvRepoReview{Via: forge.ReviewByPullRequest, Forge: forge.GitLab, URL: "https://forge.test/team/env",
		Merge: forge.MergeByRelcap, Approvals: forge.ApprovalsFromForge}
	fakeForge := workflowtest.NewFakeForge(w.repo.W, w.clock, 1)
	j := workflowtest.NewJournal(w.clock, "alice")
	core, err := workflow.NewService(workflow.Deps{Project: w.p, Ledger: w.l, Journal: j, Clock: w.clock, Actor: "alice",
		Convergence: w.argo, EnvRepo: w.repo, Forges: &workflowtest.FakeForgeOpener{Forge: fakeForge}})
	require.NoError(t, err)
	svc := breakglass.New(core.Deps())
	b, err := svc.Start(ctx, breakglass.Request{Env: "staging", Reason: "OOM: raise memory", TTL: 30 * time.Minute})
	require.NoError(t, err)
	w.argo.SetDrift("web-staging", breakglass.Drift{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Live: `{"spec":{"replicas":3}}`})
	w.repo.W.Branches["relcap/staging/"+b.ID] = "c0ffee0000000000000000000000000000000000"

	_, _, err = svc.End(ctx, "staging")
	require.NoError(t, err)
	prs := fakeForge.PullRequests()
	require.Len(t, prs, 1)
	require.Equal(t, "relcap/staging/"+b.ID, prs[0].Head)
	require.Equal(t, forge.PullRequestOpen, prs[0].State, "a capture is for review: relcap never merges it")
	r, err := w.l.LoadRelease(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, prs[0].URL, r.Checkpoints.CapturePullRequest.URL)
	for _, e := range j.Entries() {
		if e.Kind == breakglass.KindBreakGlassCaptured {
			require.Contains(t, string(e.Data), `"pull_request":1`)
		}
	}
}
