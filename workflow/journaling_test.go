package workflow_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/workflowtest"
)

var errDiskFull = errors.New("journal disk full")

// TestARefusalThatCannotBeJournaledSaysSo: the record of a refused
// approval is evidence too; when the journal cannot take it, the command
// fails naming both the refusal and the lost record, never silently.
func TestARefusalThatCannotBeJournaledSaysSo(t *testing.T) {
	t.Parallel()
	clock := workflowtest.NewClock(t0)
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	p := testProject(1)
	alice := newProcess(t, p, w, l, clock, "alice")
	r, err := alice.svc.Start(t.Context(), workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)

	alice.journal.Gate = func() error { return errDiskFull }
	_, _, err = alice.svc.ApproveRelease(t.Context(), r.ID, "mine")
	require.ErrorIs(t, err, fault.ErrBlocked, "the author may not approve: the refusal stands")
	require.ErrorIs(t, err, errDiskFull)
	require.ErrorContains(t, err, "the session journal could not record it")
}

// TestARunWhoseJournalFailsStopsWithTheError: a step whose record cannot
// be journaled does not go on as if it had been.
func TestARunWhoseJournalFailsStopsWithTheError(t *testing.T) {
	t.Parallel()
	clock := workflowtest.NewClock(t0)
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	alice := newProcess(t, testProject(0), w, l, clock, "alice")
	r, err := alice.svc.Start(t.Context(), workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	alice.journal.Gate = func() error { return errDiskFull }
	_, err = alice.svc.Run(t.Context(), r.ID, nil)
	require.ErrorIs(t, err, errDiskFull)
	require.Zero(t, w.Plans(), "nothing ran past the record it could not make")
	got, err := l.LoadRelease(t.Context(), r.ID)
	require.NoError(t, err)
	require.NotEqual(t, workflow.ReleaseConverged, got.Status)
}
