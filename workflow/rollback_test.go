package workflow_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// releaseTo runs a full release of image to env with a data-schema record.
func releaseTo(t *testing.T, p process, w *workflowtest.World, clock *workflowtest.Clock, env string, c workflow.Compatibility) *workflow.Release {
	t.Helper()
	clock.Advance(time.Hour)
	r, err := p.svc.Start(t.Context(), workflow.StartRequest{Env: env, Image: "registry.test/ci/web:1.2.3", Compatibility: &c})
	require.NoError(t, err)
	w.Changes = []workflow.ResourceChange{{Address: "terraform_data.web", Type: "terraform_data", Action: workflow.ActionUpdate}}
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
	require.Equal(t, v1.Outputs[workflow.OutDigest], final.Outputs[workflow.OutDigest])
	require.NotEqual(t, v1.Outputs[workflow.OutEnvCommit], final.Outputs[workflow.OutEnvCommit], "a new change, not a history rollback")
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
	require.ErrorIs(t, err, workflow.ErrIncompatible)
	require.ErrorIs(t, err, workflow.ErrBlocked)
	require.Contains(t, err.Error(), "schema 5")
	require.Contains(t, p.journal.Kinds(), "rollback.refused")
}
