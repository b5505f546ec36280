package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/sharedplan"
	"github.com/relcap/relcap/workflow/workflowtest"
)

var t0 = workflowtest.T0

// testProject is workflowtest.Project: app web in staging and prod.
func testProject(planApprovals int) *workflow.Project { return workflowtest.Project(planApprovals) }

// process is one relcap process: a Service over a shared world and ledger.
type process struct {
	svc     *workflow.Service
	journal *workflowtest.Journal
}

func newProcess(t *testing.T, p *workflow.Project, w *workflowtest.World, l *workflowtest.Ledger, clock workflow.Clock, actor string) process {
	t.Helper()
	return newTeamProcess(t, p, w, l, clock, actor, nil)
}

// newTeamProcess is newProcess with a team store of shared plans (nil:
// none, as with SQLite), the process on actor's own machine.
func newTeamProcess(t *testing.T, p *workflow.Project, w *workflowtest.World, l *workflowtest.Ledger, clock workflow.Clock, actor string, team *workflowtest.SharedPlans) process {
	t.Helper()
	j := workflowtest.NewJournal(clock, actor)
	tf := workflowtest.Terraform{W: w}
	var vault workflow.PlanVault
	if team != nil {
		vault = &workflowtest.PlanVault{S: team, Machine: actor}
	}
	d := workflow.Deps{
		Project: p, Ledger: l, Journal: j, Clock: clock, Actor: actor,
		Ownership: []workflow.OwnershipSource{workflowtest.Ownership{W: w}},
		Planner:   tf, Applier: tf, PlanVault: vault,
		Registry: workflowtest.Registry{W: w}, EnvRepo: workflowtest.EnvRepo{W: w},
		Convergence: workflowtest.Convergence{W: w}, ConvergeTimeout: time.Minute,
	}
	if vault != nil {
		d.SharedPlans = sharedplan.New(d)
	}
	svc, err := workflow.NewService(d)
	require.NoError(t, err)
	return process{svc: svc, journal: j}
}

func TestReleaseRunsAllStepsToConvergence(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	p := newProcess(t, testProject(0), w, l, clock, "alice")

	r, err := p.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	var events []workflow.Event
	final, err := p.svc.Run(ctx, r.ID, func(e workflow.Event) { events = append(events, e) })
	require.NoError(t, err)

	require.Equal(t, workflow.ReleaseConverged, final.Status)
	for _, s := range final.Steps {
		require.Equal(t, workflow.Succeeded, s.Status, s.Kind.String())
	}
	require.Equal(t, w.Artifact.Digest.String(), final.Checkpoints.Digest.String())
	require.True(t, w.Repos["registry.test/staging/web"][w.Artifact.Digest], "digest copied into staging")
	converged, err := l.HasConverged(ctx, "web", "staging", w.Artifact.Digest)
	require.NoError(t, err)
	require.True(t, converged)
	require.Equal(t, workflow.EventReleaseFinished, events[len(events)-1].Kind)

	kinds := p.journal.Kinds()
	require.Equal(t, "release.started", kinds[0])
	require.Equal(t, "release.converged", kinds[len(kinds)-1])
	require.Contains(t, kinds, "step.finished")
}

var errKilled = errors.New("killed")

// killSwitch makes every port refuse to act once the "process" is dead.
type killSwitch struct {
	mu   sync.Mutex
	dead bool
}

func (k *killSwitch) gate() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		return errKilled
	}
	return nil
}

func (k *killSwitch) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dead = true
}

// TestResumeAfterKillBetweenEverySaveDoesNotRepeatSideEffects kills the
// process right after each durable write of the release (between every
// pair of steps and at every checkpoint inside them), then resumes with a
// new process, and checks that the release converges with every side effect
// (plan, apply, copy, commit) made exactly once.
func TestResumeAfterKillBetweenEverySaveDoesNotRepeatSideEffects(t *testing.T) {
	t.Parallel()
	// A clean run tells how many saves there are.
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	p := newProcess(t, testProject(0), w, l, clock, "alice")
	r, err := p.svc.Start(t.Context(), workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	_, err = p.svc.Run(t.Context(), r.ID, nil)
	require.NoError(t, err)
	saves := l.Saves()
	require.Greater(t, saves, 10, "every step and checkpoint persists")

	for killAt := 2; killAt < saves; killAt++ {
		// With a team store too: the shared copy of the plan is gone
		// once the release converged, wherever the run was killed.
		for _, shared := range []bool{false, true} {
			t.Run(fmt.Sprintf("kill-after-save-%d/shared-%t", killAt, shared), func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
				var team *workflowtest.SharedPlans
				var ks killSwitch
				if shared {
					team = workflowtest.NewSharedPlans()
					team.Gate = ks.gate
				}
				w.Gate, l.Gate = ks.gate, ks.gate
				l.AfterSave = func(n int) {
					if n == killAt {
						ks.kill()
					}
				}
				first := newTeamProcess(t, testProject(0), w, l, clock, "alice", team)
				first.journal.Gate = ks.gate
				r, err := first.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
				require.NoError(t, err)
				_, err = first.svc.Run(ctx, r.ID, nil)
				require.ErrorIs(t, err, errKilled)

				// A new process, same world and ledger.
				w.Gate, l.Gate, l.AfterSave = nil, nil, nil
				if shared {
					team.Gate = nil
				}
				second := newTeamProcess(t, testProject(0), w, l, clock, "alice", team)
				final, err := second.svc.Run(ctx, r.ID, nil)
				require.NoError(t, err)
				require.Equal(t, workflow.ReleaseConverged, final.Status)
				require.Equal(t, 1, w.Plans(), "planned once")
				require.Equal(t, 1, w.Applies, "applied once")
				require.Equal(t, 1, w.Copies, "copied once")
				require.Equal(t, 1, w.Commits, "committed once")
				require.Equal(t, 1, w.Lands, "landed once")
				if shared {
					require.Zero(t, team.Live(), "the shared plan is deleted after apply")
				}
			})
		}
	}
}

// TestResumeAfterKillRightAfterEachSideEffect kills the process after the
// side effect happened but before relcap could checkpoint it, the window
// adapters close by being idempotent.
func TestResumeAfterKillRightAfterEachSideEffect(t *testing.T) {
	t.Parallel()
	for _, effect := range []string{"apply", "copy", "commit", "land"} {
		t.Run(effect, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
			var ks killSwitch
			l.Gate = ks.gate
			w.Interrupt = func(e string) error {
				if e == effect {
					ks.kill()
					return errKilled
				}
				return nil
			}
			first := newProcess(t, testProject(0), w, l, clock, "alice")
			first.journal.Gate = ks.gate
			r, err := first.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
			require.NoError(t, err)
			_, err = first.svc.Run(ctx, r.ID, nil)
			require.ErrorIs(t, err, errKilled)

			w.Interrupt, l.Gate = nil, nil
			second := newProcess(t, testProject(0), w, l, clock, "alice")
			final, err := second.svc.Run(ctx, r.ID, nil)
			require.NoError(t, err)
			require.Equal(t, workflow.ReleaseConverged, final.Status)
			require.Equal(t, 1, w.Applies)
			require.Equal(t, 1, w.Copies)
			require.Equal(t, 1, w.Commits)
		})
	}
}

func TestReleaseBlocksOnApprovalAndResumesAfterIt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	captain := newProcess(t, testProject(1), w, l, clock, "alice")
	r, err := captain.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)

	got, err := captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrApprovalRequired)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Equal(t, workflow.ReleaseBlocked, got.Status)
	require.Equal(t, workflow.Blocked, got.Step(workflow.StepPlanReview).Status)
	fp := got.Checkpoints.Fingerprint
	require.Contains(t, got.Step(workflow.StepPlanReview).Message, "relcap approve --plan "+fp)

	// The author may not approve their own plan here.
	_, _, err = captain.svc.ApprovePlan(ctx, fp, "lgtm")
	require.ErrorIs(t, err, fault.ErrBlocked)

	reviewer := newProcess(t, testProject(1), w, l, clock, "bob")
	_, check, err := reviewer.svc.ApprovePlan(ctx, fp, "reviewed the replacement")
	require.NoError(t, err)
	require.True(t, check.Satisfied())

	final, err := captain.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
	require.Equal(t, 1, w.Plans(), "resuming did not re-plan an unchanged plan")
}

// approvedStagingPlan starts a staging release whose plan needs another
// person's approval, has bob give it, and returns the world, alice's
// process, the release and the approved plan's fingerprint.
func approvedStagingPlan(t *testing.T) (*workflowtest.World, process, *workflow.Release, string) {
	t.Helper()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	captain := newProcess(t, testProject(1), w, l, clock, "alice")
	reviewer := newProcess(t, testProject(1), w, l, clock, "bob")
	r, err := captain.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	got, err := captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrApprovalRequired)
	fp := got.Checkpoints.Fingerprint
	_, _, err = reviewer.svc.ApprovePlan(ctx, fp, "")
	require.NoError(t, err)
	return w, captain, r, fp
}

func TestStalePlanIsRefusedAndApprovalsDoNotCarryOver(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, captain, r, oldFP := approvedStagingPlan(t)

	// Someone else changes the state before the apply.
	w.StateSerial++

	got, err := captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrApprovalRequired, "the new plan needs its own approval")
	newFP := got.Checkpoints.Fingerprint
	require.NotEqual(t, oldFP, newFP)
	require.Contains(t, got.Step(workflow.StepPlanReview).Message, "stale")
	require.Equal(t, 0, w.Applies)
}

func TestPromotionToProdNeedsConvergenceInStaging(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	p := newProcess(t, testProject(0), w, l, clock, "alice")
	r, err := p.svc.Start(ctx, workflow.StartRequest{Env: "prod", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	got, err := p.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrNotPromotable)
	require.Equal(t, workflow.Blocked, got.Step(workflow.StepPromotion).Status)
	require.Equal(t, 0, w.Copies)

	staging, err := p.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	_, err = p.svc.Run(ctx, staging.ID, nil)
	require.NoError(t, err)

	final, err := p.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
	require.True(t, w.Repos["registry.test/prod/web"][w.Artifact.Digest], "copied from staging into prod")
}

func TestOwnershipConflictBlocksTheRelease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	w.Objects = append(w.Objects, ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformAddress: "kubectl_manifest.web_scale", TerraformType: "kubectl_manifest",
		Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image"}})
	p := newProcess(t, testProject(0), w, l, clock, "alice")
	r, err := p.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	got, err := p.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrOwnershipConflict)
	findings := got.Step(workflow.StepOwnership).Findings
	require.Equal(t, "ownership.conflict", findings[0].Code, "conflicts come first")
	require.Contains(t, findings[0].Message, "spec.template.spec.containers[web].image")
	require.NotEmpty(t, l.Findings("ownership/staging"))
	require.Equal(t, 0, w.Plans())
}

func TestDegradedApplicationFailsWithNextSafeAction(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	w.Unhealthy = true
	p := newProcess(t, testProject(0), w, l, clock, "alice")
	r, err := p.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	got, err := p.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrNotConverged)
	require.Equal(t, workflow.ReleaseFailed, got.Status)
	conv := got.Step(workflow.StepConvergence)
	require.Equal(t, workflow.Failed, conv.Status)
	require.Len(t, conv.Findings, 1)
	require.Contains(t, conv.Findings[0].NextAction, "relcap rollback")
	require.Equal(t, got.Checkpoints.EnvCommit, conv.Findings[0].Fact("intended_revision"))
}

func TestInterruptedRunLeavesStepResumable(t *testing.T) {
	t.Parallel()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	p := newProcess(t, testProject(0), w, l, clock, "alice")
	r, err := p.svc.Start(t.Context(), workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	_, err = p.svc.Run(ctx, r.ID, func(e workflow.Event) {
		if e.Kind == workflow.EventStepStarted && e.Step == workflow.StepPromotion {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	saved, err := l.LoadRelease(t.Context(), r.ID)
	require.NoError(t, err)
	require.Equal(t, workflow.Running, saved.Step(workflow.StepPromotion).Status)
	require.Equal(t, workflow.ReleaseInProgress, saved.Status)

	final, err := p.svc.Run(t.Context(), r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
}

func TestMachineWaitIsRecordedApartFromStaffEffort(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	p := newProcess(t, testProject(0), w, l, clock, "alice")
	r, err := p.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	_, err = p.svc.Run(ctx, r.ID, func(e workflow.Event) {
		if e.Kind == workflow.EventAppState {
			clock.Advance(10 * time.Second) // reconciliation takes time
		}
	})
	require.NoError(t, err)
	entries, err := l.Effort(ctx, r.ID)
	require.NoError(t, err)
	totals := effort.Sum(entries)
	require.Equal(t, 40*time.Second, totals.Wait, "four app states, ten seconds each")
	require.Equal(t, time.Duration(0), totals.OffTool)
}

func TestPromoteOnlyStopsAfterTheDecisionAndConvergesOnResume(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	p := newProcess(t, testProject(1), w, l, clock, "alice")
	r, err := p.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3", PromoteOnly: true})
	require.NoError(t, err)
	got, err := p.svc.RunUntil(ctx, r.ID, nil, workflow.StepPromotion)
	require.NoError(t, err, "plan approvals do not apply: the boundary is skipped")
	require.Equal(t, workflow.ReleaseInProgress, got.Status)
	require.Equal(t, workflow.Skipped, got.Step(workflow.StepPlanReview).Status)
	require.Equal(t, workflow.Succeeded, got.Step(workflow.StepPromotion).Status)
	require.Equal(t, workflow.Pending, got.Step(workflow.StepConvergence).Status)
	require.Equal(t, 0, w.Plans())

	final, err := p.svc.Run(ctx, r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
}

func TestForceUnverifiedPromotesWithAJournaledReason(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	w.Repos["registry.test/staging/web"] = map[image.Digest]bool{w.Artifact.Digest: true}
	p := newProcess(t, testProject(0), w, l, clock, "alice")
	r, err := p.svc.Start(ctx, workflow.StartRequest{Env: "prod", Image: "registry.test/ci/web:1.2.3", PromoteOnly: true, ForceUnverified: "staging is down; hotfix for incident 42"})
	require.NoError(t, err)
	got, err := p.svc.RunUntil(ctx, r.ID, nil, workflow.StepPromotion)
	require.NoError(t, err)
	require.Equal(t, workflow.Succeeded, got.Step(workflow.StepPromotion).Status)
	require.Equal(t, "promotion.force-unverified", got.Step(workflow.StepPromotion).Findings[0].Code)
	require.Contains(t, p.journal.Kinds(), "promotion.force-unverified")
}

// TestFailedApplyNamesTheNextSafeActionAndRetryReviewsThePlanAgain: a
// Terraform apply that fails part-way (the state moved) fails the release
// with the next safe action on the first line, and retrying reviews the
// plan again: the old plan is stale, so a new one is made, which needs
// its own approval before anything is applied.
func TestFailedApplyNamesTheNextSafeActionAndRetryReviewsThePlanAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, captain, r, oldFP := approvedStagingPlan(t)

	// The fake applies (the state serial moves) and then fails, as a
	// provisioner failing after the first resource does; what it left
	// undone is planned again.
	left := w.Changes
	terraformErr := errors.New("exit status 1\n\nError: local-exec provisioner error")
	w.Interrupt = func(effect string) error {
		if effect == "apply" {
			return terraformErr
		}
		return nil
	}
	got, err := captain.svc.Run(ctx, r.ID, nil)
	var failed *workflow.ApplyFailedError
	require.ErrorAs(t, err, &failed)
	require.ErrorIs(t, err, terraformErr)
	require.Equal(t, workflow.ReleaseFailed, got.Status)
	msg := got.Step(workflow.StepApply).Message
	first, rest, _ := strings.Cut(msg, "\n")
	require.Equal(t, "apply of plan "+workflow.ShortHash(oldFP)+" failed; next safe action: "+failed.NextAction, first, "the next safe action is the first line")
	require.Contains(t, failed.NextAction, "relcap plan --env staging")
	require.Contains(t, rest, "local-exec provisioner error", "Terraform's own error follows")
	cur, ok := got.Current()
	require.True(t, ok)
	require.Equal(t, workflow.StepPlanReview, cur, "retrying starts from plan review")
	require.Contains(t, captain.journal.Kinds(), "step.finished")

	w.Interrupt, w.Changes = nil, left
	got, err = captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrApprovalRequired, "the new plan needs its own approval")
	require.NotEqual(t, oldFP, got.Checkpoints.Fingerprint, "the state moved: planned again")
	require.Contains(t, got.Step(workflow.StepPlanReview).Message, "stale")
	require.Equal(t, 1, w.Applies, "nothing applied after the failure without a new approval")
}
