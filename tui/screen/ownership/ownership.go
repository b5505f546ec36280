// Package ownership is the problem stage's screen: the ownership check's
// findings, conflicts first, each with its next safe action.
package ownership

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/owners"
	"github.com/relcap/relcap/workflow/ownership"
)

// Model is the ownership screen.
type Model struct {
	screen.Base[keys.Map]

	step     workflow.StepRecord
	findings []finding.Finding
	file     string
	offset   int

	// The matrix is read live, on request: it needs the sources (Terraform
	// state, Argo CD), which the release snapshot does not carry.
	svc        *workflow.Service
	env        string
	showMatrix bool
	loading    bool
	gen        int
	matrix     []ownership.MatrixRow
	matrixErr  error
}

// New returns the ownership screen. Findings come from the release
// snapshots the root broadcasts; the matrix is read through svc when the
// captain asks for it. ownershipFile names the map to edit in the hints.
func New(svc *workflow.Service, ownershipFile string, th theme.Theme, km keys.Map) Model {
	return Model{Base: screen.NewBase(th, km), svc: svc, file: ownershipFile}
}

// matrixLoadedMsg carries a live ownership matrix.
type matrixLoadedMsg struct {
	gen  int
	rows []ownership.MatrixRow
	err  error
}

// loadMatrix reads the sources and builds the matrix of env.
func (m Model) loadMatrix() tea.Cmd {
	svc, env, gen := m.svc, m.env, m.gen
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		rep, err := owners.Check(ctx, svc, env)
		return matrixLoadedMsg{gen: gen, rows: rep.Matrix, err: err}
	}
}

// Init does nothing.
func (m Model) Init() tea.Cmd { return nil }

// Update handles messages.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	m.Observe(msg)
	switch msg := msg.(type) {
	case screen.RunStateMsg:
		m.setRelease(msg.Release)
	case screen.EventMsg:
		m.setRelease(msg.Event.Release)
	case matrixLoadedMsg:
		if msg.gen == m.gen {
			m.loading, m.matrix, m.matrixErr = false, msg.rows, msg.err
		}
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, m.Keys.Ownership.Matrix):
			m.showMatrix, m.offset = !m.showMatrix, 0
			if m.showMatrix && m.svc != nil && m.env != "" && !m.loading {
				m.gen++
				m.loading = true
				return m, m.loadMatrix()
			}
		default:
			m.offset = screen.ScrollKeys(msg, m.Keys.List, m.offset, m.Height-1)
		}
	}
	return m, nil
}

func (m *Model) setRelease(r *workflow.Release) {
	if r == nil {
		return
	}
	m.env = r.Env
	m.step = *r.Step(workflow.StepOwnership)
	// Sorted here, not trusted from the store: conflicts always lead.
	m.findings = slices.Clone(m.step.Findings)
	finding.Sort(m.findings)
}

// ShortHelp is the one-line help of the screen.
func (m Model) ShortHelp() []key.Binding {
	return []key.Binding{m.Keys.List.Up, m.Keys.List.Down, m.Keys.Ownership.Matrix}
}

// FullHelp is the full help of the screen.
func (m Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{{m.Keys.List.Up, m.Keys.List.Down, m.Keys.List.PageUp, m.Keys.List.PageDown, m.Keys.List.Top}, {m.Keys.Ownership.Matrix}}
}

// View renders the findings.
func (m Model) View() string {
	if !m.Sized() {
		return ""
	}
	th := m.Theme
	head := []string{th.Title.Render("Ownership check") + th.Muted.Render(" · problem stage · map "+m.file)}
	st := m.step
	status := th.StepStyle(st.Status).Render(theme.StepIcon(st.Status) + " " + st.Status.String())
	if st.Message != "" {
		status += " " + th.Muted.Render(st.Message)
	}
	head = append(head, status)
	var blockers, warnings int
	for _, f := range m.findings {
		switch f.Severity {
		case finding.Blocker:
			blockers++
		case finding.Warning:
			warnings++
		}
	}
	head = append(head, th.Err.Render(fmt.Sprintf("%d conflict(s)", blockers))+th.Muted.Render(" · ")+th.Warn.Render(fmt.Sprintf("%d warning(s)", warnings))+
		th.Muted.Render(fmt.Sprintf(" · %d finding(s)", len(m.findings))))
	if blockers > 0 {
		head = append(head, "Fix each conflict in "+th.Key.Render(m.file)+" (or at its source), then "+th.Key.Render("r")+" resume.")
	}
	head = append(head, "")

	var body []string
	if m.showMatrix {
		body = m.matrixLines()
	} else if len(m.findings) == 0 {
		if st.Status == workflow.Succeeded {
			body = append(body, th.OK.Render(theme.IconSucceeded+" every managed object and field has exactly one owner"))
		} else {
			body = append(body, th.Muted.Render("no findings yet"))
		}
	}
	width := m.Width - 4
	for _, f := range m.findings {
		if m.showMatrix {
			break
		}
		style := th.SeverityStyle(f.Severity)
		body = append(body, style.Render(theme.SeverityIcon(f.Severity)+" "+f.Code)+" "+f.Subject)
		for _, l := range screen.Wrap(f.Message, width) {
			body = append(body, "    "+l)
		}
		if len(f.Facts) > 0 {
			ev := make([]string, 0, len(f.Facts))
			for _, fact := range f.Facts {
				ev = append(ev, fact.Name+"="+fact.Value)
			}
			for _, l := range screen.Wrap(strings.Join(ev, " "), width) {
				body = append(body, "    "+th.Muted.Render(l))
			}
		}
		if f.NextAction != "" {
			for i, l := range screen.Wrap("next: "+f.NextAction, width) {
				if i == 0 {
					l = th.Accent.Render(l)
				}
				body = append(body, "    "+l)
			}
		}
	}
	bodyH := max(1, m.Height-len(head))
	off := min(m.offset, max(0, len(body)-bodyH))
	body = body[off:]
	return m.Fit(strings.Join(head, "\n") + "\n" + screen.Fit(strings.Join(body, "\n"), m.Width, bodyH))
}

// matrixLines renders the matrix: each resource, the rule and owner the map
// gives it, its per-field owners, and who writes which fields.
func (m Model) matrixLines() []string {
	th := m.Theme
	switch {
	case m.loading:
		return []string{th.Muted.Render("reading Terraform state and Argo CD for the matrix…")}
	case m.matrixErr != nil:
		return []string{th.Err.Render("matrix: " + m.matrixErr.Error())}
	case len(m.matrix) == 0:
		return []string{th.Muted.Render("no managed objects")}
	}
	width := m.Width - 4
	lines := []string{th.Muted.Render(fmt.Sprintf("%d resource(s) · x back to findings", len(m.matrix)))}
	for _, row := range m.matrix {
		owner := string(row.Owner)
		if owner == "" {
			owner = th.Err.Render("no rule")
		}
		rule := row.Rule
		if rule == "" {
			rule = "-"
		}
		lines = append(lines, th.Title.Render(row.Subject)+th.Muted.Render(" · "+rule+" → ")+owner)
		for _, f := range slices.Sorted(maps.Keys(row.FieldOwners)) {
			lines = append(lines, "    "+th.Muted.Render("field "+f+" → ")+string(row.FieldOwners[f]))
		}
		for _, w := range row.Writers {
			fields := strings.Join(w.Fields, ", ")
			if fields == "" {
				fields = "(whole object)"
			}
			for i, l := range screen.Wrap(w.Via+": "+fields, width) {
				if i == 0 {
					l = "  " + l
				} else {
					l = "    " + l
				}
				lines = append(lines, "  "+l)
			}
		}
	}
	return lines
}
