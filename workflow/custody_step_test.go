package workflow_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// localStateEverywhere is a fake custody.Reader (the real one, the
// Terraform adapter's, is tested against real Terraform): every root keeps
// its state in a local file.
type localStateEverywhere struct{}

func (localStateEverywhere) Backend(_ context.Context, root custody.Root) (custody.Backend, error) {
	return custody.Backend{Type: "local", Source: custody.FromDefault, Dir: root.Dir, Workspace: root.Workspace}, nil
}

func (localStateEverywhere) RemoteStates(context.Context, custody.Root) ([]custody.RemoteState, error) {
	return nil, nil
}

func custodyProcess(t *testing.T, p *workflow.Project, w *workflowtest.World, l *workflowtest.Ledger, clock workflow.Clock) process {
	t.Helper()
	j := workflowtest.NewJournal(clock, "alice")
	tf := workflowtest.Terraform{W: w}
	svc, err := workflow.NewService(workflow.Deps{
		Project: p, Ledger: l, Journal: j, Clock: clock, Actor: "alice",
		Ownership: []workflow.OwnershipSource{workflowtest.Ownership{W: w}},
		Planner:   tf, Applier: tf, Custody: localStateEverywhere{},
		Registry: workflowtest.Registry{W: w}, EnvRepo: workflowtest.EnvRepo{W: w},
		Convergence: workflowtest.Convergence{W: w}, ConvergeTimeout: time.Minute,
	})
	require.NoError(t, err)
	return process{svc: svc, journal: j}
}

// TestCustodyStopsAProductionPlanOnALocalStateUntilAccepted: production
// (the last environment) on a local state file is stopped at plan review
// before anyone is asked to approve; staging only warns; accepted in
// relcap.yaml, production goes on with the acceptance shown on the plan
// and journaled with its reason.
func TestCustodyStopsAProductionPlanOnALocalStateUntilAccepted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	proj := testProject(0)
	captain := custodyProcess(t, proj, w, l, clock)

	r, err := captain.svc.Start(ctx, workflow.StartRequest{Env: "prod", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	got, err := captain.svc.Run(ctx, r.ID, nil)
	require.ErrorIs(t, err, fault.ErrCustody)
	step := got.Step(workflow.StepOwnership)
	require.Equal(t, workflow.Blocked, step.Status, "stopped before Terraform first reads the state")
	require.Contains(t, step.Message, "the state custody of prod stops this release: the state is a local file (/infra/prod/terraform.tfstate)")
	require.Contains(t, step.Message, "accept custody.local-backend for prod in relcap.yaml")
	require.Zero(t, w.Applies)
	require.Empty(t, got.Checkpoints.Fingerprint, "nothing planned")
	require.True(t, hasBlocker(step.Findings, custody.CodeLocalBackend))
	rec := journaledCustody(t, captain.journal, "prod")
	require.Equal(t, []string{custody.CodeLocalBackend}, rec.Blockers)
	require.Equal(t, "local file /infra/prod/terraform.tfstate", rec.Location)

	// Accepted, with a reason: the plan is made, the finding is a warning
	// that says so, kept with the plan, and the release goes on.
	proj.Environments[1].CustodyAccepted = map[string]string{custody.CodeLocalBackend: "one operator; backed up nightly"}
	captain = custodyProcess(t, proj, w, l, clock)
	got, err = captain.svc.RunUntil(ctx, r.ID, nil, workflow.StepPlanReview)
	require.NoError(t, err)
	require.Equal(t, workflow.Succeeded, got.Step(workflow.StepPlanReview).Status)
	var accepted *finding.Finding
	for _, f := range got.Step(workflow.StepPlanReview).Findings {
		if f.Code == custody.CodeLocalBackend {
			accepted = &f
		}
	}
	require.NotNil(t, accepted)
	require.Equal(t, finding.Warning, accepted.Severity)
	require.Contains(t, accepted.Message, "accepted in relcap.yaml: one operator; backed up nightly")
	plan, err := l.LoadPlan(ctx, got.Checkpoints.Fingerprint)
	require.NoError(t, err)
	require.Contains(t, plan.Findings, *accepted, "kept with the plan, so every review of it shows it")
	rec = journaledCustody(t, captain.journal, "prod")
	require.Empty(t, rec.Blockers)
	require.Equal(t, map[string]string{custody.CodeLocalBackend: "one operator; backed up nightly"}, rec.Accepted)

	// Staging on the same kind of state only warns.
	s, err := captain.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	got, err = captain.svc.RunUntil(ctx, s.ID, nil, workflow.StepApply)
	require.NoError(t, err)
	require.Equal(t, workflow.Succeeded, got.Step(workflow.StepPlanReview).Status)
}

func journaledCustody(t *testing.T, j *workflowtest.Journal, env string) journal.CustodyReviewed {
	t.Helper()
	var last *journal.CustodyReviewed
	for _, e := range j.Entries() {
		if e.Kind != journal.KindCustodyReviewed {
			continue
		}
		var rec journal.CustodyReviewed
		require.NoError(t, json.Unmarshal(e.Data, &rec))
		if rec.Env == env {
			last = &rec
		}
	}
	require.NotNil(t, last, "no %s entry for %s in %v", journal.KindCustodyReviewed, env, j.Kinds())
	return *last
}
