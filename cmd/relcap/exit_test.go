package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

func TestExitCodeOfAnAlreadyAppliedPlanIsItsOwnRefusal(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("%w: plan abc was already applied", workflow.ErrAlreadyApplied)
	require.Equal(t, exitBlocked, exitCode(err))
	require.False(t, errors.Is(err, workflow.ErrStalePlan), "already applied is not stale")
	require.Equal(t, exitBlocked, exitCode(fmt.Errorf("%w: moved", workflow.ErrStalePlan)))
}
