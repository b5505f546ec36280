package unlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/unlock"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// unlocker is a fake Terraform that can force-unlock, failing with err.
type unlocker struct {
	workflowtest.Terraform
	unlocked []string
	err      error
}

func (u *unlocker) ForceUnlock(_ context.Context, env workflow.Environment, lockID string) error {
	u.unlocked = append(u.unlocked, env.Name+"/"+lockID)
	return u.err
}

func service(t *testing.T, applier workflow.Applier) (*workflow.Service, *workflowtest.Journal) {
	t.Helper()
	clock := workflowtest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	j := workflowtest.NewJournal(clock, "alice")
	p := &workflow.Project{App: "web", Environments: []workflow.Environment{{Name: "staging"}}}
	svc, err := workflow.NewService(workflow.Deps{Project: p, Ledger: workflowtest.NewLedger(), Journal: j, Clock: clock, Actor: "alice", Applier: applier})
	require.NoError(t, err)
	return svc, j
}

// TestForceUnlockNeedsTheHoldersGoneAndAReasonAndJournalsBoth: an
// unconfirmed or unexplained request unlocks nothing; a confirmed one is
// journaled before and after terraform force-unlock, and a failure too.
func TestForceUnlockNeedsTheHoldersGoneAndAReasonAndJournalsBoth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tf := &unlocker{}
	svc, j := service(t, tf)
	req := unlock.Request{Env: "staging", LockID: "1234", HolderGone: true, Reason: "CI job killed"}

	unconfirmed := req
	unconfirmed.HolderGone = false
	require.ErrorIs(t, unlock.ForceUnlock(ctx, svc, unconfirmed), fault.ErrBlocked)
	unexplained := req
	unexplained.Reason = " "
	require.ErrorIs(t, unlock.ForceUnlock(ctx, svc, unexplained), fault.ErrUsage)
	require.Empty(t, tf.unlocked)

	require.NoError(t, unlock.ForceUnlock(ctx, svc, req))
	require.Equal(t, []string{"staging/1234"}, tf.unlocked)
	require.Equal(t, []string{string(journal.KindUnlockRequested), string(journal.KindUnlockDone)}, j.Kinds())

	tf.err = errors.New("lock not found")
	require.ErrorContains(t, unlock.ForceUnlock(ctx, svc, req), "lock not found")
	require.Contains(t, j.Kinds(), string(journal.KindUnlockFailed))

	plain, _ := service(t, workflowtest.Terraform{})
	require.ErrorContains(t, unlock.ForceUnlock(ctx, plain, req), "no terraform state unlock adapter")
}
