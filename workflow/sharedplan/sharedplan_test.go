package sharedplan_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/sharedplan"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// recordingApplier is the fake Terraform, remembering which plan file
// each apply was given.
type recordingApplier struct {
	workflowtest.Terraform
	mu    *sync.Mutex
	files *[]string
}

func (a recordingApplier) Apply(ctx context.Context, req workflow.ApplyRequest) (workflow.ApplyResult, error) {
	a.mu.Lock()
	*a.files = append(*a.files, req.PlanFile)
	a.mu.Unlock()
	return a.Terraform.Apply(ctx, req)
}

// TestASharedPlanIsAppliedFromAnotherMachineOnlyByAnApplier: alice's plan
// is shared with approvers.apply until plans.expiry; carol, not listed, is
// refused before anything is fetched; bob's machine, without the file,
// fetches it, applies that file and deletes the shared copy, journaling
// where it came from.
func TestASharedPlanIsAppliedFromAnotherMachineOnlyByAnApplier(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	p := testProject(1)
	p.Environments[0].Approvals.Approvers.Apply = []string{"alice", "bob"}
	p.Plans.Expiry = 2 * time.Hour
	team := workflowtest.NewSharedPlans()
	var mu sync.Mutex
	var files []string
	machine := func(actor string) (*workflow.Service, *workflowtest.Journal) {
		j := workflowtest.NewJournal(clock, actor)
		tf := workflowtest.Terraform{W: w}
		d := workflow.Deps{
			Project: p, Ledger: l, Journal: j, Clock: clock, Actor: actor,
			Ownership: []workflow.OwnershipSource{workflowtest.Ownership{W: w}},
			Planner:   tf, Applier: recordingApplier{Terraform: tf, mu: &mu, files: &files},
			PlanVault: &workflowtest.PlanVault{S: team, Machine: actor},
		}
		d.SharedPlans = sharedplan.New(d)
		svc, err := workflow.NewService(d)
		require.NoError(t, err)
		return svc, j
	}
	alice, aliceJ := machine("alice")
	bob, bobJ := machine("bob")
	carol, _ := machine("carol")

	out, err := alice.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)
	fp := out.Plan.Fingerprint
	req, ok := team.Share(fp)
	require.True(t, ok)
	require.Equal(t, []string{"alice", "bob"}, req.Appliers)
	require.True(t, t0.Add(2*time.Hour).Equal(req.ExpiresAt), "plans.expiry after it was made: %s", req.ExpiresAt)
	require.Contains(t, aliceJ.Kinds(), string(journal.KindPlanShared))

	_, _, err = bob.ApprovePlan(ctx, fp, "ok")
	require.NoError(t, err)
	_, _, err = carol.ApplyPlan(ctx, fp, nil)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "approvers.apply lists alice, bob")
	require.Equal(t, 0, team.Fetches, "refused before anything is fetched")
	require.Equal(t, 0, w.Applies)

	_, _, err = bob.ApplyPlan(ctx, fp, nil)
	require.NoError(t, err)
	require.Equal(t, 1, team.Fetches)
	require.Equal(t, []string{"/bob/plans/" + fp + ".tfplan"}, files, "bob's own copy is applied")
	require.Equal(t, []string{fp}, team.Deleted, "deleted after apply")
	require.Contains(t, bobJ.Kinds(), string(journal.KindPlanFetched))
	require.Equal(t, 1, w.Applies)
}

// TestWithoutAVaultTheLedgersPlanFileIsApplied: with no vault (SQLite),
// the plan file is the one the ledger names, as before.
func TestWithoutAVaultTheLedgersPlanFileIsApplied(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	alice := newProcess(t, testProject(0), w, l, clock, "alice")
	out, err := alice.svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)
	require.NotContains(t, alice.journal.Kinds(), string(journal.KindPlanShared))
	_, _, err = alice.svc.ApplyPlan(ctx, out.Plan.Fingerprint, nil)
	require.NoError(t, err)
	require.NotContains(t, alice.journal.Kinds(), string(journal.KindPlanFetched))
}
