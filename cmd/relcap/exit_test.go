package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
)

func TestExitCodeOfAnAlreadyAppliedPlanIsItsOwnRefusal(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("%w: plan abc was already applied", fault.ErrAlreadyApplied)
	require.Equal(t, exitBlocked, exitCode(err))
	require.False(t, errors.Is(err, fault.ErrStalePlan), "already applied is not stale")
	require.Equal(t, exitBlocked, exitCode(fmt.Errorf("%w: moved", fault.ErrStalePlan)))
}
