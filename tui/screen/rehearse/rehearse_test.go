package rehearse_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/screen/rehearse"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// drillWorld is a Service over the fixture's project whose Pods fail as a
// kubelet's would (workflowtest.TreeConvergence), on the wall clock (the
// watch waits on it), with a fast watch; staging has converged on a first
// release, the baseline a drill returns to.
func drillWorld(t *testing.T, hold chan struct{}) (*workflow.Service, *workflowtest.World, *workflowtest.Ledger, *workflow.Release) {
	t.Helper()
	p := fixture.Project(fixture.Policy{})
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	clock := workflow.SystemClock{}
	gate := &atomic.Pointer[chan struct{}]{}
	tf := workflowtest.Terraform{W: w}
	svc, err := workflow.NewService(workflow.Deps{
		Project: p, Ledger: l, Journal: workflowtest.NewJournal(clock, "alice"), Clock: clock, Actor: "alice",
		Ownership: []workflow.OwnershipSource{workflowtest.Ownership{W: w}},
		Planner:   tf, Applier: tf,
		Registry: workflowtest.Registry{W: w}, EnvRepo: workflowtest.EnvRepo{W: w},
		Convergence: heldTree{TreeConvergence: workflowtest.TreeConvergence{Convergence: workflowtest.Convergence{W: w}}, hold: gate}, ConvergeTimeout: 5 * time.Second,
		Wait: workflow.WaitOptions{TreeInterval: 2 * time.Millisecond, ReadinessGrace: 20 * time.Millisecond, StallAfter: time.Hour, RefreshWithin: time.Second},
	})
	require.NoError(t, err)
	r, err := svc.Start(t.Context(), workflow.StartRequest{Env: "staging", Image: fixture.Image})
	require.NoError(t, err)
	w.Changes = []tfplan.ResourceChange{{Address: "terraform_data.web", Type: "terraform_data", Action: tfplan.ActionUpdate}}
	base, err := svc.Run(t.Context(), r.ID, nil)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseConverged, base.Status)
	if hold != nil {
		gate.Store(&hold)
	}
	return svc, w, l, base
}

// heldTree is the fake convergence whose resource tree waits for hold to
// be closed (nil: never waits), or for the reader's context to end.
type heldTree struct {
	workflowtest.TreeConvergence
	// hold is set once the baseline converged: its own watch must not
	// wait.
	hold *atomic.Pointer[chan struct{}]
}

func (c heldTree) ResourceTree(ctx context.Context, app appstate.AppRef) ([]appstate.AppResource, error) {
	if hold := c.hold.Load(); hold != nil {
		select {
		case <-*hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.TreeConvergence.ResourceTree(ctx, app)
}

// driver feeds the screen its own commands' messages, one at a time, as
// the program would, and a clock tick after each, so the screen polls the
// drill's record as it runs.
type driver struct {
	t      *testing.T
	m      rehearse.Model
	queue  []tea.Msg
	phases []rehearsal.Phase // the last done, as the screen showed them, in order
	// recovering is set once the screen showed the rollback running with
	// the failure detected and its answers.
	recovering bool
	quit       bool
}

func (d *driver) send(msg tea.Msg) {
	d.queue = append(d.queue, msg)
	for len(d.queue) > 0 {
		msg := d.queue[0]
		d.queue = d.queue[1:]
		if _, ok := msg.(rehearse.QuitMsg); ok {
			d.quit = true
			continue
		}
		var cmd tea.Cmd
		d.m, cmd = d.m.Update(msg)
		d.queue = append(d.queue, fixture.Run(cmd)...)
		if _, ok := msg.(screen.TickMsg); !ok {
			var poll tea.Cmd
			d.m, poll = d.m.Update(screen.TickMsg{Now: time.Now()})
			d.queue = append(d.queue, fixture.Run(poll)...)
		}
		d.notePhase()
	}
}

// key sends a key press, then drives until nothing is left to do (the
// drill or the cleanup it started has ended).
func (d *driver) key(k string) { d.send(fixture.Key(k)) }

func (d *driver) notePhase() {
	v := ansi.Strip(d.m.View())
	if strings.Contains(v, "● recovering") && strings.Contains(v, "✓ detected") && strings.Contains(v, "Next safe action") && strings.Contains(v, "rollback ") {
		d.recovering = true
	}
	for _, p := range []rehearsal.Phase{rehearsal.PhaseRecovered, rehearsal.PhaseRecovering, rehearsal.PhaseDetected, rehearsal.PhaseInjected, rehearsal.PhaseBaseline} {
		if strings.Contains(v, "✓ "+string(p)) {
			if len(d.phases) == 0 || d.phases[len(d.phases)-1] != p {
				d.phases = append(d.phases, p)
			}
			return
		}
	}
}

func (d *driver) view() string { return ansi.Strip(d.m.View()) }

func newDriver(t *testing.T, svc *workflow.Service, req rehearse.Request) *driver {
	drills, err := rehearsal.New(rehearsal.Deps{Core: svc, Pauser: breakglass.New(svc.Deps())})
	require.NoError(t, err)
	m := rehearse.New(t.Context(), drills, req, theme.New(true), rehearse.DefaultKeys())
	m.SetSize(120, 40)
	d := &driver{t: t, m: m}
	d.queue = append(d.queue, fixture.Run(m.Init())...)
	d.send(screen.TickMsg{Now: time.Now()})
	return d
}

// TestRehearsalScreenGuidesADrillToPassed drives unavailable-image from
// the preview to the verdict: nothing happens before enter, the phases
// show in order, the four answers as relcap showed them, and the outcome
// is a passed record with no error.
func TestRehearsalScreenGuidesADrillToPassed(t *testing.T) {
	t.Parallel()
	svc, w, _, base := drillWorld(t, nil)
	d := newDriver(t, svc, rehearse.Request{Env: "staging", Drills: []rehearsal.Drill{rehearsal.DrillUnavailableImage}, Timeout: 10 * time.Second})

	v := d.view()
	for _, want := range []string{"Drill 1/1: unavailable-image in staging", "exists in no registry", "Must return to", base.ID, base.Checkpoints.Digest.String()[:19],
		"Must be named      image-pull-failed", "Press enter to inject"} {
		require.Contains(t, v, want)
	}
	recs, _, _ := d.m.Outcome()
	require.Empty(t, recs, "nothing runs before enter")
	_, _, ok := d.m.Effort()
	require.False(t, ok, "no release to book the captain's time to yet")

	d.key("enter")
	require.False(t, d.m.Running())
	require.Equal(t, []rehearsal.Phase{rehearsal.PhaseBaseline, rehearsal.PhaseInjected, rehearsal.PhaseDetected, rehearsal.PhaseRecovered},
		d.phases, "every phase shown done, in order")
	require.True(t, d.recovering, "the recovery shown running, after the detection and with its four answers")
	v = d.view()
	for _, want := range []string{"✓ PASSED", "image-pull-failed (as expected) · time to detect ", "(as expected)", "The four answers, as relcap showed them",
		"Intended revision", "Actual artifact", "Controller status", "Next safe action", "convergence.image-pull-failed", "cannot pull its image", "rollback ", "back on " + base.Checkpoints.Digest.String()[:19]} {
		require.Contains(t, v, want)
	}
	recs, runErr, notRun := d.m.Outcome()
	require.NoError(t, runErr)
	require.NoError(t, notRun)
	require.Len(t, recs, 1)
	require.Equal(t, rehearsal.StatePassed, recs[0].State, recs[0].Failure)
	id, _, ok := d.m.Effort()
	require.True(t, ok)
	require.Equal(t, recs[0].RecoveryRelease, id, "the captain's time goes to the release the drill works through")
	st, err := workflowtest.Convergence{W: w}.Get(t.Context(), appstate.AppRef{})
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(st.Images[0], "@"+base.Checkpoints.Digest.String()))

	d.key("q")
	require.True(t, d.quit)
}

// TestRehearsalScreenQuitMidDrillSavesItAndCleansUp stops a drill with q
// once it is injected: the screen waits for the save, says how to resume
// or clean up, and c cleans it up from the screen, back on the baseline.
func TestRehearsalScreenQuitMidDrillSavesItAndCleansUp(t *testing.T) {
	t.Parallel()
	// The watch cannot read the resource tree (where the pull failure
	// shows) until hold is closed: the drill stays in detection until q.
	hold := make(chan struct{})
	svc, w, l, base := drillWorld(t, hold)
	d := newDriver(t, svc, rehearse.Request{Env: "staging", Drills: []rehearsal.Drill{rehearsal.DrillUnavailableImage}, Timeout: time.Minute})

	// Drive by hand: enter, then q as soon as the first event shows the
	// drill's release, before the watch can detect anything.
	m, cmd := d.m.Update(fixture.Key("enter"))
	msgs := fixture.Run(cmd)
	stopped := false
	for len(msgs) > 0 {
		msg := msgs[0]
		msgs = msgs[1:]
		m, cmd = m.Update(msg)
		msgs = append(msgs, fixture.Run(cmd)...)
		if _, _, ok := m.Effort(); ok && !stopped && m.Running() {
			m, cmd = m.Update(fixture.Key("q"))
			require.Nil(t, cmd, "q waits for the drill to save; it does not quit at once")
			stopped = true
		}
	}
	require.True(t, stopped)
	require.False(t, m.Running())
	recs, runErr, _ := m.Outcome()
	require.ErrorIs(t, runErr, context.Canceled)
	require.Len(t, recs, 1)
	id := recs[0].ID
	saved, err := l.LoadRehearsal(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StateRunning, saved.State, "saved unfinished, resumable")
	v := ansi.Strip(m.View())
	for _, want := range []string{"■ stopped at phase", "the drill is saved", "relcap rehearse --resume " + id, "relcap rehearse --cleanup " + id} {
		require.Contains(t, strings.Join(strings.Fields(v), " "), want)
	}
	require.True(t, slices.ContainsFunc(m.ShortHelp(), func(b key.Binding) bool { return b.Help().Key == "c" }), "c offered on a stopped drill")

	close(hold) // the rollback's watch may read the resource tree again

	d.m = m
	d.key("c")
	recs, runErr, _ = d.m.Outcome()
	require.NoError(t, runErr)
	require.Equal(t, rehearsal.StateAbandoned, recs[0].State)
	require.Contains(t, d.view(), "■ ABANDONED")
	saved, err = l.LoadRehearsal(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, rehearsal.StateAbandoned, saved.State)
	st, err := workflowtest.Convergence{W: w}.Get(t.Context(), appstate.AppRef{})
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(st.Images[0], "@"+base.Checkpoints.Digest.String()), "back on the baseline: %v", st.Images)
}

// TestRehearsalScreenResumesAStoppedDrill is relcap rehearse --resume ID
// at a terminal: the saved drill shown at its phase, enter continues it
// to passed.
func TestRehearsalScreenResumesAStoppedDrill(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	svc, w, _, base := drillWorld(t, hold)
	d := newDriver(t, svc, rehearse.Request{Env: "staging", Drills: []rehearsal.Drill{rehearsal.DrillUnavailableImage}, Timeout: time.Minute})
	m, cmd := d.m.Update(fixture.Key("enter"))
	msgs := fixture.Run(cmd)
	for len(msgs) > 0 {
		msg := msgs[0]
		msgs = msgs[1:]
		m, cmd = m.Update(msg)
		msgs = append(msgs, fixture.Run(cmd)...)
		if _, _, ok := m.Effort(); ok && m.Running() {
			m, _ = m.Update(fixture.Key("q"))
		}
	}
	recs, _, _ := m.Outcome()
	require.Len(t, recs, 1)
	id := recs[0].ID
	close(hold)

	r := newDriver(t, svc, rehearse.Request{Resume: id})
	v := r.view()
	for _, want := range []string{"unavailable-image in staging", id, "Saved at phase", "Press enter to resume", base.ID} {
		require.Contains(t, v, want)
	}
	require.True(t, slices.ContainsFunc(r.m.ShortHelp(), func(b key.Binding) bool { return b.Help().Desc == "resume the drill" }))
	r.key("enter")
	recs, runErr, _ := r.m.Outcome()
	require.NoError(t, runErr)
	require.Equal(t, rehearsal.StatePassed, recs[0].State, recs[0].Failure)
	require.Contains(t, r.view(), "✓ PASSED")
	st, err := workflowtest.Convergence{W: w}.Get(t.Context(), appstate.AppRef{})
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(st.Images[0], "@"+base.Checkpoints.Digest.String()))
}
