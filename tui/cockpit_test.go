package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

// cockpit is a root model over a fresh fake environment, with a fixed
// clock so the status bar's effort timer is deterministic.
func cockpit(t *testing.T, pol fixture.Policy, w, h int) (Model, *fixture.Env) {
	t.Helper()
	env := fixture.New(pol)
	svc, _, err := env.Service("alice")
	require.NoError(t, err)
	_, err = env.StartFixed(t.Context(), svc)
	require.NoError(t, err)
	m := New(t.Context(), svc, env.Reports(), fixture.ReleaseID)
	m.now = func() time.Time { return fixture.T0 }
	m = step(t, m, tea.WindowSizeMsg{Width: w, Height: h})
	return m, env
}

// step sends one message and returns the model.
func step(t *testing.T, m Model, msg tea.Msg) Model {
	t.Helper()
	nm, _ := m.Update(msg)
	return nm.(Model)
}

// drive sends msg and runs every command that follows, synchronously,
// until the cockpit has nothing more to do: the run's stream is read to
// its end, as the program would. Ticks are never started here.
func drive(t *testing.T, m Model, msg tea.Msg) Model {
	t.Helper()
	queue := []tea.Msg{msg}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		nm, cmd := m.Update(next)
		m = nm.(Model)
		queue = append(queue, fixture.Run(cmd)...)
	}
	return m
}

// open loads the release and lets the first run go as far as it can.
func open(t *testing.T, m Model) Model {
	t.Helper()
	msgs := fixture.Run(m.loadRelease())
	require.Len(t, msgs, 1)
	return drive(t, m, msgs[0])
}

func TestCockpitStopsForApprovalAndShowsWhatIsNeeded(t *testing.T) {
	t.Parallel()
	m, _ := cockpit(t, fixture.Policy{PlanApprovals: 1, DistinctFromAuthor: true}, 80, 24)
	m = open(t, m)
	require.ErrorIs(t, m.Err(), fault.ErrApprovalRequired)
	require.Equal(t, scrPlan, m.active, "the cockpit shows the step that waits")
	require.False(t, m.running)

	m = step(t, m, fixtureKey("m"))
	require.Equal(t, scrHome, m.active)
	v := strings.Join(strings.Fields(ansi.Strip(m.render())), " ")
	require.Contains(t, v, "Needs approval")
	require.Contains(t, v, "relcap approve --plan")
}

func fixtureKey(k string) tea.KeyPressMsg { return fixture.Key(k) }

func TestCockpitGolden(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, scr := range []string{"m", "1", "2", "3", "4"} {
			t.Run(fmt.Sprintf("%dx%d/screen-%s", size[0], size[1], scr), func(t *testing.T) {
				t.Parallel()
				m, _ := cockpit(t, fixture.Policy{PlanApprovals: 1, DistinctFromAuthor: true}, size[0], size[1])
				m = open(t, m)
				m.notice = "" // notices carry the run's error text; tested elsewhere
				m = step(t, m, fixtureKey(scr))
				v := m.render()
				require.Equal(t, size[1], strings.Count(v, "\n")+1)
				golden.RequireEqual(t, v)
			})
		}
	}
}

func TestCockpitGoldenConverged(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			m, _ := cockpit(t, fixture.Policy{}, size[0], size[1])
			m = open(t, m)
			require.NoError(t, m.Err())
			require.Equal(t, scrPlan, m.active, "a plan with changes waits for review")
			m = drive(t, m, fixtureKey("enter"))
			require.True(t, m.plan.Capturing(), "the plan replaces a database: confirm first")
			m = drive(t, m, fixtureKey("y"))
			require.Equal(t, workflow.ReleaseConverged, m.Release().Status)
			m.notice = ""
			t.Run("map", func(t *testing.T) { golden.RequireEqual(t, m.render()) })
			m = step(t, m, fixtureKey("4"))
			t.Run("convergence", func(t *testing.T) { golden.RequireEqual(t, m.render()) })
			m = step(t, m, fixtureKey("3"))
			t.Run("promotion", func(t *testing.T) { golden.RequireEqual(t, m.render()) })
		})
	}
}

func TestCockpitFullHelpToggles(t *testing.T) {
	t.Parallel()
	m, _ := cockpit(t, fixture.Policy{PlanApprovals: 1}, 80, 24)
	m = open(t, m)
	short := m.render()
	m = step(t, m, fixtureKey("?"))
	full := ansi.Strip(m.render())
	require.NotEqual(t, ansi.Strip(short), full)
	require.Contains(t, full, "page down")
	require.Equal(t, 24, strings.Count(full, "\n")+1, "the body shrinks to make room")
}

func TestCockpitQuitWhileRunningWaitsForTheRunToSave(t *testing.T) {
	t.Parallel()
	m, env := cockpit(t, fixture.Policy{}, 80, 24)
	// The world blocks the plan until the test lets it go, so the run is
	// mid-step when the captain quits.
	release := make(chan struct{})
	env.World.Gate = func() error { <-release; return nil }
	msgs := fixture.Run(m.loadRelease())
	nm, cmd := m.Update(msgs[0])
	m = nm.(Model)
	require.True(t, m.running)
	started := fixture.Run(cmd) // runStartedMsg (and a touch)
	var stream tea.Msg
	for _, s := range started {
		if _, ok := s.(runStartedMsg); ok {
			stream = s
		}
	}
	require.NotNil(t, stream)
	m = step(t, m, stream)

	nm, cmd = m.Update(fixtureKey("q"))
	m = nm.(Model)
	require.True(t, m.quitting)
	require.True(t, m.running, "the cockpit waits for the run to stop")
	fixture.Run(cmd)
	close(release)

	// Drain the stream to its outcome: the run stops at the cancelled
	// context and saves the release.
	s := stream.(runStartedMsg).stream
	var last tea.Msg
	for {
		msg := waitNext(s)()
		if fin, ok := msg.(runFinishedMsg); ok {
			last = fin
			break
		}
	}
	nm, cmd = m.Update(last)
	m = nm.(Model)
	require.False(t, m.running)
	require.NoError(t, m.Err(), "an interruption on purpose is not an error")
	require.NotNil(t, cmd, "then it flushes effort and quits")

	r, err := env.Ledger.LoadRelease(context.Background(), fixture.ReleaseID)
	require.NoError(t, err)
	require.NotEqual(t, workflow.ReleaseConverged, r.Status)
	_, ok := r.Current()
	require.True(t, ok, "the release is resumable")
}

func fixtureWindow(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

// TestCockpitEffortFollowsInputFocusAndMouse: key presses, clicks and the
// wheel are inputs; focus counts as engagement; time with the terminal
// unfocused counts nothing; the status bar and the converged summary say
// the same number, which is what the ledger holds.
func TestCockpitEffortFollowsInputFocusAndMouse(t *testing.T) {
	t.Parallel()
	m, env := cockpit(t, fixture.Policy{}, 120, 40)
	m = open(t, m) // loading the release is the first sign of engagement
	require.Equal(t, scrPlan, m.active)

	// The status bar and every screen show the figure of the last tick
	// (one snapshot per frame), so each check ticks first.
	tick := func(m Model) Model { return step(t, m, tickMsg{now: env.Clock.Now()}) }
	env.Clock.Advance(40 * time.Second) // reading the plan
	m = tick(step(t, m, tea.MouseWheelMsg{Button: tea.MouseWheelDown}))
	require.Equal(t, 40*time.Second, m.live.Active)
	env.Clock.Advance(5 * time.Second)
	m = tick(step(t, m, tea.BlurMsg{})) // to the chat window
	require.Equal(t, 45*time.Second, m.live.Active)
	require.True(t, m.live.Idle)
	require.Contains(t, ansi.Strip(m.render()), "effort 45s (idle)")
	env.Clock.Advance(10 * time.Minute) // away: counts nothing
	m = tick(step(t, m, tea.FocusMsg{}))
	require.False(t, m.live.Idle)
	require.Equal(t, 45*time.Second, m.live.Active, "unfocused time is nobody's effort")
	env.Clock.Advance(15 * time.Second)
	m = tick(step(t, m, tea.MouseClickMsg{Button: tea.MouseLeft}))
	require.Equal(t, time.Minute, m.live.Active)
	m = drive(t, m, fixtureKey("enter"))
	require.True(t, m.plan.Capturing())
	env.Clock.Advance(5 * time.Second)
	m = tick(drive(t, m, fixtureKey("y")))
	require.Equal(t, workflow.ReleaseConverged, m.Release().Status)
	require.Equal(t, time.Minute+5*time.Second, m.live.Active)
	require.Equal(t, 4, m.live.Inputs, "wheel, click, enter, y; focus is not an input")

	v := ansi.Strip(m.render())
	require.Contains(t, v, "effort 1m05s")
	require.Contains(t, v, "effort: active 1m05s", "the summary says what the status bar says")
	entries, err := env.Ledger.Effort(t.Context(), fixture.ReleaseID)
	require.NoError(t, err)
	byStep, inputs := map[string]time.Duration{}, 0
	for _, e := range entries {
		if e.Kind == "active" {
			require.Equal(t, "alice", e.Person)
			byStep[e.Step] += e.Duration
			inputs += e.Inputs
		}
	}
	require.Equal(t, 4, inputs, "the ledger counts the same inputs")
	require.Equal(t, time.Minute+5*time.Second, byStep["plan-review"], "reading the plan and confirming its apply are the plan review's: %v", byStep)
	require.Zero(t, byStep["apply"]+byStep["promotion"]+byStep["convergence"], "%v", byStep)
}

// blockedOnBob is alice's w×h cockpit stopped at plan review for another
// person's approval, its environment, and the Service of bob, who may
// give it.
func blockedOnBob(t *testing.T, w, h int) (Model, *fixture.Env, *workflow.Service) {
	t.Helper()
	m, env := cockpit(t, fixture.Policy{PlanApprovals: 1, DistinctFromAuthor: true}, w, h)
	m = open(t, m)
	require.ErrorIs(t, m.Err(), fault.ErrApprovalRequired)
	bob, _, err := env.Service("bob")
	require.NoError(t, err)
	return m, env, bob
}

// TestReviewScreenApprovesAndBooksTheApproversTime: bob reviews the plan
// alice's release waits on, from his own process: the screen never runs
// the release, offers no apply, approves (as bob) on a, and his reading
// time is the approver's effort on plan review.
func TestReviewScreenApprovesAndBooksTheApproversTime(t *testing.T) {
	t.Parallel()
	_, env, bob := blockedOnBob(t, 120, 40)
	r := New(t.Context(), bob, nil, fixture.ReleaseID).asReview(ReviewPlan)
	r.now = func() time.Time { return fixture.T0 }
	r = step(t, r, tea.WindowSizeMsg{Width: 120, Height: 40})
	r = open(t, r)
	require.False(t, r.running, "a review never runs the release")
	v := ansi.Strip(r.render())
	require.Contains(t, v, "a approve as bob (signed)")
	require.NotContains(t, v, "enter apply")
	require.Contains(t, v, "review as bob")

	env.Clock.Advance(90 * time.Second) // reading the plan
	r = step(t, r, fixtureKey("down"))
	env.Clock.Advance(20 * time.Second)
	r = drive(t, r, fixtureKey("a"))
	r = drive(t, r, fixtureKey("enter")) // no apply from a review
	require.False(t, r.running)
	check, err := bob.Records().PlanApprovals(t.Context(), mustPlan(t, bob, r.Release().Checkpoints.Fingerprint))
	require.NoError(t, err)
	require.True(t, check.Satisfied(), "bob's approval counts")
	rel, err := env.Ledger.LoadRelease(t.Context(), fixture.ReleaseID)
	require.NoError(t, err)
	require.False(t, rel.Step(workflow.StepApply).Status.Done(), "nothing applied from the review")

	_ = step(t, r, fixtureKey("q"))
	require.NoError(t, bob.FlushEffort(t.Context(), fixture.ReleaseID)) // as Run does when the program ends
	entries, err := env.Ledger.Effort(t.Context(), fixture.ReleaseID)
	require.NoError(t, err)
	var bobs time.Duration
	for _, e := range entries {
		if e.Person == "bob" && e.Kind == "active" {
			require.Equal(t, "approver", string(e.Role))
			require.Equal(t, "plan-review", e.Step)
			bobs += e.Duration
		}
	}
	require.Equal(t, 110*time.Second, bobs)
}

func mustPlan(t *testing.T, svc *workflow.Service, fp string) tfplan.Summary {
	t.Helper()
	p, err := svc.Records().Plan(t.Context(), fp)
	require.NoError(t, err)
	return p
}

// TestReviewOfAPinnedChangeOffersTheApproveKey: bob's review of the
// promotion prod's release waits on shows the pin and a approve, although
// no run of his says what the release waits for.
func TestReviewOfAPinnedChangeOffersTheApproveKey(t *testing.T) {
	t.Parallel()
	m, env := cockpit(t, fixture.Policy{PromotionApprovals: 1, DistinctFromAuthor: true}, 120, 40)
	m = open(t, m)
	m = drive(t, m, fixtureKey("enter"))
	m = drive(t, m, fixtureKey("y"))
	require.ErrorIs(t, m.Err(), fault.ErrApprovalRequired, "the pinned change waits for another person")

	bob, _, err := env.Service("bob")
	require.NoError(t, err)
	r := New(t.Context(), bob, nil, fixture.ReleaseID).asReview(ReviewPromotion)
	r.now = func() time.Time { return fixture.T0 }
	r = step(t, r, tea.WindowSizeMsg{Width: 120, Height: 40})
	r = open(t, r)
	v := ansi.Strip(r.render())
	require.Contains(t, v, "a approve as bob", v)
	r = drive(t, r, fixtureKey("a"))
	rel, err := bob.Records().Release(t.Context(), fixture.ReleaseID)
	require.NoError(t, err)
	check, ok, err := bob.Records().AwaitedApprovals(t.Context(), rel)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, check.Satisfied(), "bob's approval of the pinned change counts")
	require.Contains(t, ansi.Strip(r.render()), "approved the promotion as bob")
}

// TestCockpitSaysWhoApprovedWhenItStopsForTheCaptainsReview: a teammate
// approves the blocked plan elsewhere; the run re-checks plan review at
// once and stops for the captain, whose notice still says who approved
// (the "continuing" notice it replaced lasted only that re-check).
func TestCockpitSaysWhoApprovedWhenItStopsForTheCaptainsReview(t *testing.T) {
	t.Parallel()
	m, _, bob := blockedOnBob(t, 80, 24)
	_, _, err := bob.ApprovePlan(t.Context(), m.Release().Checkpoints.Fingerprint, "looks right")
	require.NoError(t, err)
	// What awaitApprovals reports once the ledger's change feed fires (the
	// fake ledger has none).
	r, err := m.svc.Records().Release(t.Context(), fixture.ReleaseID)
	require.NoError(t, err)
	check, waiting, err := m.svc.Records().AwaitedApprovals(t.Context(), r)
	require.NoError(t, err)
	require.True(t, waiting && check.Satisfied())
	m = drive(t, m, approvalsMsg{gen: m.gen, release: r, check: check})

	require.False(t, m.running, "the run stopped for the captain's review")
	require.Equal(t, scrPlan, m.active)
	require.Equal(t, "approved by bob: review the plan, then press enter to apply it", m.notice)
	require.Contains(t, ansi.Strip(m.render()), "approved by bob: review the plan")
}

// TestCockpitFailedApplyNamesTheNextSafeActionAndRetryReviewsAgain: an
// apply that fails part-way shows its next safe action on the plan
// screen, the map and the notice; r plans again and stops for the
// captain's review of the new plan before anything else is applied.
func TestCockpitFailedApplyNamesTheNextSafeActionAndRetryReviewsAgain(t *testing.T) {
	t.Parallel()
	m, env := cockpit(t, fixture.Policy{}, 120, 30)
	left := env.World.Changes
	env.World.Interrupt = func(effect string) error {
		if effect == "apply" {
			return errors.New("exit status 1\n\nError: local-exec provisioner error")
		}
		return nil
	}
	m = open(t, m)
	m = drive(t, m, fixtureKey("enter"))
	m = drive(t, m, fixtureKey("y"))
	var failed *workflow.ApplyFailedError
	require.ErrorAs(t, m.Err(), &failed)
	oldFP := failed.Fingerprint
	require.Equal(t, scrPlan, m.active)
	require.Equal(t, "failed: apply of plan "+workflow.ShortHash(oldFP)+" failed; next safe action: "+failed.NextAction+" (r plans again)", m.notice)
	flat := func(m Model) string { return strings.Join(strings.Fields(ansi.Strip(m.render())), " ") }
	require.Contains(t, flat(m), "✗ apply of plan "+workflow.ShortHash(oldFP)+" failed; next safe action:")
	require.Contains(t, flat(m), "· r plans again")
	require.NotContains(t, flat(m), "enter apply", "no apply of a plan whose apply failed")

	home := step(t, m, fixtureKey("m"))
	require.Contains(t, flat(home), "Apply failed: act on its next safe action above, then r plans again")
	require.Contains(t, flat(home), "local-exec provisioner error", "Terraform's error is on the map")

	env.World.Interrupt, env.World.Changes = nil, left
	m = drive(t, home, fixtureKey("r"))
	require.NoError(t, m.Err())
	require.False(t, m.running, "stopped for the captain's review")
	require.Equal(t, scrPlan, m.active)
	require.NotEqual(t, oldFP, m.Release().Checkpoints.Fingerprint, "the state moved: a new plan")
	require.Contains(t, flat(m), "enter apply (asks to confirm)")
	require.Equal(t, 1, env.World.Applies, "nothing applied again before the review")
}
