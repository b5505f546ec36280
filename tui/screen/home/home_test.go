package home

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/oplock"
)

type noEffort struct{}

func (noEffort) Effort(context.Context, string) ([]effort.Entry, error) { return nil, nil }

// TestALockRefusalShowsItsHolderAndSaysToWaitOrAsk: an apply blocked by
// another captain's apply lock shows the refusal (holder, what, since) as
// the step's message, and the bottom line says to wait or ask, not to act
// on a policy.
func TestALockRefusalShowsItsHolderAndSaysToWaitOrAsk(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	le := &oplock.LockedError{Scope: oplock.Scope{Kind: oplock.Apply, Key: "web:infra/staging@default"},
		Holder: oplock.Holder{Actor: "bob", What: "apply plan 1a2b3c4d5e6f in staging", Since: t0}, Age: 2 * time.Minute}
	r := workflow.NewRelease("web-staging-1", "web", "staging", "img:1", "alice", t0)
	for _, k := range []workflow.StepKind{workflow.StepOwnership, workflow.StepPlanReview} {
		r.Step(k).Status = workflow.Succeeded
	}
	r.Step(workflow.StepApply).Status = workflow.Blocked
	r.Step(workflow.StepApply).Message = le.Error()
	r.Status = workflow.ReleaseBlocked

	m := New(noEffort{}, theme.New(true), keys.Default())
	m.SetSize(120, 40)
	m, _ = m.Update(screen.RunStateMsg{Release: r, Err: &workflow.StepError{Step: workflow.StepApply, Err: le}})
	view := strings.Join(strings.Fields(ansi.Strip(m.View())), " ") // as read, across wrapped lines
	require.Contains(t, view, "What blocks ■ Apply: locked by another writer: the apply lock of Terraform state web:infra/staging@default is held by bob: apply plan 1a2b3c4d5e6f in staging, since 2026-12-01T13:00:00Z (2m0s ago); wait until it finishes")
	require.Contains(t, view, "Another captain holds the lock (named above): wait for them or ask them, then r resume")
	require.NotContains(t, view, "Blocked by policy")
}
