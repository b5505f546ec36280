package tui

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/tui/screen/rehearse"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/rehearsal"
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
	drills, err := rehearsal.New(rehearsal.Deps{Core: svc, Pauser: breakglass.New(svc.Deps())})
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
	require.ErrorIs(t, r.o.RunErr, fault.ErrBlocked)
	require.Empty(t, r.o.Records)
	require.Contains(t, out.String(), "recovery rehearsal")
	require.Contains(t, cast.String(), "no converged release")
	rs, err := fx.Ledger.ListRehearsals(t.Context(), rehearsal.Filter{})
	require.NoError(t, err)
	require.Empty(t, rs)
}

// TestRehearsalIsARouteOfTheCockpit opens the cockpit's root model on its
// rehearsal route, as relcap rehearse does: it stays there (tab and the
// step keys are not the cockpit's here), ? toggles the help, and the view
// is the rehearsal's, titled for it.
func TestRehearsalIsARouteOfTheCockpit(t *testing.T) {
	t.Parallel()
	fx := fixture.New(fixture.Policy{})
	svc, _, err := fx.Service("alice")
	require.NoError(t, err)
	drills, err := rehearsal.New(rehearsal.Deps{Core: svc, Pauser: breakglass.New(svc.Deps())})
	require.NoError(t, err)
	var tm tea.Model = New(t.Context(), svc, nil, "").asRehearsal(drills, rehearse.Request{Env: "staging", Drills: []rehearsal.Drill{rehearsal.DrillUnavailableImage}})
	tm, _ = tm.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	tm, _ = tm.Update(tea.KeyPressMsg{Code: tea.KeyTab})
	require.Equal(t, "tab does nothing here; ? lists the keys", tm.(Model).notice, "a key of no use here is answered, not dropped")
	require.Contains(t, ansi.Strip(tm.(Model).render()), "▸ tab does nothing here")
	tm, _ = tm.Update(tea.KeyPressMsg{Code: '1', Text: "1"})
	require.Equal(t, scrRehearse, tm.(Model).active)
	tm, _ = tm.Update(tea.KeyPressMsg{Code: '?', Text: "?"})
	require.True(t, tm.(Model).help.ShowAll)
	v := tm.View()
	require.Equal(t, "relcap · rehearse", v.WindowTitle)
	require.Contains(t, tm.(Model).render(), "relcap · recovery rehearsal")
	require.Contains(t, tm.(Model).render(), "effort: counted once the drill has a release")
}
