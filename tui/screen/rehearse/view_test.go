package rehearse

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/rehearsal"
)

// The golden views feed the screen the messages its commands would
// return, with fixed records, so IDs and times do not vary; the drill
// itself is driven on the fakes in rehearse_test.go.

var (
	goldenBase = rehearsal.Baseline{ReleaseID: "web-staging-20261130-c0ffee",
		Digest: must(image.ParseDigest("sha256:" + strings.Repeat("7e", 32))), EnvCommit: strings.Repeat("3a1009bc", 5)}
	drillDigest = "sha256:" + strings.Repeat("de", 32)
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// detected is the record of an unavailable-image drill once the watch
// named its failure, with the four answers as the Service words them.
func detected() *rehearsal.Rehearsal {
	t0 := fixture.T0
	return &rehearsal.Rehearsal{ID: "rh-web-staging-20261130-d1d1d1", App: "web", Env: "staging", Drill: rehearsal.DrillUnavailableImage, Captain: "alice",
		State: rehearsal.StateRunning, Phase: rehearsal.PhaseDetected, Baseline: goldenBase, DrillRelease: "web-staging-20261130-d7111e",
		Expected: appstate.VerdictImagePullFailed, Detected: appstate.VerdictImagePullFailed,
		IntendedRevision: workflow.Answer{Value: "9f2c41d0", Shown: "intended revision: 9f2c41d0 (release web-staging-20261130-d7111e pins " + drillDigest + ")"},
		ActualArtifact:   workflow.Answer{Shown: "actual artifact: registry.test/staging/web@" + drillDigest + " — pod web-6d4 cannot pull its image: ErrImagePull"},
		ControllerStatus: workflow.Answer{Shown: "controller status: convergence.image-pull-failed: sync Synced at 9f2c41d0, health Progressing, operation Succeeded"},
		NextSafeAction:   workflow.Answer{Shown: "next safe action: roll back to the last good release (relcap rollback --env staging), then check the registry"},
		StartedAt:        t0, InjectedAt: t0.Add(4 * time.Second), DetectedAt: t0.Add(19 * time.Second), PhaseTimeout: 4 * time.Minute}
}

func passed() *rehearsal.Rehearsal {
	rh := detected()
	rh.Phase, rh.State = rehearsal.PhaseRecovered, rehearsal.StatePassed
	rh.RecoveryRelease = "web-staging-20261130-2ecbac"
	rh.RecoveredAt, rh.FinishedAt = fixture.T0.Add(51*time.Second), fixture.T0.Add(52*time.Second)
	return rh
}

// ready is the screen showing the drill's preview, before enter.
func ready(t *testing.T, p rehearsal.Preview) Model {
	t.Helper()
	m := New(context.Background(), nil, Request{Env: p.Env, Drills: []rehearsal.Drill{p.Drill}}, theme.New(true), DefaultKeys())
	m.SetSize(80, 21)
	m, _ = m.Update(screen.TickMsg{Now: fixture.T0})
	m, _ = m.Update(previewMsg{idx: 0, preview: &p})
	require.Equal(t, stReady, m.stage)
	return m
}

func staging() rehearsal.Preview {
	return rehearsal.Preview{Env: "staging", Drill: rehearsal.DrillUnavailableImage, Baseline: goldenBase, Expected: appstate.VerdictImagePullFailed, PhaseTimeout: 4 * time.Minute}
}

// sizes are the terminal sizes the goldens are taken at (STYLE §8), less
// the root's header, status and help lines.
var sizes = [][2]int{{80, 24}, {120, 40}}

func eachSize(t *testing.T, m Model, check func(t *testing.T, v string)) {
	for _, sz := range sizes {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m.SetSize(sz[0], sz[1]-3)
			v := m.View()
			if check != nil {
				check(t, ansi.Strip(v))
			}
			golden.RequireEqual(t, v)
		})
	}
}

func TestViewBeforeTheDrill(t *testing.T) {
	eachSize(t, ready(t, staging()), func(t *testing.T, v string) {
		for _, want := range []string{"Drill 1/1: unavailable-image in staging", "Must return to", "web-staging-20261130-c0ffee", "sha256:7e7e7e7e7e7e", "revision 3a1009bc3a10",
			"image-pull-failed", "Press enter to inject"} {
			require.Contains(t, v, want)
		}
	})
}

func TestViewProductionOverrideInRed(t *testing.T) {
	p := staging()
	p.Env, p.Production, p.Override = "prod", true, "quarterly drill, change CHG-1042"
	m := ready(t, p)
	m.SetSize(80, 21)
	v := m.View()
	require.Contains(t, v, m.Theme.Err.Render(fmt.Sprintf("%-*s", labelWidth, "PRODUCTION")+"--i-know: quarterly drill, change CHG-1042"))
	golden.RequireEqual(t, v)
}

// running is the screen while the drill recovers: detected, the answers
// shown, the rollback running.
func running(t *testing.T) Model {
	m := ready(t, staging())
	m, cmd := m.Update(fixture.Key("enter"))
	require.NotNil(t, cmd, "enter starts the drill")
	require.Equal(t, stRunning, m.stage)
	rh := detected()
	rh.Phase, rh.RecoveryRelease = rehearsal.PhaseRecovering, "web-staging-20261130-2ecbac"
	for _, e := range []workflow.Event{
		{Kind: workflow.EventStepStarted, ReleaseID: rh.RecoveryRelease, Step: workflow.StepPromotion, Message: "promotion started"},
		{Kind: workflow.EventStepFinished, ReleaseID: rh.RecoveryRelease, Step: workflow.StepPromotion, Message: "pinned " + goldenBase.Digest.Short() + " as commit 51c0ffe"},
		{Kind: workflow.EventStepStarted, ReleaseID: rh.RecoveryRelease, Step: workflow.StepConvergence, Message: "watching web-staging converge on 51c0ffe"},
	} {
		m, _ = m.Update(eventMsg{gen: m.gen, event: e, rh: rh})
	}
	m, _ = m.Update(screen.TickMsg{Now: fixture.T0.Add(37 * time.Second)})
	return m
}

func TestViewWhileRecovering(t *testing.T) {
	eachSize(t, running(t), func(t *testing.T, v string) {
		for _, want := range []string{"elapsed 37s", "✓ detected", "image-pull-failed (as expected) · time to detect 15s", "● recovering", "rollback web-staging-20261130-2ecbac",
			"Intended revision", "Actual artifact", "Controller status", "Next safe action", "watching web-staging converge"} {
			require.Contains(t, v, want)
		}
	})
	id, step, ok := running(t).Effort()
	require.True(t, ok)
	require.Equal(t, "web-staging-20261130-2ecbac", id)
	require.Equal(t, workflow.StepConvergence, step)
}

func TestViewPassed(t *testing.T) {
	m := running(t)
	m, _ = m.Update(finishedMsg{gen: m.gen, rh: passed()})
	eachSize(t, m, func(t *testing.T, v string) {
		for _, want := range []string{"elapsed 52s", "✓ recovered", "back on sha256:7e7e7e7e7e7e · time to recover 32s", "✓ PASSED"} {
			require.Contains(t, v, want)
		}
		require.NotContains(t, v, "watching", "the live tail is gone once it ended")
	})
	recs, runErr, notRun := m.Outcome()
	require.NoError(t, runErr)
	require.NoError(t, notRun)
	require.Equal(t, rehearsal.StatePassed, recs[0].State)
}

func TestViewStoppedSaysHowToResumeOrCleanUp(t *testing.T) {
	m := running(t)
	m, cmd := m.Update(fixture.Key("q"))
	require.Nil(t, cmd, "q waits for the drill to save")
	require.Equal(t, stStopping, m.stage)
	require.Contains(t, ansi.Strip(m.View()), "stopping safely")
	rh := detected()
	rh.Phase = rehearsal.PhaseRecovering
	m, _ = m.Update(finishedMsg{gen: m.gen, rh: rh, err: fmt.Errorf("rehearsal %s: %w", rh.ID, context.Canceled)})
	m.SetSize(80, 21)
	v := m.View()
	flat := strings.Join(strings.Fields(ansi.Strip(v)), " ")
	for _, want := range []string{"■ recovering", "■ stopped at phase recovering; the drill is saved.", "relcap rehearse --resume " + rh.ID, "relcap rehearse --cleanup " + rh.ID, "(or press c)"} {
		require.Contains(t, flat, want)
	}
	golden.RequireEqual(t, v)
	require.True(t, m.canCleanup())
}

// TestAllGoesOnPastADrillNotConfigured is --all: a drill that cannot run
// here is said, and enter goes on to the next; refused ends the run.
func TestAllGoesOnPastADrillNotConfigured(t *testing.T) {
	m := New(context.Background(), nil, Request{Env: "staging", Drills: []rehearsal.Drill{rehearsal.DrillFailedApply, rehearsal.DrillUnavailableImage}}, theme.New(true), DefaultKeys())
	m.SetSize(80, 21)
	m, _ = m.Update(previewMsg{idx: 0, err: fmt.Errorf("%w: the failed-apply drill is not built yet", fault.ErrUsage)})
	require.Contains(t, ansi.Strip(m.View()), "not run here: invalid input: the failed-apply drill is not built yet")
	m, cmd := m.Update(fixture.Key("enter"))
	require.NotNil(t, cmd, "enter reads the next drill's preview")
	require.Equal(t, 1, m.cur)
	p := staging()
	m, _ = m.Update(previewMsg{idx: 1, preview: &p})
	require.Contains(t, ansi.Strip(m.View()), "Drill 2/2: unavailable-image")
	_, _, notRun := m.Outcome()
	require.ErrorIs(t, notRun, fault.ErrUsage)

	m = New(context.Background(), nil, Request{Env: "prod", Drills: rehearsal.AllDrills}, theme.New(true), DefaultKeys())
	m.SetSize(80, 21)
	m, _ = m.Update(previewMsg{idx: 0, err: fmt.Errorf("%w: prod is a production environment", fault.ErrBlocked)})
	require.Len(t, m.items, 1, "refused: no further drill")
	_, runErr, _ := m.Outcome()
	require.ErrorIs(t, runErr, fault.ErrBlocked)
	require.Contains(t, ansi.Strip(m.View()), "cannot run: blocked")
}
