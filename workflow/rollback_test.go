package workflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// releaseTo runs a full release of image to env with a data-schema record.
func releaseTo(t *testing.T, p process, w *workflowtest.World, clock *workflowtest.Clock, env string, c workflow.Compatibility) *workflow.Release {
	t.Helper()
	clock.Advance(time.Hour)
	r, err := p.svc.Start(t.Context(), workflow.StartRequest{Env: env, Image: "registry.test/ci/web:1.2.3", Compatibility: &c})
	require.NoError(t, err)
	w.Changes = []tfplan.ResourceChange{{Address: "terraform_data.web", Type: "terraform_data", Action: tfplan.ActionUpdate}}
	final, err := p.svc.Run(t.Context(), r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
	return final
}

func TestRollbackIsANewGitChangeToACompatibleRelease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	p := newProcess(t, testProject(0), w, l, clock, "alice")
	v1 := releaseTo(t, p, w, clock, "staging", workflow.Compatibility{Schema: 4, MinSchema: 4, MaxSchema: 5})
	v2 := releaseTo(t, p, w, clock, "staging", workflow.Compatibility{Schema: 5, MinSchema: 5})

	clock.Advance(time.Hour)
	rb, err := p.svc.StartRollback(ctx, workflow.RollbackRequest{Env: "staging", To: v1.ID})
	require.NoError(t, err)
	require.Equal(t, workflow.KindRollback, rb.Kind)
	final, err := p.svc.Run(ctx, rb.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, final.Status)
	require.Equal(t, v1.Checkpoints.Digest.String(), final.Checkpoints.Digest.String())
	require.NotEqual(t, v1.Checkpoints.EnvCommit, final.Checkpoints.EnvCommit, "a new change, not a history rollback")
	replaced, err := l.LoadRelease(ctx, v2.ID)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseRolledBack, replaced.Status, "the replaced release counts as rolled back")
	require.Contains(t, p.journal.Kinds(), "rollback.started")
}

func TestRollbackToAnIncompatibleReleaseIsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
	p := newProcess(t, testProject(0), w, l, clock, "alice")
	v1 := releaseTo(t, p, w, clock, "staging", workflow.Compatibility{Schema: 4, MaxSchema: 4})
	releaseTo(t, p, w, clock, "staging", workflow.Compatibility{Schema: 5, MinSchema: 5})

	_, err := p.svc.StartRollback(ctx, workflow.RollbackRequest{Env: "staging", To: v1.ID})
	require.ErrorIs(t, err, fault.ErrIncompatible)
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "schema 5")
	require.Contains(t, p.journal.Kinds(), "rollback.refused")
}

// retrying is the fake Convergence whose next Get shows a failed sync of
// a bad revision that Argo CD keeps retrying, with the ability to end it
// (or not). It answers that Get itself: the world's application state is
// still being written by the previous release's watch.
type retrying struct {
	workflowtest.Convergence
	failing    *appstate.AppState
	refuse     error
	terminated int
}

func (r *retrying) Get(ctx context.Context, app appstate.AppRef) (appstate.AppState, error) {
	if s := r.failing; s != nil {
		r.failing = nil
		return *s, nil
	}
	return r.Convergence.Get(ctx, app)
}

func (r *retrying) TerminateOperation(context.Context, appstate.AppRef) error {
	r.terminated++
	return r.refuse
}

// pins records the pin requests of the fake environment repository.
type pins struct {
	workflowtest.EnvRepo
	reqs []workflow.PinRequest
}

func (p *pins) Pin(ctx context.Context, req workflow.PinRequest) (workflow.EnvChange, error) {
	p.reqs = append(p.reqs, req)
	return p.EnvRepo.Pin(ctx, req)
}

// TestRollbackRestoresTheReleasesFileAndEndsRetriesOfAFailedSync: the
// rollback asks the environment repository to restore the file from the
// commit where the target converged, and ends Argo CD's retries of the bad
// revision first; when that is refused it says so and still converges.
func TestRollbackRestoresTheReleasesFileAndEndsRetriesOfAFailedSync(t *testing.T) {
	t.Parallel()
	for _, refuse := range []error{nil, errors.New("permission denied: the token may not sync")} {
		ctx := t.Context()
		w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
		conv := &retrying{Convergence: workflowtest.Convergence{W: w}, refuse: refuse}
		repo := &pins{EnvRepo: workflowtest.EnvRepo{W: w}}
		j := workflowtest.NewJournal(clock, "alice")
		p := testProject(0)
		tf := workflowtest.Terraform{W: w}
		svc, err := workflow.NewService(workflow.Deps{
			Project: p, Ledger: l, Journal: j, Clock: clock, Actor: "alice",
			Ownership: []workflow.OwnershipSource{workflowtest.Ownership{W: w}},
			Planner:   tf, Applier: tf, Registry: workflowtest.Registry{W: w}, EnvRepo: repo,
			Convergence: conv, ConvergeTimeout: time.Minute,
		})
		require.NoError(t, err)
		proc := process{svc: svc, journal: j}
		v1 := releaseTo(t, proc, w, clock, "staging", workflow.Compatibility{Schema: 4, MinSchema: 4})
		releaseTo(t, proc, w, clock, "staging", workflow.Compatibility{Schema: 4, MinSchema: 4})
		conv.failing = &appstate.AppState{Name: "web", SyncStatus: appstate.SyncOutOfSync, SyncRevision: "bad", Health: appstate.HealthHealthy,
			Operation: appstate.OperationRunning, OperationRetries: 2, OperationRevision: "bad", OperationMsg: `Deployment.apps "web" is invalid`}

		rb, err := svc.StartRollback(ctx, workflow.RollbackRequest{Env: "staging", To: v1.ID})
		require.NoError(t, err)
		var progress []string
		final, err := svc.Run(ctx, rb.ID, func(e workflow.Event) {
			if e.Kind == workflow.EventStepProgress {
				progress = append(progress, e.Message)
			}
		})
		require.NoError(t, err)
		require.Equal(t, workflow.ReleaseConverged, final.Status)
		require.Equal(t, v1.Checkpoints.EnvCommit, repo.reqs[len(repo.reqs)-1].RestoreFrom, "the file as the target converged")
		require.Equal(t, 1, conv.terminated)
		require.Contains(t, progress, "ending Argo CD's retries of the failed sync of bad (attempt #2)")
		if refuse == nil {
			require.Contains(t, j.Kinds(), "convergence.operation-terminated")
		} else {
			require.Contains(t, j.Kinds(), "convergence.terminate-failed", "a refusal is journaled and the rollback waits instead of failing")
			require.Contains(t, strings.Join(progress, "\n"), "could not end them (permission denied: the token may not sync); waiting for Argo CD's retries to run out")
		}
	}
}
