package tui

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/tui/screen/rehearse"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// TestRunRehearsalRefusedShowsWhyAndQuits runs the rehearsal program on
// an environment with no converged release: the screen says why it cannot
// run, q leaves, and the outcome carries the refusal (exit 3 headless),
// with nothing started and a recording of what was shown.
func TestRunRehearsalRefusedShowsWhyAndQuits(t *testing.T) {
	t.Parallel()
	fx := fixture.New(fixture.Policy{})
	svc, _, err := fx.Service("alice")
	require.NoError(t, err)
	drills, err := rehearsal.New(rehearsal.Deps{Core: svc, Pauser: workflowtest.BreakGlassPauser{S: svc}})
	require.NoError(t, err)
	in, keys := io.Pipe()
	out, cast := &lockedWriter{w: &bytes.Buffer{}}, &bytes.Buffer{}
	type result struct {
		o   RehearsalOutcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := RunRehearsal(t.Context(), RehearsalOptions{Service: svc, Rehearsals: drills, Request: rehearse.Request{Env: "staging", Drills: []rehearsal.Drill{rehearsal.DrillUnavailableImage}},
			Input: in, Output: out, Record: cast, Width: 80, Height: 24})
		done <- result{o, err}
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "no converged release") }, 20*time.Second, 10*time.Millisecond)
	_, err = keys.Write([]byte("q"))
	require.NoError(t, err)
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the rehearsal screen did not quit")
	}
	_ = keys.Close()
	require.NoError(t, r.err)
	require.ErrorIs(t, r.o.RunErr, workflow.ErrBlocked)
	require.Empty(t, r.o.Records)
	require.Contains(t, out.String(), "recovery rehearsal")
	require.Contains(t, cast.String(), "no converged release")
	rs, err := fx.Ledger.ListRehearsals(t.Context(), rehearsal.Filter{})
	require.NoError(t, err)
	require.Empty(t, rs)
}
