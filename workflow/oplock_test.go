package workflow_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/oplock"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// lockingProcess is a relcap process on a team ledger that keeps operation
// locks (the fake of a PostgreSQL ledger's advisory locks).
func lockingProcess(t *testing.T, p *workflow.Project, w *workflowtest.World, l workflowtest.LockingLedger, clock workflow.Clock, actor string) process {
	t.Helper()
	j := workflowtest.NewJournal(clock, actor)
	tf := workflowtest.Terraform{W: w}
	svc, err := workflow.NewService(workflow.Deps{
		Project: p, Ledger: l, Journal: j, Clock: clock, Actor: actor,
		Ownership: []workflow.OwnershipSource{workflowtest.Ownership{W: w}},
		Planner:   tf, Applier: tf,
		Registry: workflowtest.Registry{W: w}, EnvRepo: workflowtest.EnvRepo{W: w},
		Convergence: workflowtest.Convergence{W: w}, ConvergeTimeout: time.Minute,
	})
	require.NoError(t, err)
	return process{svc: svc, journal: j}
}

var (
	stagingApply   = oplock.Scope{Kind: oplock.Apply, Key: "web:../infra/staging@default"}
	stagingPromote = oplock.Scope{Kind: oplock.Promote, Key: "web/staging"}
)

// sideEffects are the apply and promotion locks of scopes, without the
// run locks every run takes (TestASecondCaptainCannotRunAReleaseAnotherIsRunning).
func sideEffects(scopes []oplock.Scope) []oplock.Scope {
	var out []oplock.Scope
	for _, s := range scopes {
		if s.Kind != oplock.Run {
			out = append(out, s)
		}
	}
	return out
}

// lockRefusals are the lock.refused entries of a journal.
func lockRefusals(t *testing.T, j *workflowtest.Journal) []journal.LockRefused {
	t.Helper()
	var out []journal.LockRefused
	for _, e := range j.Entries() {
		if e.Kind == journal.KindLockRefused {
			var r journal.LockRefused
			require.NoError(t, json.Unmarshal(e.Data, &r))
			out = append(out, r)
		}
	}
	return out
}

// TestAReleaseHoldsTheApplyAndPromotionLocksWhileItsSideEffectsRun: the
// Terraform apply runs under the apply lock of its state, the copy, pin
// and landing under the promotion lock of the environment; both are
// released when their step ends.
func TestAReleaseHoldsTheApplyAndPromotionLocksWhileItsSideEffectsRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, clock := workflowtest.NewWorld(), workflowtest.NewClock(t0)
	locks := &workflowtest.FakeLocks{Clock: clock}
	l := workflowtest.LockingLedger{Ledger: workflowtest.NewLedger(), FakeLocks: locks}
	p := lockingProcess(t, testProject(0), w, l, clock, "alice")

	heldDuring := map[string]oplock.Scope{}
	w.Interrupt = func(effect string) error {
		for _, s := range []oplock.Scope{stagingApply, stagingPromote} {
			if h, ok := locks.Holder(s); ok {
				require.Equal(t, "alice", h.Actor)
				heldDuring[effect] = s
			}
		}
		return nil
	}
	r, err := p.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	final, err := p.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)

	require.Equal(t, stagingApply, heldDuring["apply"], "terraform apply under the state's apply lock")
	require.Equal(t, stagingPromote, heldDuring["copy"], "the copy under the environment's promotion lock")
	require.Equal(t, stagingPromote, heldDuring["commit"], "the pin too")
	require.Equal(t, []oplock.Scope{stagingApply, stagingPromote}, sideEffects(locks.Taken()))
	require.Equal(t, []oplock.Scope{stagingApply, stagingPromote}, sideEffects(locks.Released()), "each released when its step ended")
}

// TestAHeldApplyLockBlocksTheApplyStepNamingItsHolder: bob's apply of the
// same state blocks alice's release at the apply step, before Terraform
// runs, with a message naming bob, what he applies and since when; the
// refusal is journaled. Once bob is done, resume applies.
func TestAHeldApplyLockBlocksTheApplyStepNamingItsHolder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, clock := workflowtest.NewWorld(), workflowtest.NewClock(t0)
	locks := &workflowtest.FakeLocks{Clock: clock}
	l := workflowtest.LockingLedger{Ledger: workflowtest.NewLedger(), FakeLocks: locks}
	alice := lockingProcess(t, testProject(0), w, l, clock, "alice")

	release := locks.Hold(stagingApply, oplock.Holder{Actor: "bob", What: "apply plan 1a2b3c4d5e6f in staging", Since: t0.Add(-3 * time.Minute), Host: "bobs-laptop", PID: 4242})
	r, err := alice.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	var blockedMsg string
	final, err := alice.svc.Run(ctx, r.ID, func(e workflow.Event) {
		if e.Kind == workflow.EventStepFinished && e.Status == workflow.Blocked {
			blockedMsg = e.Message
		}
	})
	require.ErrorIs(t, err, fault.ErrLocked)
	require.ErrorIs(t, err, fault.ErrBlocked, "exit 3")
	var le *oplock.LockedError
	require.True(t, errors.As(err, &le))
	require.Equal(t, "bob", le.Holder.Actor)
	require.Equal(t, workflow.ReleaseBlocked, final.Status)
	step := final.Step(workflow.StepApply)
	require.Equal(t, workflow.Blocked, step.Status)
	for _, want := range []string{"the apply lock of Terraform state web:../infra/staging@default", "held by bob (relcap pid 4242 on bobs-laptop)",
		"apply plan 1a2b3c4d5e6f in staging", "since 2026-11-30T08:57:00Z (3m0s ago)", "wait until it finishes", "ask bob", "never forced"} {
		require.Contains(t, step.Message, want)
	}
	require.Equal(t, step.Message, blockedMsg, "the cockpit shows the refusal as the step's blocked message")
	require.Equal(t, 0, w.Applies, "Terraform never ran")
	refusals := lockRefusals(t, alice.journal)
	require.Len(t, refusals, 1)
	require.Equal(t, journal.LockRefused{Kind: oplock.Apply, Key: stagingApply.Key, Release: r.ID, Holder: "bob",
		HolderWhat: "apply plan 1a2b3c4d5e6f in staging", HolderSince: new(t0.Add(-3 * time.Minute)), HolderHost: "bobs-laptop", HolderPID: 4242,
		Reason: step.Message}, refusals[0])

	release()
	final, err = alice.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
	require.Equal(t, 1, w.Applies)
	_, held := locks.Holder(stagingApply)
	require.False(t, held)
}

// TestAHeldApplyLockRefusesApplyPlan: relcap apply of a plan outside an
// open release is refused as well, journaled, Terraform untouched.
func TestAHeldApplyLockRefusesApplyPlan(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, clock := workflowtest.NewWorld(), workflowtest.NewClock(t0)
	locks := &workflowtest.FakeLocks{Clock: clock}
	l := workflowtest.LockingLedger{Ledger: workflowtest.NewLedger(), FakeLocks: locks}
	alice := lockingProcess(t, testProject(0), w, l, clock, "alice")
	facts, err := workflowtest.Terraform{W: w}.Plan(ctx, testProject(0).Environments[0], "alice")
	require.NoError(t, err)
	plan := tfplan.ReviewPlan(facts, tfplan.DefaultClassify())
	require.NoError(t, l.SavePlan(ctx, plan))

	release := locks.Hold(stagingApply, oplock.Holder{Actor: "bob", What: "apply plan feedfacefeed in staging", Since: t0})
	_, _, err = alice.svc.ApplyPlan(ctx, plan.Fingerprint, nil)
	require.ErrorIs(t, err, fault.ErrLocked)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "held by bob: apply plan feedfacefeed in staging, since 2026-11-30T09:00:00Z (0s ago)")
	require.Equal(t, 0, w.Applies)
	require.Len(t, lockRefusals(t, alice.journal), 1)
	require.NotContains(t, alice.journal.Kinds(), string(journal.KindApplyStarted))

	release()
	_, _, err = alice.svc.ApplyPlan(ctx, plan.Fingerprint, nil)
	require.NoError(t, err)
	require.Equal(t, 1, w.Applies)
	require.Equal(t, []oplock.Scope{stagingApply, stagingApply}, sideEffects(locks.Released()), "bob's, then alice's own")
}

// TestAHeldPromotionLockBlocksThePromotionBeforeTheCopy: another captain
// promoting into staging blocks this release's promotion before anything
// is copied or pinned.
func TestAHeldPromotionLockBlocksThePromotionBeforeTheCopy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, clock := workflowtest.NewWorld(), workflowtest.NewClock(t0)
	locks := &workflowtest.FakeLocks{Clock: clock}
	l := workflowtest.LockingLedger{Ledger: workflowtest.NewLedger(), FakeLocks: locks}
	alice := lockingProcess(t, testProject(0), w, l, clock, "alice")
	release := locks.Hold(stagingPromote, oplock.Holder{Actor: "carol", What: "promote sha256:0123abcd to staging (release web-staging-9)", Since: t0.Add(-time.Minute)})

	r, err := alice.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	final, err := alice.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrLocked)
	step := final.Step(workflow.StepPromotion)
	require.Equal(t, workflow.Blocked, step.Status)
	require.Contains(t, step.Message, "the promotion lock of web/staging is held by carol: promote sha256:0123abcd to staging (release web-staging-9), since 2026-11-30T08:59:00Z (1m0s ago)")
	require.Equal(t, 0, w.Copies)
	require.Equal(t, 0, w.Commits)
	refusals := lockRefusals(t, alice.journal)
	require.Len(t, refusals, 1)
	require.Equal(t, oplock.Promote, refusals[0].Kind)
	require.Equal(t, "carol", refusals[0].Holder)

	release()
	final, err = alice.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
	require.Equal(t, 1, w.Copies)
}

// TestStateBoundaryIsTheSameOnEveryCheckout: two captains' checkouts of
// one release repository at different places name one state; another
// workspace or root is another state.
func TestStateBoundaryIsTheSameOnEveryCheckout(t *testing.T) {
	t.Parallel()
	env := func(dir, ws string) workflow.Environment {
		return workflow.Environment{Name: "staging", Terraform: workflow.TerraformTarget{Dir: dir, Workspace: ws}}
	}
	ana := &workflow.Project{App: "web", Dir: "/home/ana/src/release"}
	bob := &workflow.Project{App: "web", Dir: "/Users/bob/work/release-repo"}
	require.Equal(t, "web:infra/staging@default", workflow.StateBoundary(ana, env("/home/ana/src/release/infra/staging", "")))
	require.Equal(t, workflow.StateBoundary(ana, env("/home/ana/src/release/infra/staging", "default")),
		workflow.StateBoundary(bob, env("/Users/bob/work/release-repo/infra/staging", "default")))
	require.NotEqual(t, workflow.StateBoundary(ana, env("/home/ana/src/release/infra/staging", "blue")),
		workflow.StateBoundary(ana, env("/home/ana/src/release/infra/staging", "green")))
	require.Equal(t, "web/staging", workflow.PromotionBoundary(bob, env("", "")))
}

// TestRelcapApplyOfAReleaseRefusedLeavesTheReleaseAlone: relcap apply of
// a release's plan while another captain applies that state is refused
// before the release runs, so the release the other captain is running
// is not rewritten; once free, the apply runs as the release's step,
// taking the lock once.
func TestRelcapApplyOfAReleaseRefusedLeavesTheReleaseAlone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, clock := workflowtest.NewWorld(), workflowtest.NewClock(t0)
	locks := &workflowtest.FakeLocks{Clock: clock}
	ledger := workflowtest.NewLedger()
	l := workflowtest.LockingLedger{Ledger: ledger, FakeLocks: locks}
	alice := lockingProcess(t, testProject(0), w, l, clock, "alice")
	out, err := alice.svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)

	release := locks.Hold(stagingApply, oplock.Holder{Actor: "bob", What: "apply plan " + workflow.ShortHash(out.Plan.Fingerprint) + " in staging", Since: t0})
	saves := ledger.Saves()
	_, _, err = alice.svc.ApplyPlan(ctx, out.Plan.Fingerprint, nil)
	require.ErrorIs(t, err, fault.ErrLocked)
	require.Contains(t, err.Error(), "held by bob")
	require.Equal(t, saves, ledger.Saves(), "the release is not touched")
	require.Len(t, lockRefusals(t, alice.journal), 1)
	require.Equal(t, out.Release.ID, lockRefusals(t, alice.journal)[0].Release)

	release()
	_, _, err = alice.svc.ApplyPlan(ctx, out.Plan.Fingerprint, nil)
	require.NoError(t, err)
	require.Equal(t, 1, w.Applies)
	require.Equal(t, []oplock.Scope{stagingApply, stagingApply}, sideEffects(locks.Taken()), "bob's, then alice's once")
	_, held := locks.Holder(stagingApply)
	require.False(t, held)
}

// TestASecondCaptainCannotRunAReleaseAnotherIsRunning: while alice's
// process drives a release (here, mid-convergence), bob's resume of the
// same release is refused naming alice, before it saves anything: the
// release keeps alice's progress. The run lock goes with alice's run, and
// bob's resume then finds the release converged.
func TestASecondCaptainCannotRunAReleaseAnotherIsRunning(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, clock := workflowtest.NewWorld(), workflowtest.NewClock(t0)
	locks := &workflowtest.FakeLocks{Clock: clock}
	l := workflowtest.LockingLedger{Ledger: workflowtest.NewLedger(), FakeLocks: locks}
	alice := lockingProcess(t, testProject(0), w, l, clock, "alice")
	bob := lockingProcess(t, testProject(0), w, l, clock, "bob")

	r, err := alice.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	var refused error
	w.Interrupt = func(effect string) error {
		if effect == "commit" && refused == nil {
			_, refused = bob.svc.Run(ctx, r.ID, nil)
		}
		return nil
	}
	final, err := alice.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)

	var le *oplock.LockedError
	require.ErrorAs(t, refused, &le)
	require.ErrorIs(t, refused, fault.ErrBlocked)
	require.Equal(t, "alice", le.Holder.Actor)
	require.Contains(t, refused.Error(), "release "+r.ID+" is held by alice: run release "+r.ID+" in staging")
	after, err := l.LoadRelease(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, after.Status, "bob's refused run saved nothing over alice's")
	refusals := lockRefusals(t, bob.journal)
	require.Len(t, refusals, 1)
	require.Equal(t, oplock.Run, refusals[0].Kind)

	again, err := bob.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err, "alice's run released the release")
	require.Equal(t, workflow.ReleaseConverged, again.Status)
}
