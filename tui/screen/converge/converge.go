// Package converge is the evidence stage's screen: live sync, health,
// revision and images of the Argo CD application, its resources with
// per-resource health, the elapsed time, and on failure the four facts
// (intended revision, actual artifact, controller status, next safe
// action) with the ways out (rollback, break-glass).
package converge

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/finding"
)

// Model is the convergence screen.
type Model struct {
	screen.Base[keys.Map]
	app     *appstate.AppState
	updates int
	offset  int
}

// New returns the convergence screen; it reads everything from the events
// the root broadcasts, so it needs no port.
func New(th theme.Theme, km keys.Map) Model { return Model{Base: screen.NewBase(th, km)} }

// Init does nothing.
func (m Model) Init() tea.Cmd { return nil }

// Update handles messages.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	m.Observe(msg)
	switch msg := msg.(type) {
	case screen.EventMsg:
		e := msg.Event
		if e.Kind == workflow.EventAppState && e.App != nil {
			app := *e.App
			m.app = &app
			m.updates++
		}
	case tea.KeyPressMsg:
		m.offset = screen.ScrollKeys(msg, m.Keys.List, m.offset, 0)
	}
	return m, nil
}

// ShortHelp is the one-line help of the screen.
func (m Model) ShortHelp() []key.Binding { return []key.Binding{m.Keys.List.Up, m.Keys.List.Down} }

// FullHelp is the full help of the screen.
func (m Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{{m.Keys.List.Up, m.Keys.List.Down, m.Keys.List.Top}}
}

// elapsed is how long the watch has run, or ran.
func (m Model) elapsed(st *workflow.StepRecord) time.Duration {
	if st.StartedAt.IsZero() {
		return 0
	}
	end := m.Now
	if !st.EndedAt.IsZero() && st.Status != workflow.Running {
		end = st.EndedAt
	}
	if end.Before(st.StartedAt) {
		return 0
	}
	return end.Sub(st.StartedAt)
}

// View renders the watch.
func (m Model) View() string {
	if !m.Sized() {
		return ""
	}
	th := m.Theme
	if m.Release() == nil {
		return m.Fit(th.Title.Render("Convergence watch") + "\n\n" + th.Muted.Render("waiting for the release…"))
	}
	r := m.Release()
	st := r.Step(workflow.StepConvergence)
	lines := []string{th.Title.Render("Convergence watch") + th.Muted.Render(" · evidence stage · "+r.Env)}
	status := th.StepStyle(st.Status).Render(theme.StepIcon(st.Status)+" "+st.Status.String()) + th.Muted.Render(" · elapsed "+screen.Duration(m.elapsed(st)))
	if m.updates > 0 {
		status += th.Muted.Render(fmt.Sprintf(" · %d update(s)", m.updates))
	}
	if st.Message != "" {
		status += " " + th.Muted.Render(st.Message)
	}
	lines = append(lines, status, "")

	intended := r.Checkpoints.EnvCommit
	digest := r.Checkpoints.Digest.String()
	if f, ok := failure(st); ok {
		var failed *evidence.AppNotConverged
		if d, _, ok := evidence.Of[evidence.AppNotConverged](st.Evidence); ok {
			failed = &d
		}
		lines = append(lines, m.facts(f, failed, intended, digest)...)
		lines = append(lines, "")
	}
	label := func(s string) string { return th.Label.Render(fmt.Sprintf("%-10s ", s)) }
	if m.app == nil {
		lines = append(lines, th.Muted.Render("no application state yet: the watch starts after the promotion lands"))
		lines = append(lines, label("Intended")+hash(intended)+th.Muted.Render(" running ")+screen.Clip(digest, workflow.ShortLen))
		return m.Fit(strings.Join(lines, "\n"))
	}
	a := m.app
	lines = append(lines, label("App")+a.Name)
	sync := th.SyncStyle(a.SyncStatus).Render(orUnknown(string(a.SyncStatus)))
	rev := hash(a.SyncRevision)
	if intended != "" && a.SyncRevision == intended {
		rev = th.OK.Render(rev + " (intended)")
	} else if intended != "" {
		rev = th.Warn.Render(rev) + th.Muted.Render(" (intended "+hash(intended)+")")
	}
	lines = append(lines, label("Sync")+sync+th.Muted.Render(" at ")+rev)
	health := th.HealthStyle(a.Health).Render(orUnknown(string(a.Health)))
	if a.HealthMessage != "" {
		health += th.Muted.Render(" " + a.HealthMessage)
	}
	lines = append(lines, label("Health")+health)
	if a.Operation != "" {
		op := th.OperationStyle(a.Operation).Render(string(a.Operation))
		if a.OperationMsg != "" {
			op += th.Muted.Render(" " + a.OperationMsg)
		}
		lines = append(lines, label("Operation")+op)
	}
	for i, img := range a.Images {
		l := label("")
		if i == 0 {
			l = label("Images")
		}
		if digest != "" && strings.HasSuffix(img, "@"+digest) {
			lines = append(lines, l+th.OK.Render(img))
		} else {
			lines = append(lines, l+th.Warn.Render(img))
		}
	}
	resources, title := a.Resources, "Resources"
	if len(a.Tree) > 0 {
		resources, title = a.Tree, "Resource tree"
	}
	if len(resources) > 0 {
		lines = append(lines, "", th.Label.Render(fmt.Sprintf("%s (%d)", title, len(resources))))
		for _, n := range treeOrder(resources) {
			res := n.res
			name := strings.Repeat("  ", n.depth) + res.Kind + " " + res.Namespace + "/" + res.Name
			line := "  " + th.HealthStyle(res.Health).Render(fmt.Sprintf("%-12s", orUnknown(string(res.Health)))) + " " + name
			if res.Status != "" {
				line += " " + th.SyncStyle(res.Status).Render(string(res.Status))
			}
			if res.Message != "" {
				line += th.Muted.Render(" " + res.Message)
			}
			lines = append(lines, line)
		}
	}
	off := min(m.offset, max(0, len(lines)-m.Height))
	return m.Fit(strings.Join(lines[off:], "\n"))
}

// failure returns the finding that failed convergence, if any.
func failure(st *workflow.StepRecord) (finding.Finding, bool) {
	if st.Status != workflow.Failed {
		return finding.Finding{}, false
	}
	for _, f := range st.Findings {
		if strings.HasPrefix(f.Code, "convergence.") {
			return f, true
		}
	}
	return finding.Finding{Code: "convergence.failed", Message: st.Message}, true
}

// facts renders the four facts of a failed convergence and the ways out:
// as the watch recorded them when it ended, or else as last seen.
func (m Model) facts(f finding.Finding, failed *evidence.AppNotConverged, intended, digest string) []string {
	th := m.Theme
	label := func(s string) string { return th.Label.Render(fmt.Sprintf("%-19s ", s)) }
	var images []string
	controller := "(unknown)"
	switch {
	case failed != nil:
		images = failed.Images
		controller = fmt.Sprintf("sync %s at %s, health %s", orUnknown(string(failed.Sync)), hash(failed.Revision), orUnknown(string(failed.Health)))
		if failed.IntendedRevision != "" {
			intended = failed.IntendedRevision
		}
	case m.app != nil:
		images = m.app.Images
		controller = fmt.Sprintf("sync %s at %s, health %s", orUnknown(string(m.app.SyncStatus)), hash(m.app.SyncRevision), orUnknown(string(m.app.Health)))
	}
	actual := "(unknown)"
	if len(images) > 0 {
		actual = strings.Join(images, ", ")
	}
	next := f.NextAction
	if next == "" {
		next = "read the message above; fix forward or roll back"
	}
	out := []string{
		th.Err.Render(theme.IconFailed + " not converged: " + f.Message),
		label("Intended revision") + hash(intended) + th.Muted.Render(" with "+screen.Clip(digest, workflow.ShortLen)),
		label("Actual artifact") + actual,
		label("Controller status") + controller,
	}
	// The next safe action is the one line the captain must read whole.
	for i, l := range screen.Wrap(next, max(20, m.Width-20)) {
		if i == 0 {
			out = append(out, label("Next safe action")+th.Accent.Render(l))
		} else {
			out = append(out, strings.Repeat(" ", 20)+th.Accent.Render(l))
		}
	}
	r := m.Release()
	out = append(out, th.Muted.Render("Ways out: ")+th.Key.Render("relcap rollback --env "+r.Env+" --to RELEASE"),
		th.Muted.Render("          ")+th.Key.Render("relcap breakglass start --env "+r.Env+" --reason TEXT --ttl 30m"))
	return out
}

// hash abbreviates a revision as relcap does everywhere; "(none)" when unset.
func hash(rev string) string {
	if rev == "" {
		return "(none)"
	}
	return workflow.ShortHash(rev)
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}

// treeNode is a resource with its depth in the tree.
type treeNode struct {
	res   appstate.AppResource
	depth int
}

// treeOrder lists resources depth-first under their parents (Deployment,
// then its ReplicaSets, then their Pods); resources whose parent is not in
// the list are roots, in their original order.
func treeOrder(rs []appstate.AppResource) []treeNode {
	present := map[string]bool{}
	children := map[string][]appstate.AppResource{}
	for _, r := range rs {
		present[r.Key()] = true
	}
	var roots []appstate.AppResource
	for _, r := range rs {
		if r.Parent != "" && present[r.Parent] && r.Parent != r.Key() {
			children[r.Parent] = append(children[r.Parent], r)
		} else {
			roots = append(roots, r)
		}
	}
	out := make([]treeNode, 0, len(rs))
	seen := map[string]bool{}
	var walk func(r appstate.AppResource, depth int)
	walk = func(r appstate.AppResource, depth int) {
		if seen[r.Key()] {
			return // a cycle in bad data must not loop forever
		}
		seen[r.Key()] = true
		out = append(out, treeNode{res: r, depth: depth})
		for _, c := range children[r.Key()] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return out
}
