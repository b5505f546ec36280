// Package home is the decision map: the four stages of a release
// (problem → boundary → decision → evidence) with each step's status, what
// blocks, and the evidence gathered so far. The captain can always return
// to it, and opens a step's screen from it.
package home

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
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
)

// Port is what the decision map needs of the workflow; *workflow.Service
// implements it.
type Port interface {
	Effort(ctx context.Context, releaseID string) ([]effort.Entry, error)
	Abandon(ctx context.Context, id, reason string) (workflow.Abandoned, error)
}

var _ Port = (*workflow.Service)(nil)

// Model is the decision map.
type Model struct {
	screen.Base[keys.Map]
	port     Port
	progress map[workflow.StepKind]string
	cursor   int

	// effortRead: the ledger was read (and this process's effort stored)
	// once the release ended, so the figure beside the outcome is the
	// ledger's.
	effortRead bool
	effortErr  error
	// abandon is the abandon prompt (abandon.go).
	abandon abandonPrompt
}

// effortLoadedMsg says the effort of the ended release is stored and read
// back (Port.Effort); the figure itself comes with the next tick.
type effortLoadedMsg struct {
	id  string
	err error
}

// New returns the decision map.
func New(port Port, th theme.Theme, km keys.Map) Model {
	return Model{Base: screen.NewBase(th, km), port: port, progress: map[workflow.StepKind]string{}}
}

// Init does nothing; the map fills from release events.
func (m Model) Init() tea.Cmd { return nil }

// Update handles messages.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	m.Observe(msg)
	switch msg := msg.(type) {
	case screen.RunStateMsg:
		if msg.Running {
			// Progress of an earlier run says nothing about this one.
			m.progress = map[workflow.StepKind]string{}
		}
		if !msg.Running && m.Release() != nil && m.Release().Status.Succeeded() {
			return m, m.loadEffort()
		}
	case screen.EventMsg:
		e := msg.Event
		switch e.Kind {
		case workflow.EventStepProgress:
			m.progress[e.Step] = e.Message
		case workflow.EventStepStarted, workflow.EventStepFinished:
			delete(m.progress, e.Step)
			m.cursor = slices.Index(workflow.StepKinds, e.Step)
		}
	case effortLoadedMsg:
		if m.Release() == nil || msg.id != m.Release().ID {
			return m, nil
		}
		m.effortRead, m.effortErr = true, msg.err
	case abandonedMsg:
		return m.abandoned(msg)
	case tea.KeyPressMsg:
		if m.abandon.stage != promptNone {
			return m.abandonKey(msg)
		}
		switch {
		case key.Matches(msg, m.Keys.Home.Abandon) && m.mayAbandon():
			m.abandon = abandonPrompt{stage: promptReason}
		case key.Matches(msg, m.Keys.List.Up):
			m.cursor = max(0, m.cursor-1)
		case key.Matches(msg, m.Keys.List.Down):
			m.cursor = min(len(workflow.StepKinds)-1, m.cursor+1)
		case key.Matches(msg, m.Keys.List.Open):
			step := workflow.StepKinds[m.cursor]
			return m, func() tea.Msg { return screen.OpenMsg{Step: step} }
		}
	}
	return m, nil
}

// loadEffort stores the effort measured on the ended release and reads
// what the ledger holds of it, everyone's, into the figure.
func (m Model) loadEffort() tea.Cmd {
	port, id := m.port, m.Release().ID
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := port.Effort(ctx, id)
		return effortLoadedMsg{id: id, err: err}
	}
}

// ShortHelp is the one-line help of the screen.
func (m Model) ShortHelp() []key.Binding {
	if m.Capturing() {
		return m.promptKeys()
	}
	if m.mayAbandon() {
		return []key.Binding{m.Keys.List.Up, m.Keys.List.Down, m.Keys.List.Open, m.Keys.Home.Abandon}
	}
	return []key.Binding{m.Keys.List.Up, m.Keys.List.Down, m.Keys.List.Open}
}

// FullHelp is the full help of the screen.
func (m Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{m.ShortHelp()}
}

// View renders the map.
func (m Model) View() string {
	if !m.Sized() {
		return ""
	}
	th := m.Theme
	if m.Release() == nil {
		return m.Fit(th.Title.Render("Decision map") + "\n\n" + th.Muted.Render("loading the release…"))
	}
	r := m.Release()
	var lines []string
	lines = append(lines, th.Title.Render("Decision map")+th.Muted.Render(fmt.Sprintf(" · %s → %s · %s", r.App, r.Env, r.Image)))
	lines = append(lines, m.shapeLine(r), "")
	const titleW = 18
	msgW := max(10, m.Width-4-9-2-titleW-1)
	prevStage := workflow.Stage(-1)
	for i, k := range workflow.StepKinds {
		st := r.Step(k)
		stage := ""
		if k.Stage() != prevStage {
			stage = strings.ToUpper(k.Stage().String())
			prevStage = k.Stage()
		}
		cur := "  "
		if i == m.cursor {
			cur = th.Key.Render(theme.IconCursor) + " "
		}
		msg := st.Message
		if p, ok := m.progress[k]; ok && st.Status == workflow.Running {
			msg = p
		}
		if why := skippedWhy(r, k); msg == "" && why != "" {
			msg = why
		}
		if msg == "" {
			msg = st.Status.String()
		}
		style := th.StepStyle(st.Status)
		line := th.Label.Render(fmt.Sprintf("%-9s", stage)) + cur + style.Render(theme.StepIcon(st.Status)+" "+fmt.Sprintf("%-*s", titleW, k.Title())) + " " +
			th.Muted.Render(clip(msg, msgW))
		lines = append(lines, line)
	}
	lines = append(lines, "")
	if blocks := m.blocks(); len(blocks) > 0 {
		lines = append(lines, th.Label.Render("What blocks"))
		for _, b := range blocks {
			for _, l := range screen.Wrap(b.text, m.Width-4) {
				lines = append(lines, "  "+b.style(l))
			}
		}
		lines = append(lines, "")
	}
	lines = append(lines, th.Label.Render("Evidence so far"))
	ev := m.evidence()
	if len(ev) == 0 {
		lines = append(lines, "  "+th.Muted.Render("none yet"))
	}
	for _, e := range ev {
		lines = append(lines, "  "+e)
	}
	body := strings.Join(lines, "\n")
	next := m.next()
	if p := m.abandonLines(); p != nil {
		next = p
	}
	bodyH := max(1, m.Height-len(next))
	return m.Fit(screen.Fit(body, m.Width, bodyH) + "\n" + strings.Join(next, "\n"))
}

type block struct {
	text  string
	style func(...string) string
}

// blocks lists what stops the release: the message of a blocked or failed
// step, and every blocker finding with its next safe action.
func (m Model) blocks() []block {
	th := m.Theme
	var out []block
	for _, k := range workflow.StepKinds {
		st := m.Release().Step(k)
		if st.Status != workflow.Blocked && st.Status != workflow.Failed {
			continue
		}
		out = append(out, block{text: theme.StepIcon(st.Status) + " " + k.Title() + ": " + st.Message, style: th.StepStyle(st.Status).Render})
		for _, f := range st.Findings {
			if f.Severity != finding.Blocker {
				continue
			}
			t := fmt.Sprintf("%s %s %s: %s", theme.IconBlocker, f.Code, f.Subject, f.Message)
			if f.NextAction != "" {
				t += " — next: " + f.NextAction
			}
			out = append(out, block{text: t, style: th.Err.Render})
		}
	}
	if len(out) == 0 && m.RunErr() != nil && !m.Running() {
		out = append(out, block{text: theme.IconFailed + " " + m.RunErr().Error(), style: th.Err.Render})
	}
	return out
}

// evidence renders one line per piece of evidence, oldest step first.
func (m Model) evidence() []string {
	th := m.Theme
	var out []string
	for _, k := range workflow.StepKinds {
		for _, e := range m.Release().Step(k).Evidence {
			var detail []string
			if e.Detail != nil {
				facts := e.Detail.Facts()
				slices.SortStableFunc(facts, func(a, b finding.Fact) int { return strings.Compare(a.Name, b.Name) })
				for _, f := range facts {
					detail = append(detail, f.Name+"="+screen.Clip(f.Value, 16))
				}
			}
			line := th.Accent.Render(fmt.Sprintf("%-18s", string(e.Kind))) + " " + screen.Clip(e.Subject, 16) + " " + th.Muted.Render(strings.Join(detail, " "))
			out = append(out, line)
		}
	}
	return out
}

// next is the bottom line: what the captain can do now.
func (m Model) next() []string {
	th := m.Theme
	r := m.Release()
	k := func(s string) string { return th.Key.Render(s) }
	cur, ok := r.Current()
	switch {
	case m.Running():
		return []string{th.Step.Running.Render(theme.IconRunning+" running "+cur.Title()) + th.Muted.Render(" · q stops safely; relcap resume "+r.ID+" continues")}
	case r.Status == workflow.ReleaseAbandoned:
		return []string{th.Muted.Render("abandoned by " + r.Abandonment.By + ": " + r.Abandonment.Reason)}
	case r.Status.Succeeded():
		s := th.OK.Render(theme.IconSucceeded + " " + string(r.Status))
		if m.effortRead {
			f := m.Effort()
			s += th.Muted.Render(fmt.Sprintf(" · effort: active %s, off-tool %s · machine wait %s (not staff time)",
				screen.Duration(f.Active), screen.Duration(f.OffTool), screen.Duration(f.Wait)))
		}
		return []string{s}
	case !ok:
		return []string{th.Muted.Render("release " + string(r.Status))}
	}
	st := r.Step(cur)
	switch {
	case st.Status == workflow.Blocked && errors.Is(m.RunErr(), fault.ErrApprovalRequired) && cur == workflow.StepPlanReview:
		return []string{"Needs approval: " + k("2") + " plan, " + k("a") + " approve (if policy allows); it continues once approved"}
	case st.Status == workflow.Blocked && cur == workflow.StepPromotion && errors.Is(m.RunErr(), fault.ErrAwaitingForge):
		where := "its pull request"
		if pr := r.Checkpoints.PullRequest; pr != nil {
			where = fmt.Sprintf("pull request #%d (%s)", pr.Number, pr.URL)
		}
		return []string{"Waiting on the forge: review and merge " + where + " there; " + k("3") + " promotion; it continues by itself"}
	case st.Status == workflow.Blocked && cur == workflow.StepPromotion && errors.Is(m.RunErr(), fault.ErrApprovalRequired):
		return []string{"Needs approval: " + k("3") + " promotion, " + k("a") + " approve (if policy allows); it continues once approved"}
	case st.Status == workflow.Blocked && errors.Is(m.RunErr(), fault.ErrLocked):
		// Another captain's apply or promotion holds the lock: the step's
		// message above names them; nothing here can take it from them.
		return []string{"Another captain holds the lock (named above): wait for them or ask them, then " + k("r") + " resume"}
	case st.Status == workflow.Blocked && cur == workflow.StepOwnership:
		return []string{"Resolve the conflicts (" + k("1") + " ownership), then " + k("r") + " resume"}
	case st.Status == workflow.Blocked:
		return []string{"Blocked by policy: act on the message above, then " + k("r") + " resume"}
	case st.Status == workflow.Failed:
		return []string{th.Err.Render("Failed: ") + "read the facts on the step's screen (" + k("enter") + "), then " + k("r") + " retry"}
	case r.AwaitsReplan():
		// A failed apply sends the release back to plan review: what it
		// changed is in the state now, so the plan to apply is a new one
		// (the same one, approvals kept, only if nothing changed).
		return []string{th.Err.Render("Apply failed: ") + "act on its next safe action above, then " + k("r") + " plans again; " + k("2") + " shows the new plan before anything is applied"}
	case cur == workflow.StepApply && r.Step(workflow.StepPlanReview).Status == workflow.Succeeded:
		return []string{"Plan reviewed: " + k("2") + " open it and press " + k("enter") + " to apply"}
	}
	return []string{k("r") + " run the release from " + cur.Title()}
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:max(0, n-1)]) + "…"
	}
	return s
}
