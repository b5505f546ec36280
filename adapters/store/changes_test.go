package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/approval"
)

// TestChangesSignalsACommitFromAnotherHandle: a teammate's approval,
// written through another ledger handle (another process on the same
// ledger), reaches the watcher; nothing is signalled while nothing
// changes, and the channel closes when the watch ends.
func TestChangesSignalsACommitFromAnotherHandle(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		loc := b.newLocation(t)
		cockpit := b.openAt(t, loc)
		approver := b.openAt(t, loc)

		ctx, stop := context.WithCancel(t.Context())
		changes := cockpit.Changes(ctx)
		select {
		case <-changes:
			t.Fatal("signalled before anything changed")
		case <-time.After(3 * changePoll):
		}

		require.NoError(t, approver.RecordApproval(t.Context(), approval.Approval{
			Kind: approval.Plan, Subject: "fp", Env: "staging", Approver: "bob", At: time.Now()}))
		select {
		case <-changes:
		case <-time.After(5 * time.Second):
			t.Fatal("bob's approval was not signalled")
		}

		stop()
		select {
		case _, open := <-changes:
			require.False(t, open, "the feed closes when its context ends")
		case <-time.After(5 * time.Second):
			t.Fatal("the feed did not close")
		}
	})
}
