package rehearse

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/rehearsal"
)

// what says what a drill does, in the captain's words.
func what(d rehearsal.Drill) string {
	switch d {
	case rehearsal.DrillUnavailableImage:
		return "pins a digest that exists in no registry through the promotion path (--force-unverified); the pods cannot pull it"
	case rehearsal.DrillFailedReadiness:
		return "promotes rehearsal.unready_image, a build whose pods never become ready"
	case rehearsal.DrillInterruptedReconc:
		return "stops reconciliation mid-rollout (rehearsal.interrupt, else a break-glass pause), then resumes it"
	case rehearsal.DrillFailedApply:
		return "plans and applies, on a scratch copy of the Terraform root seeded from its state, a resource whose local-exec fails; the real state is never written"
	case rehearsal.DrillStateRestore:
		return "backs up the Terraform state (state pull), restores it into a scratch copy of the root, and proves it with a plan that changes nothing against the real resources; the real state is never written"
	}
	return string(d)
}

// phases in the order a drill goes through them.
var phases = []rehearsal.Phase{rehearsal.PhaseBaseline, rehearsal.PhaseInjected, rehearsal.PhaseDetected, rehearsal.PhaseRecovering, rehearsal.PhaseRecovered}

func phaseIndex(p rehearsal.Phase) int {
	for i, q := range phases {
		if q == p {
			return i
		}
	}
	return -1
}

// View renders the current drill, exactly w×h. When the full view does
// not fit, it is laid out compactly (one line per answer, the latest
// event only), so the phases and the verdict always show.
func (m Model) View() string {
	if !m.Sized() {
		return ""
	}
	if len(m.items) == 0 {
		return m.Fit("no drill to run")
	}
	b := m.lines(layout{})
	if len(b) > m.Height {
		// Compact, then give what room is left to the answers in full,
		// the most useful first: clipped, they are what the drill is for.
		for wrapped := len(answerRank); wrapped >= 0; wrapped-- {
			if b = m.lines(layout{compact: true, wrapped: wrapped}); len(b) <= m.Height {
				break
			}
		}
	}
	return m.Fit(strings.Join(b, "\n"))
}

// layout is how lines lays the drill out.
type layout struct {
	// compact puts one line per field and the latest event only.
	compact bool
	// wrapped is how many of the four answers a compact layout still
	// shows in full, by answerRank.
	wrapped int
}

// answerRank orders the four answers by what a captain reads first when
// the screen is short: what to do, then what the controller says, then
// what runs, then what was intended.
var answerRank = map[string]int{"Next safe action": 0, "Controller status": 1, "Actual artifact": 2, "Intended revision": 3}

func (m Model) lines(lay layout) []string {
	compact := lay.compact
	th := m.Theme
	it := m.items[m.cur]
	var b []string
	add := func(s ...string) { b = append(b, s...) }
	text := func(name, v string) []string {
		if compact {
			return []string{m.Theme.Label.Render(fmt.Sprintf("%-*s", labelWidth, name)) + v}
		}
		return m.labelled(name, v)
	}

	env := m.req.Env
	if it.rh != nil && it.rh.Env != "" {
		env = it.rh.Env
	}
	title := fmt.Sprintf("Drill %d/%d: %s in %s", m.cur+1, len(m.items), it.drill, env)
	if it.drill == "" {
		title = "Rehearsal " + m.req.Resume
	}
	if el := m.elapsed(it); el != "" {
		title += th.Muted.Render("  · elapsed " + el)
	}
	add(th.Title.Render(title))
	if it.rh != nil && it.rh.ID != "" {
		add(text("Rehearsal", it.rh.ID)...)
	}
	if it.drill != "" {
		add(text("What it does", what(it.drill))...)
	}
	base, expected := m.baseline(it)
	if it.drill.OnScratchCopy() {
		state := "the Terraform state as it is when the drill starts (copied into the scratch root)"
		if it.rh != nil && it.rh.Baseline.Revision != "" || it.rh != nil && len(it.rh.Baseline.Resources) > 0 {
			state = fmt.Sprintf("the scratch state's %d resource(s) as copied, at revision %s", len(it.rh.Baseline.Resources), workflow.ShortHash(it.rh.Baseline.Revision))
		}
		add(m.labelled("Must return to", state)...)
	} else if base.ReleaseID != "" {
		add(m.labelled("Must return to", fmt.Sprintf("release %s · %s · revision %s", base.ReleaseID, screen.Clip(base.Digest.String(), 12), workflow.ShortHash(base.EnvCommit)))...)
	}
	if expected != "" {
		add(text("Must be named", string(expected))...)
	}
	if reason := m.override(it); reason != "" {
		add(th.Err.Render(fmt.Sprintf("%-*s", labelWidth, "PRODUCTION") + "--i-know: " + reason))
	}

	switch {
	case m.stage == stLoading:
		add("", th.Muted.Render("reading the environment's baseline…"))
	case it.notRun:
		add("", th.Warn.Render("not run here: ")+firstLine(it.err.Error()))
	case it.err != nil && it.rh == nil:
		add("", th.Err.Render("cannot run: ")+firstLine(it.err.Error()))
	case m.stage == stReady && m.req.Resume != "":
		add("", fmt.Sprintf("Saved at phase %s. Press %s to resume it from there.", it.rh.Phase, th.Key.Render("enter")))
	case m.stage == stReady:
		add("", fmt.Sprintf("Nothing is broken yet. Press %s to inject the failure.", th.Key.Render("enter")))
	}
	if it.rh != nil && m.stage != stLoading {
		if !compact {
			add("")
		}
		add(m.phaseLines(it)...)
		add(m.answerLines(it, func(name, v string) []string {
			if compact && answerRank[name] < lay.wrapped {
				return m.labelled(name, v)
			}
			return text(name, v)
		})...)
		add(m.tail(it, compact)...)
	}
	add(m.verdict(it)...)
	return b
}

// labelled is text after a label, wrapped under itself.
func (m Model) labelled(name, text string) []string {
	lines := screen.Wrap(text, max(20, m.Width-labelWidth))
	for i := range lines {
		if i == 0 {
			lines[i] = m.Theme.Label.Render(fmt.Sprintf("%-*s", labelWidth, name)) + lines[i]
		} else {
			lines[i] = strings.Repeat(" ", labelWidth) + lines[i]
		}
	}
	return lines
}

// labelWidth is the column the values start in.
const labelWidth = 19

func (m Model) baseline(it item) (rehearsal.Baseline, appstate.VerdictKind) {
	if it.rh != nil && it.rh.Baseline.ReleaseID != "" {
		return it.rh.Baseline, it.rh.Expected
	}
	if it.preview != nil {
		return it.preview.Baseline, it.preview.Expected
	}
	return rehearsal.Baseline{}, ""
}

func (m Model) override(it item) string {
	if it.rh != nil && it.rh.ProductionOverride != "" {
		return it.rh.ProductionOverride
	}
	if it.preview != nil && it.preview.Production {
		return it.preview.Override
	}
	return ""
}

// elapsed is the drill's time so far: the record's, once it ended, else
// the screen's clock since the drill started.
func (m Model) elapsed(it item) string {
	switch {
	case it.rh != nil && !it.rh.StartedAt.IsZero() && !it.rh.FinishedAt.IsZero():
		return screen.Duration(it.rh.FinishedAt.Sub(it.rh.StartedAt))
	case m.Running() && !m.startedAt.IsZero() && !m.Now.IsZero():
		return screen.Duration(m.Now.Sub(m.startedAt))
	}
	return ""
}

func (m Model) phaseLines(it item) []string {
	th, rh := m.Theme, it.rh
	reached := phaseIndex(rh.Phase)
	at := func(t time.Time) string {
		if t.IsZero() {
			return "        "
		}
		return t.UTC().Format("15:04:05")
	}
	out := []string{th.Title.Render("Phases")}
	for i, p := range phases {
		// Phase is how far the drill got: recovering is reached when the
		// rollback starts, and runs until recovered.
		icon, style := "○", th.Step.Pending
		inProgress := p == rehearsal.PhaseRecovering && i == reached || i == reached+1 && reached != phaseIndex(rehearsal.PhaseRecovering)
		switch {
		case inProgress && m.Running():
			icon, style = "●", th.Step.Running
		case inProgress && i == reached:
			icon, style = "■", th.Step.Blocked
		case i <= reached:
			icon, style = "✓", th.Step.Succeeded
		}
		detail, when := "", time.Time{}
		switch p {
		case rehearsal.PhaseBaseline:
			when = rh.StartedAt
		case rehearsal.PhaseInjected:
			when = rh.InjectedAt
			if rh.DrillRelease != "" {
				detail = "release " + rh.DrillRelease
			}
			if p := rh.Restore; p != nil {
				detail = fmt.Sprintf("backed up in %s · restored in %s", screen.Duration(p.BackupTook), screen.Duration(p.RestoreTook))
			}
		case rehearsal.PhaseDetected:
			when = rh.DetectedAt
			if p := rh.Restore; p != nil && p.Plan != "" {
				proof := "not proven"
				if rh.Detected == rehearsal.VerdictStateRestored {
					proof = "proven"
				}
				detail = fmt.Sprintf("%s by plan %s in %s", proof, workflow.ShortHash(p.Plan), screen.Duration(p.ProveTook))
			}
			if d, ok := rh.TimeToDetect(); ok {
				named := string(rh.Detected)
				if named == "" {
					named = "nothing"
				}
				// Whether the failure was named as the drill expects: the
				// second of the three things a drill must prove.
				if rh.Detected == rh.Expected {
					named += th.OK.Render(" (as expected)")
				} else {
					named += th.Err.Render(" (expected " + string(rh.Expected) + ")")
				}
				detail = fmt.Sprintf("%s · time to detect %s", named, screen.Duration(d))
			}
		case rehearsal.PhaseRecovering:
			if rh.RecoveryRelease != "" {
				detail = "rollback " + rh.RecoveryRelease
			}
		case rehearsal.PhaseRecovered:
			when = rh.RecoveredAt
			if d, ok := rh.TimeToRecover(); ok {
				back := "back on " + screen.Clip(rh.Baseline.Digest.String(), 12)
				if rh.Drill == rehearsal.DrillFailedApply {
					back = "scratch state as copied"
				}
				detail = fmt.Sprintf("%s · time to recover %s", back, screen.Duration(d))
			}
		}
		out = append(out, fmt.Sprintf(" %s %-11s %s  %s", style.Render(icon), p, th.Muted.Render(at(when)), detail))
	}
	return out
}

// answerLines are the four answers as relcap showed them, once detected.
func (m Model) answerLines(it item, text func(name, v string) []string) []string {
	rh, th := it.rh, m.Theme
	if rh.IntendedRevision.Shown == "" && rh.ActualArtifact.Shown == "" && rh.ControllerStatus.Shown == "" && rh.NextSafeAction.Shown == "" {
		return nil
	}
	out := []string{th.Title.Render("The four answers, as relcap showed them")}
	for _, a := range []struct {
		name string
		ans  workflow.Answer
	}{{"Intended revision", rh.IntendedRevision}, {"Actual artifact", rh.ActualArtifact}, {"Controller status", rh.ControllerStatus}, {"Next safe action", rh.NextSafeAction}} {
		// Shown is the line exactly as the captain saw it, which
		// starts with the answer's own name: the label says it here.
		v := strings.TrimPrefix(a.ans.Shown, strings.ToLower(a.name)+": ")
		if v == "" {
			v = "(not shown)"
		}
		out = append(out, text(a.name, v)...)
	}
	return out
}

// tail is the latest events of the drill's releases while it runs: the
// injection, the watch, the rollback and its convergence.
func (m Model) tail(it item, compact bool) []string {
	if !m.Running() || len(it.log) == 0 {
		return nil
	}
	if compact {
		return []string{m.Theme.Label.Render(fmt.Sprintf("%-*s", labelWidth, "Now")) + m.Theme.Muted.Render(firstLine(it.log[len(it.log)-1]))}
	}
	out := []string{m.Theme.Title.Render("Now")}
	n := min(len(it.log), 3)
	for _, l := range it.log[len(it.log)-n:] {
		out = append(out, " "+m.Theme.Muted.Render(firstLine(l)))
	}
	return out
}

func (m Model) verdict(it item) []string {
	th := m.Theme
	switch m.stage {
	case stStopping:
		return []string{"", th.Warn.Render("stopping safely: saving the drill so it can resume…")}
	case stCleaning:
		return []string{"", th.Warn.Render("cleaning up: back to the baseline…")}
	case stEnded:
	default:
		return nil
	}
	rh := it.rh
	switch {
	case rh == nil:
		return nil
	case rh.State == rehearsal.StatePassed:
		return []string{"", th.OK.Render("✓ PASSED") + ": detected, named correctly, recovered on the baseline"}
	case rh.State == rehearsal.StateFailed:
		return append([]string{""}, screen.Wrap(th.Err.Render("✗ FAILED")+": "+rh.Failure, m.Width)...)
	case rh.State == rehearsal.StateAbandoned:
		return append([]string{""}, screen.Wrap(th.Warn.Render("■ ABANDONED")+": "+rh.Failure, m.Width)...)
	}
	why := "stopped"
	if it.err != nil && !errors.Is(it.err, context.Canceled) {
		why = "stopped on an error: " + firstLine(it.err.Error())
	}
	out := append([]string{""}, screen.Wrap(th.Warn.Render("■ "+why)+fmt.Sprintf(" at phase %s; the drill is saved.", rh.Phase), m.Width)...)
	return append(out, screen.Wrap(fmt.Sprintf("Continue with relcap rehearse --resume %s, or undo with relcap rehearse --cleanup %s (or press c).", rh.ID, rh.ID), m.Width)...)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
