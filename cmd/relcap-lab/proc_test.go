package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStopEndsTheWholeProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A child in the background, like git daemon's workers.
	r, err := start(dir, Component{Name: "sh", Path: "sh", Args: []string{"-c", "sleep 300 & sleep 300"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = stop(r.Process, time.Second) })
	require.Eventually(t, func() bool { return len(groupMembers(r.PID)) >= 2 }, 5*time.Second, 50*time.Millisecond)
	require.True(t, alive(r.Process))
	require.NoError(t, stop(r.Process, 5*time.Second))
	<-r.exited
	require.False(t, alive(r.Process))
	require.Empty(t, groupMembers(r.PID))
}

func TestWaitReadyReportsAComponentThatDiesWithItsLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, err := start(dir, Component{Name: "crasher", Path: "sh", Args: []string{"-c", "echo cannot open /app/config/gpg/keys >&2; exit 3"}})
	require.NoError(t, err)
	never := func(context.Context) error { return errors.New("not yet") }
	err = r.waitReady(t.Context(), never)
	require.ErrorContains(t, err, "crasher exited during start-up (exit status 3)")
	require.ErrorContains(t, err, "cannot open /app/config/gpg/keys")
}
