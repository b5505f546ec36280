package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/screen/plan"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
)

// beginRun continues the release from its first unfinished step. It runs
// to the end of plan review first, so the captain reviews a plan before it
// is applied (and confirms a destructive one) on the plan screen.
func (m *Model) beginRun() tea.Cmd {
	if m.review != NoReview {
		return nil // a review never drives the release
	}
	if m.running || m.quitting || m.release == nil || m.release.Status.Done() {
		return nil
	}
	cur, ok := m.release.Current()
	if !ok {
		return nil
	}
	last := workflow.StepConvergence
	switch {
	case cur <= workflow.StepPlanReview:
		last = workflow.StepPlanReview
	case plan.NeedsReview(m.release) && m.reviewedPlan != m.release.Checkpoints.Fingerprint:
		m.active = scrPlan
		notice := "review the plan, then press enter to apply it"
		if m.approvedBy != "" {
			notice = "approved by " + m.approvedBy + ": " + notice
			m.approvedBy = ""
		}
		m.setNotice(notice, false)
		return nil
	}
	m.gen++
	ctx, cancel := context.WithCancel(m.ctx)
	m.cancel, m.running, m.runErr = cancel, true, nil
	*m = m.broadcastInPlace(screen.RunStateMsg{Running: true, Release: m.release})
	return m.startRun(ctx, m.gen, last)
}

// event applies one release event and re-arms the stream.
func (m Model) event(msg runEventMsg) (Model, tea.Cmd) {
	if msg.gen != m.gen {
		return m, nil
	}
	e := msg.event
	if e.Release != nil {
		m.release = e.Release
	}
	if e.Kind == workflow.EventStepStarted && !m.quitting {
		// Follow the run: show the step that just started, and book the
		// captain's time from now on to it (if they are still engaged).
		m.active = stepScreen(e.Step)
		m.svc.Tracker().Follow(m.releaseID, e.Step.String())
	}
	m, cmd := m.broadcast(screen.EventMsg{Event: e})
	return m, tea.Batch(cmd, waitNext(msg.stream))
}

// finished handles the end of a run: continue past plan review, stop for
// a person, or show the failure on its step's screen.
func (m Model) finished(msg runFinishedMsg) (Model, tea.Cmd) {
	if msg.gen != m.gen {
		return m, nil
	}
	m.running, m.cancel = false, nil
	if msg.release != nil {
		m.release = msg.release
	}
	m.runErr = msg.err
	if m.release != nil && m.release.Step(workflow.StepApply).Status == workflow.Failed {
		// The captain reviews again whatever plan the retry keeps: the
		// failed apply may have changed what it does.
		m.reviewedPlan = ""
	}
	if m.quitting && errors.Is(msg.err, context.Canceled) {
		// Interrupted on purpose: the release is saved and resumable.
		m.runErr = nil
	}
	if m.quitting {
		// The run has saved its state; now it is safe to leave.
		m, cmd := m.broadcast(screen.RunStateMsg{Release: m.release, Err: msg.err})
		return m, tea.Sequence(cmd, m.flushEffort(), tea.Quit)
	}
	m, cmd := m.broadcast(screen.RunStateMsg{Release: m.release, Err: msg.err})
	cur, unfinished := m.release.Current()
	switch {
	case msg.err == nil && unfinished:
		// RunUntil stopped after plan review: go on unless the plan
		// needs the captain's eyes first.
		return m, tea.Batch(cmd, m.beginRun())
	case msg.err == nil:
		m.active = scrHome
		m.setNotice("release "+m.release.ID+" converged", false)
	case errors.Is(msg.err, fault.ErrAwaitingForge):
		// Reviews and merges on the forge reach no ledger: poll the
		// forge and re-run the step (it reads the pull request once and
		// returns) when it moved, until it lands or blocks for a person.
		m.active = stepScreen(cur)
		m.setNotice(fmt.Sprintf("waiting on the forge: %s (re-checked every %s)", firstLine(msg.err.Error()), forge.PollInterval), true)
		return m, tea.Batch(cmd, m.pollForge(m.gen))
	case errors.Is(msg.err, fault.ErrApprovalRequired):
		// Wait for the approvers where they are: the run goes on by
		// itself once their approvals are in the ledger.
		m.active = stepScreen(cur)
		m.setNotice("waiting for approval: "+firstLine(msg.err.Error()), true)
		return m, tea.Batch(cmd, m.awaitApprovals(m.gen, -1))
	case errors.Is(msg.err, fault.ErrBlocked):
		m.active = stepScreen(cur)
		m.setNotice("blocked: "+firstLine(msg.err.Error()), true)
	default:
		m.active = stepScreen(cur)
		retry := "r retries"
		var failedApply *workflow.ApplyFailedError
		if errors.As(msg.err, &failedApply) {
			// Its first line is the next safe action; r reviews a plan again.
			msg.err, retry = failedApply, "r plans again"
		}
		m.setNotice("failed: "+firstLine(msg.err.Error())+" ("+retry+")", true)
	}
	return m, cmd
}

// approvalsArrived shows a new count of the approvals the blocked release
// waits for and continues the release once they suffice.
func (m Model) approvalsArrived(msg approvalsMsg) (Model, tea.Cmd) {
	if msg.gen != m.gen || m.running || m.quitting {
		return m, nil // the captain resumed meanwhile, or is leaving
	}
	if msg.err != nil {
		m.setNotice("cannot re-count approvals: "+firstLine(msg.err.Error())+" (r retries)", true)
		return m, nil
	}
	m.release = msg.release
	m, cmd := m.broadcast(screen.RunStateMsg{Release: m.release, Err: m.runErr})
	check := msg.check
	if !check.Satisfied() {
		m.setNotice(fmt.Sprintf("approvals %d/%d (%s): waiting for %d more", len(check.Counted), check.Required, approvers(check), check.Missing()), true)
		return m, tea.Batch(cmd, m.awaitApprovals(m.gen, len(check.Counted)))
	}
	if len(check.Counted) > 0 {
		m.approvedBy = approvers(check)
		m.setNotice("approved by "+m.approvedBy+": continuing", false)
	}
	return m, tea.Batch(cmd, m.beginRun())
}

// approvers lists who approved, in the order they did.
func approvers(c approval.Check) string {
	names := make([]string, 0, len(c.Counted))
	for _, a := range c.Counted {
		names = append(names, a.Approver)
	}
	if len(names) == 0 {
		return "none yet"
	}
	return strings.Join(names, ", ")
}
