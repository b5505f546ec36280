// Package plan is the plan review screen of the boundary stage: counts, a
// virtualised, filterable list of changes with risk flags, a detail pane
// with the (already masked) attribute diff, the fingerprint, approvals so
// far, and the approve and continue actions gated by policy.
package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

// Port is what the plan screen needs of the workflow; *workflow.Service
// implements it.
type Port interface {
	// Records reads the plan and counts its approvals.
	Records() *workflow.Records
	ApprovePlan(ctx context.Context, fingerprint, comment string) (approval.Approval, approval.Check, error)
	MayApprove(env string, kind approval.Kind, author string) error
	Actor() string
}

var _ Port = (*workflow.Service)(nil)

// opTimeout bounds one ledger read or approval; they are quick, and a
// stuck ledger must not leave the screen waiting forever.
const opTimeout = 30 * time.Second

// Model is the plan review screen.
type Model struct {
	screen.Base[keys.Map]
	port Port

	// gen counts plan loads; a result for an older fingerprint is dropped.
	gen     int
	fp      string
	plan    *tfplan.Summary
	check   approval.Check
	loadErr error

	approving bool
	// reviewOnly is an approver's review (relcap review): the plan and
	// the approve key, never the captain's continue to apply.
	reviewOnly bool
	approveErr error
	confirming bool

	filter    string
	filtering bool
	// rows are indexes into plan.Changes that pass the filter, so
	// scrolling and rendering never touch the other changes.
	rows   []int
	cursor int
	offset int

	// log is Terraform's output of this release's plan and apply steps,
	// shown in place of the list while it runs or when the captain
	// toggles it (showLog).
	log     screen.LogPane
	showLog bool
}

// planLoadedMsg is the result of loading a plan and counting its approvals.
type planLoadedMsg struct {
	gen   int
	plan  tfplan.Summary
	check approval.Check
	err   error
}

// planApprovedMsg is the result of approving the plan as the actor.
type planApprovedMsg struct {
	gen   int
	check approval.Check
	err   error
}

// New returns the plan screen.
func New(port Port, th theme.Theme, km keys.Map) Model {
	return Model{Base: screen.NewBase(th, km), port: port}
}

// Init does nothing: the plan loads when a release names its fingerprint.
func (m Model) Init() tea.Cmd { return nil }

// SetSize sets the area the screen draws in.
func (m *Model) SetSize(w, h int) {
	m.Base.SetSize(w, h)
	m.offset = screen.Scroll(m.offset, m.cursor, m.listHeight(), len(m.rows))
}

// Capturing reports whether the screen is taking text input, so the root
// must not treat keys as global shortcuts.
func (m Model) Capturing() bool { return m.filtering || m.confirming }

// TakesText reports whether the screen takes typed text (the filter), so
// every key is input and none is a binding.
func (m Model) TakesText() bool { return m.filtering }

// Fingerprint is the plan shown, if any.
func (m Model) Fingerprint() string { return m.fp }

// Plan is the loaded plan, or nil.
func (m Model) Plan() *tfplan.Summary { return m.plan }

// Update handles messages.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	m.Observe(msg)
	switch msg := msg.(type) {
	case screen.RunStateMsg:
		if msg.Running {
			m.confirming = false
		}
		return m.setRelease(msg.Release)
	case screen.EventMsg:
		m.logEvent(msg.Event)
		if msg.Event.Release != nil {
			return m.setRelease(msg.Event.Release)
		}
	case planLoadedMsg:
		if msg.gen != m.gen {
			return m, nil // a late result for a plan no longer shown
		}
		if msg.err != nil {
			m.loadErr = msg.err
			return m, nil
		}
		m.loadErr = nil
		m.SetPlan(msg.plan, msg.check)
	case planApprovedMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		m.approving = false
		m.approveErr = msg.err
		if msg.err == nil {
			m.check = msg.check
			note := fmt.Sprintf("approved plan %s as %s (%d/%d)", workflow.ShortHash(m.fp), m.port.Actor(), len(msg.check.Counted), msg.check.Required)
			return m, notice(note, false)
		}
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

// logEvent adds a tool's output line of the plan or apply step to the log
// pane, and marks where each of those steps starts.
func (m *Model) logEvent(e workflow.Event) {
	if e.Step != workflow.StepPlanReview && e.Step != workflow.StepApply {
		return
	}
	switch e.Kind {
	case workflow.EventStepOutput:
		m.log.Append(e.Output)
	case workflow.EventStepStarted:
		if e.Step == workflow.StepPlanReview {
			m.log.Reset()
		}
		m.log.Append(m.Theme.Accent.Render("── " + e.Step.Title() + " ──"))
	}
}

// logShown reports whether the log pane takes the list's place: while no
// plan is loaded yet (planning), while the apply runs, or when toggled.
func (m Model) logShown() bool {
	if m.showLog || m.plan == nil {
		return true
	}
	step, _ := m.currentStep()
	return m.Running() && step == workflow.StepApply
}

// currentStep is the release's first unfinished step.
func (m Model) currentStep() (workflow.StepKind, bool) {
	if m.Release() == nil {
		return 0, false
	}
	return m.Release().Current()
}

// Log is the log pane, for tests.
func (m Model) Log() screen.LogPane { return m.log }

// SetPlan shows p with its approvals; tests and benchmarks use it to skip
// the ledger.
func (m *Model) SetPlan(p tfplan.Summary, check approval.Check) {
	m.fp = p.Fingerprint
	m.plan = &p
	m.check = check
	m.applyFilter()
}

func (m Model) setRelease(r *workflow.Release) (Model, tea.Cmd) {
	if r == nil {
		return m, nil
	}
	fp := r.Checkpoints.Fingerprint
	if fp == "" || fp == m.fp && m.plan != nil {
		// Same plan: only approvals may have moved (approved elsewhere).
		if fp != "" && !m.Running() {
			return m, m.loadApprovals()
		}
		return m, nil
	}
	m.fp = fp
	m.gen++
	m.plan, m.loadErr, m.approveErr = nil, nil, nil
	m.rows, m.cursor, m.offset = nil, 0, 0
	return m, m.loadPlan()
}

// loadPlan reads the plan and its approvals from the ledger.
func (m Model) loadPlan() tea.Cmd {
	port, fp, gen := m.port, m.fp, m.gen
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		p, err := port.Records().Plan(ctx, fp)
		if err != nil {
			return planLoadedMsg{gen: gen, err: err}
		}
		check, err := port.Records().PlanApprovals(ctx, p)
		return planLoadedMsg{gen: gen, plan: p, check: check, err: err}
	}
}

// loadApprovals re-counts approvals of the plan shown.
func (m Model) loadApprovals() tea.Cmd {
	if m.plan == nil {
		return nil
	}
	port, p, gen := m.port, *m.plan, m.gen
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		check, err := port.Records().PlanApprovals(ctx, p)
		if err != nil {
			return planLoadedMsg{gen: gen, err: err}
		}
		return planLoadedMsg{gen: gen, plan: p, check: check}
	}
}

// approvePlan records the actor's approval of exactly this fingerprint.
func (m Model) approvePlan() tea.Cmd {
	port, fp, gen := m.port, m.fp, m.gen
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		_, check, err := port.ApprovePlan(ctx, fp, "approved in the relcap cockpit")
		return planApprovedMsg{gen: gen, check: check, err: err}
	}
}

func notice(text string, isErr bool) tea.Cmd {
	return func() tea.Msg { return screen.NoticeMsg{Text: text, Err: isErr} }
}

// resume asks the root to continue, having reviewed this plan.
func (m Model) resume() tea.Cmd {
	fp := m.fp
	return func() tea.Msg { return screen.ResumeMsg{ReviewedPlan: fp} }
}

func (m Model) key(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	km := m.Keys
	if m.filtering {
		switch {
		case key.Matches(msg, km.Plan.ClearFilter):
			m.filtering, m.filter = false, ""
			m.applyFilter()
		case key.Matches(msg, km.Plan.ApplyFilter):
			m.filtering = false
		case msg.Code == tea.KeyBackspace:
			if r := []rune(m.filter); len(r) > 0 {
				m.filter = string(r[:len(r)-1])
				m.applyFilter()
			}
		case msg.Text != "":
			m.filter += msg.Text
			m.applyFilter()
		}
		return m, nil
	}
	if m.confirming {
		switch {
		case key.Matches(msg, km.Plan.Confirm):
			m.confirming = false
			return m, m.resume()
		case key.Matches(msg, km.Plan.Cancel):
			m.confirming = false
			return m, notice("apply not confirmed; the release waits here", false)
		}
		return m, nil
	}
	if key.Matches(msg, km.Plan.Log) {
		m.showLog = !m.showLog
		return m, nil
	}
	if m.logShown() && m.plan != nil || m.plan == nil && m.log.Len() > 0 {
		if isScrollKey(msg, km.List) {
			m.log.Scroll(msg, km.List, m.logHeight())
			return m, nil
		}
	}
	page := max(1, m.listHeight()-1)
	switch {
	case key.Matches(msg, km.List.Up):
		m.move(-1)
	case key.Matches(msg, km.List.Down):
		m.move(1)
	case key.Matches(msg, km.List.PageUp):
		m.move(-page)
	case key.Matches(msg, km.List.PageDown):
		m.move(page)
	case key.Matches(msg, km.List.Top):
		m.move(-len(m.rows))
	case key.Matches(msg, km.List.Bottom):
		m.move(len(m.rows))
	case key.Matches(msg, km.Plan.Filter):
		m.filtering = true
	case key.Matches(msg, km.Plan.Approve):
		if ok, why := m.canApprove(); !ok {
			return m, notice(why, true)
		}
		m.approving, m.approveErr = true, nil
		return m, m.approvePlan()
	case key.Matches(msg, km.Plan.Continue):
		if !m.continuable() {
			return m, nil
		}
		if m.plan.Destructive() {
			m.confirming = true
			return m, nil
		}
		return m, m.resume()
	}
	return m, nil
}

func (m *Model) move(d int) {
	if len(m.rows) == 0 {
		return
	}
	m.cursor = min(max(0, m.cursor+d), len(m.rows)-1)
	m.offset = screen.Scroll(m.offset, m.cursor, m.listHeight(), len(m.rows))
}

// applyFilter recomputes the visible rows: changes whose address, type,
// action or flags contain the filter, ignoring case. No-op changes are
// left out, as Terraform's own plan output does.
func (m *Model) applyFilter() {
	m.rows = m.rows[:0]
	if m.plan == nil {
		return
	}
	f := strings.ToLower(m.filter)
	for i, c := range m.plan.Changes {
		if c.Action == tfplan.ActionNoop {
			continue
		}
		if f == "" || matches(c, f) {
			m.rows = append(m.rows, i)
		}
	}
	// Drift follows the changes: what the apply writes back.
	for i, d := range m.plan.Drift {
		if f == "" || matches(d.ResourceChange, f) || strings.Contains("drift", f) {
			m.rows = append(m.rows, len(m.plan.Changes)+i)
		}
	}
	m.cursor = min(m.cursor, max(0, len(m.rows)-1))
	m.offset = screen.Scroll(m.offset, m.cursor, m.listHeight(), len(m.rows))
}

// row is the change a list row shows, and whether it is drift.
func (m Model) row(i int) (tfplan.ResourceChange, *tfplan.DriftedResource) {
	n := m.rows[i]
	if n < len(m.plan.Changes) {
		return m.plan.Changes[n], nil
	}
	d := &m.plan.Drift[n-len(m.plan.Changes)]
	return d.ResourceChange, d
}

func matches(c tfplan.ResourceChange, f string) bool {
	if strings.Contains(strings.ToLower(c.Address), f) || strings.Contains(string(c.Action), f) || strings.Contains(strings.ToLower(c.Type), f) {
		return true
	}
	return slices.ContainsFunc(c.Flags, func(s string) bool { return strings.Contains(s, f) })
}

// Busy is what the screen is doing that its keys wait for, if anything:
// the plan loading, or an approval being recorded.
func (m Model) Busy() string {
	switch {
	case m.approving:
		return "recording the approval"
	case m.fp != "" && m.plan == nil && m.loadErr == nil:
		return "the plan is loading"
	}
	return ""
}

// canApprove says whether the actor may approve here, and if not, why:
// the Service's own approval rule (MayApprove) answers, so the captain
// hears it before pressing a.
func (m Model) canApprove() (bool, string) {
	switch {
	case m.plan == nil:
		return false, "no plan to approve yet"
	case !m.plan.AppliedAt.IsZero():
		return false, "this plan was already applied"
	case m.approving:
		return false, "approving…"
	case m.port.MayApprove(m.plan.Env, approval.Plan, m.plan.Author) != nil:
		return false, fmt.Sprintf("%s wrote this plan and %s needs another approver: relcap approve --plan %s --actor OTHER", m.port.Actor(), m.plan.Env, m.fp)
	}
	for _, a := range m.check.Counted {
		if a.Approver == m.port.Actor() {
			return false, m.port.Actor() + " already approved this plan"
		}
	}
	return true, ""
}

// blocked reports whether the run stopped at plan review for approvals.
func (m Model) blocked() bool {
	if m.Release() == nil || m.Running() {
		return false
	}
	return m.Release().Step(workflow.StepPlanReview).Status == workflow.Blocked
}

// reviewPending reports whether the plan was reviewed (and approved as
// policy requires) and the run waits for the captain to continue to apply.
func (m Model) reviewPending() bool {
	if m.Release() == nil || m.Running() || m.plan == nil || !m.plan.HasChanges() {
		return false
	}
	return m.Release().Step(workflow.StepPlanReview).Status == workflow.Succeeded &&
		!m.Release().Step(workflow.StepApply).Status.Done() && m.Release().Step(workflow.StepApply).Status != workflow.Running
}

// applyFailed reports whether this plan's apply failed and the release
// waits to review a plan again (the state may have moved under it).
func (m Model) applyFailed() bool {
	return m.Release() != nil && !m.Running() && m.plan != nil && m.Release().Checkpoints.Fingerprint == m.fp && m.Release().AwaitsReplan()
}

// continuable reports whether enter may send the run on to apply this
// plan: it was reviewed and approved, or it was blocked for approvals that
// are now all given.
func (m Model) continuable() bool {
	if m.reviewOnly {
		return false
	}
	if m.reviewPending() {
		return true
	}
	return m.blocked() && m.plan != nil && m.plan.HasChanges() && m.check.Satisfied()
}

// AsReview is the screen for an approver's review: read-only but for
// approving, which signs; the captain applies from their cockpit.
func (m Model) AsReview() Model {
	m.reviewOnly = true
	return m
}

// ShortHelp is the one-line help of the screen.
func (m Model) ShortHelp() []key.Binding {
	km := m.keys()
	if m.filtering {
		return []key.Binding{km.Plan.ApplyFilter, km.Plan.ClearFilter}
	}
	if m.confirming {
		return []key.Binding{km.Plan.Confirm, km.Plan.Cancel}
	}
	return []key.Binding{km.List.Up, km.List.Down, km.Plan.Filter, km.Plan.Approve, km.Plan.Continue}
}

// FullHelp is the full help of the screen: while it takes a filter or a
// y/n answer, only the keys of that.
func (m Model) FullHelp() [][]key.Binding {
	km := m.keys()
	if m.filtering || m.confirming {
		return [][]key.Binding{m.ShortHelp()}
	}
	return [][]key.Binding{
		{km.List.Up, km.List.Down, km.List.PageUp, km.List.PageDown, km.List.Top, km.List.Bottom},
		{km.Plan.Filter, km.Plan.ClearFilter, km.Plan.Approve, km.Plan.Continue, km.Plan.Confirm, km.Plan.Cancel, km.Plan.Log},
	}
}

// keys is the key map with the actions that do not apply now disabled.
func (m Model) keys() keys.Map {
	km := m.Keys
	ok, _ := m.canApprove()
	km.Plan.Approve.SetEnabled(ok && m.plan != nil && m.plan.HasChanges())
	km.Plan.Continue.SetEnabled(m.continuable())
	km.Plan.Confirm.SetEnabled(m.confirming)
	km.Plan.Cancel.SetEnabled(m.confirming)
	km.Plan.ClearFilter.SetEnabled(m.filtering)
	// The log toggles only while something else could be shown: not
	// before a plan is loaded, nor while the apply runs (logShown).
	step, _ := m.currentStep()
	km.Plan.Log.SetEnabled(m.plan != nil && !(m.Running() && step == workflow.StepApply))
	return km
}

// errText renders an error for the screen: policy refusals read as what
// to do, other errors as they are.
func errText(err error) string {
	if errors.Is(err, fault.ErrBlocked) {
		return "refused by policy: " + err.Error()
	}
	return err.Error()
}

// NeedsReview reports whether a release stopped after plan review with a
// plan that changes something, so the captain reviews it (and confirms a
// destructive one) on this screen before the run applies it. It reads the
// counts the plan review recorded as evidence, so no ledger read is needed.
func NeedsReview(r *workflow.Release) bool {
	if r == nil || r.Step(workflow.StepPlanReview).Status != workflow.Succeeded || r.Step(workflow.StepApply).Status.Done() {
		return false
	}
	// Evidence accumulates over attempts; only the current plan counts.
	for _, e := range r.Step(workflow.StepPlanReview).Evidence {
		if reviewed, ok := e.Detail.(evidence.PlanReviewed); ok && e.Subject == r.Checkpoints.Fingerprint && reviewed.HasChanges() {
			return true
		}
	}
	return false
}

// isScrollKey reports whether msg is one of the list's moving keys.
func isScrollKey(msg tea.KeyPressMsg, km keys.List) bool {
	return key.Matches(msg, km.Up, km.Down, km.PageUp, km.PageDown, km.Top, km.Bottom)
}
