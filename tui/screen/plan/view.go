package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/tfplan"
)

// wideLayout is the width from which the detail pane sits beside the list
// rather than under it.
const wideLayout = 110

// detailLines is the height of the detail pane under the list in the
// narrow layout.
const detailLines = 6

// maxStateLines bounds the state block: a command to copy (with a full
// fingerprint) may need two lines at 80 columns.
const maxStateLines = 3

// headerHeight is how many lines the header takes above the list.
func (m Model) headerHeight() int {
	if m.plan == nil {
		return 0
	}
	return 4 + len(m.stateLines()) + len(m.custodyLines())
}

// listHeight is how many change rows fit: the virtualised window.
func (m Model) listHeight() int {
	h := m.Height - m.headerHeight() - 1 // the column header
	if m.Width < wideLayout {
		h -= detailLines + 1
	}
	return max(1, h)
}

// listWidth is the width of the change list.
func (m Model) listWidth() int {
	if m.Width >= wideLayout {
		return m.Width / 2
	}
	return m.Width
}

// View renders the screen; only the visible window of rows is rendered,
// so its cost does not grow with the number of changes.
func (m Model) View() string {
	if !m.Sized() {
		return ""
	}
	th := m.Theme
	var b strings.Builder
	switch {
	case m.plan == nil && m.loadErr != nil:
		b.WriteString(th.Err.Render("cannot load plan "+workflow.ShortHash(m.fp)) + "\n" + th.Muted.Render(m.loadErr.Error()))
		return m.Fit(b.String())
	case m.plan == nil && m.log.Len() > 0:
		// Planning: Terraform's output is the screen until the plan loads.
		b.WriteString(th.Title.Render("Plan review") + th.Muted.Render(" · planning") + "\n\n")
		b.WriteString(m.log.View(th, "Terraform", m.Running(), m.Width, m.Height-2))
		return m.Fit(b.String())
	case m.plan == nil && m.fp == "":
		b.WriteString(th.Title.Render("Plan review") + "\n\n" + th.Muted.Render("No plan yet: the boundary stage plans after the ownership check."))
		return m.Fit(b.String())
	case m.plan == nil:
		b.WriteString(th.Title.Render("Plan review") + "\n\n" + th.Muted.Render("loading plan "+workflow.ShortHash(m.fp)+"…"))
		return m.Fit(b.String())
	}
	header := m.header()
	hh := strings.Count(header, "\n") + 1
	b.WriteString(header)
	b.WriteString("\n")
	if m.logShown() {
		b.WriteString(m.log.View(th, "Terraform", m.Running(), m.Width, m.Height-hh))
		return m.Fit(b.String())
	}
	list := m.list()
	if m.Width >= wideLayout {
		lw := m.listWidth()
		dw := m.Width - lw - 1
		left := strings.Split(screen.Fit(list, lw, m.Height-hh), "\n")
		right := strings.Split(screen.Fit(m.detail(dw), dw, m.Height-hh), "\n")
		for i := range left {
			left[i] += th.Muted.Render("│") + right[i]
		}
		b.WriteString(strings.Join(left, "\n"))
	} else {
		b.WriteString(screen.Fit(list, m.Width, m.listHeight()+1))
		b.WriteString("\n" + th.Muted.Render(strings.Repeat("─", m.Width)) + "\n")
		b.WriteString(screen.Fit(m.detail(m.Width), m.Width, detailLines))
	}
	return m.Fit(b.String())
}

// header is headerHeight lines: title, counts, approvals, the state block
// and the filter line.
func (m Model) header() string {
	th, p := m.Theme, m.plan
	lines := make([]string, 0, 4+maxStateLines)
	title := th.Title.Render("Plan for "+p.Env) + th.Muted.Render(" · fingerprint ") + th.Accent.Render(workflow.ShortHash(p.Fingerprint))
	if p.Author != "" {
		title += th.Muted.Render(" · by " + p.Author)
	}
	if p.TerraformVersion != "" {
		title += th.Muted.Render(" · terraform " + p.TerraformVersion)
	}
	lines = append(lines, title)

	c := p.Counts
	counts := th.OK.Render(fmt.Sprintf("+%d create", c.Create)) + "  " + th.Warn.Render(fmt.Sprintf("~%d update", c.Update)) + "  " +
		th.Err.Render(fmt.Sprintf("-%d delete", c.Delete)) + "  " +
		th.Err.Render(fmt.Sprintf("±%d replace", c.ReplaceDeleteFirst+c.ReplaceCreateFirst))
	if c.ReplaceDeleteFirst > 0 {
		counts += th.Muted.Render(fmt.Sprintf(" (%d delete-first)", c.ReplaceDeleteFirst))
	}
	if n := countFlagged(p); n > 0 {
		counts += th.Warn.Render(fmt.Sprintf("  %s %d flagged", theme.IconWarning, n))
	}
	if n := len(p.Drift); n > 0 {
		counts += th.Warn.Render(fmt.Sprintf("  ≈%d drifted", n))
	}
	if !p.HasChanges() {
		counts = th.OK.Render("no changes: the infrastructure matches the configuration")
	}
	lines = append(lines, counts)
	lines = append(lines, m.approvalsLine())
	lines = append(lines, m.custodyLines()...)
	lines = append(lines, m.stateLines()...)
	switch {
	case m.filtering:
		lines = append(lines, th.Key.Render("/")+" "+m.filter+th.Accent.Render("▏")+th.Muted.Render(fmt.Sprintf("  %d of %d", len(m.rows), len(p.Changes))))
	case m.filter != "":
		lines = append(lines, th.Muted.Render(fmt.Sprintf("filter %q: %d of %d changes (/ to edit, esc clears)", m.filter, len(m.rows), len(p.Changes))))
	default:
		lines = append(lines, th.Muted.Render(fmt.Sprintf("%d changes · bound to revision %s, state serial %d", len(m.rows), revOrNone(p.Inputs.Revision), p.Inputs.StateSerial)))
	}
	return strings.Join(lines, "\n")
}

func countFlagged(p *tfplan.Summary) int {
	n := 0
	for _, c := range p.Changes {
		if len(c.Flags) > 0 {
			n++
		}
	}
	return n
}

func (m Model) approvalsLine() string {
	th, ch := m.Theme, m.check
	s := th.Label.Render(fmt.Sprintf("Approvals %d/%d", len(ch.Counted), ch.Required))
	if ch.Required == 0 {
		s = th.Label.Render("Approvals: none required")
	}
	for _, a := range ch.Counted {
		s += " " + th.OK.Render(theme.IconSucceeded+" "+a.Approver)
	}
	names := make([]string, 0, len(ch.Ignored))
	for n := range ch.Ignored {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s += " " + th.Muted.Render(n+" not counted: "+ch.Ignored[n])
	}
	return s
}

// maxCustodyLines bounds the state custody block of the header.
const maxCustodyLines = 3

// custodyLines say each custody finding that is not information alone,
// then where the plan's state lives with the backend's documentation
// (docs/CUSTODY.md explains each finding): one line each, most serious
// first, at most maxCustodyLines; relcap plan prints them all in full.
func (m Model) custodyLines() []string {
	th := m.Theme
	var parts []string
	state := ""
	for _, f := range custody.Of(m.plan.Findings) {
		docs := ""
		if d := f.Fact("docs"); d != "" {
			docs = " · " + d
		}
		switch f.Severity {
		case finding.Info:
			if f.Code == custody.CodeBackend {
				state = th.Label.Render("State") + " " + th.Muted.Render(strings.TrimPrefix(f.Message, "state in ")+docs)
			}
		case finding.Blocker:
			parts = append(parts, th.Err.Render(theme.IconBlocker+" "+f.Code+": "+f.Message)+th.Muted.Render(" · next: "+f.NextAction+docs))
		default:
			// An accepted finding says so first: the reason is what a
			// narrow screen must not cut off.
			if why := f.Fact("accepted"); why != "" {
				parts = append(parts, th.Warn.Render(theme.IconWarning+" "+f.Code+" accepted: "+why)+th.Muted.Render(" · "+f.Message+docs))
				continue
			}
			parts = append(parts, th.Warn.Render(theme.IconWarning+" "+f.Code+": "+f.Message)+th.Muted.Render(docs))
		}
	}
	if state != "" {
		parts = append(parts, state)
	}
	if len(parts) > maxCustodyLines {
		more := len(parts) - (maxCustodyLines - 1)
		parts = append(parts[:maxCustodyLines-1], th.Muted.Render(fmt.Sprintf("… %d more about the state's custody: relcap plan --env %s prints them all", more, m.plan.Env)))
	}
	w := max(10, m.Width)
	for i, p := range parts {
		parts[i] = ansi.Truncate(p, w, "…")
	}
	return parts
}

// stateLines is stateLine wrapped to the width, at most maxStateLines.
func (m Model) stateLines() []string {
	lines := strings.Split(ansi.Wrap(m.stateLine(), max(10, m.Width), " "), "\n")
	if len(lines) > maxStateLines {
		lines = lines[:maxStateLines]
	}
	return lines
}

// stateLine says what the plan waits for and which key acts on it.
func (m Model) stateLine() string {
	th := m.Theme
	switch {
	case m.confirming:
		c := m.plan.Counts
		return th.Err.Render(fmt.Sprintf("Apply plan %s? It deletes %d and replaces %d resource(s). ", workflow.ShortHash(m.fp), c.Delete, c.ReplaceDeleteFirst+c.ReplaceCreateFirst)) +
			th.Key.Render("y") + " apply  " + th.Key.Render("n") + " not now"
	case m.approving:
		return th.Muted.Render("recording approval…")
	case m.approveErr != nil:
		return th.Err.Render(errText(m.approveErr))
	case m.Running():
		return th.Step.Running.Render(theme.IconRunning + " the release is running")
	case m.reviewOnly && m.plan.AppliedAt.IsZero():
		missing := m.check.Missing()
		if ok, _ := m.canApprove(); ok && missing > 0 {
			return th.Warn.Render(fmt.Sprintf("%s needs %d more approval(s). ", theme.IconBlocked, missing)) +
				th.Key.Render("a") + " approve as " + m.port.Actor() + th.Muted.Render(" (signed); the captain's release continues once it is given")
		} else if ok {
			return th.Key.Render("a") + " approve as " + m.port.Actor() + th.Muted.Render(" (signed)")
		} else if missing > 0 {
			_, why := m.canApprove()
			return th.Warn.Render(fmt.Sprintf("%s needs %d more approval(s): ", theme.IconBlocked, missing)) + why
		}
		return th.OK.Render(theme.IconSucceeded+" approved") + th.Muted.Render(": the captain applies it from their cockpit; q closes this review")
	case m.blocked():
		missing := m.check.Missing()
		if ok, why := m.canApprove(); ok {
			return th.Warn.Render(fmt.Sprintf("%s needs %d more approval(s). ", theme.IconBlocked, missing)) +
				th.Key.Render("a") + " approve as " + m.port.Actor() + ", then " + th.Key.Render("enter") + " apply and continue"
		} else if missing > 0 {
			return th.Warn.Render(fmt.Sprintf("%s needs %d more approval(s): ", theme.IconBlocked, missing)) + why + th.Muted.Render("; the release continues once it is given")
		}
		return th.OK.Render("approved: ") + th.Key.Render("enter") + " apply and continue"
	case m.reviewPending() && m.plan.Destructive():
		return th.Warn.Render("Reviewed and approved. This plan deletes or replaces resources: ") + th.Key.Render("enter") + " apply (asks to confirm)"
	case m.reviewPending():
		return th.OK.Render("Reviewed and approved. ") + th.Key.Render("enter") + " apply this plan and continue"
	case m.applyFailed():
		// The step's first line is the next safe action; Terraform's
		// error is in the log pane and on the map.
		first, _, _ := strings.Cut(m.Release().Step(workflow.StepApply).Message, "\n")
		return th.Err.Render(theme.IconFailed+" "+first) + th.Muted.Render(" · ") + th.Key.Render("r") + " plans again"
	case !m.plan.AppliedAt.IsZero():
		return th.OK.Render(theme.IconSucceeded + " applied " + m.plan.AppliedAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	return th.Muted.Render("fingerprint " + m.plan.Fingerprint)
}

// actionGlyph is the one-column sign Terraform users know.
func actionGlyph(a tfplan.Action) string {
	switch a {
	case tfplan.ActionCreate:
		return "+"
	case tfplan.ActionUpdate:
		return "~"
	case tfplan.ActionDelete:
		return "-"
	case tfplan.ActionReplaceDeleteFirst, tfplan.ActionReplaceCreateFirst:
		return "±"
	case tfplan.ActionRead:
		return "<"
	}
	return " "
}

func (m Model) actionStyle(a tfplan.Action) func(...string) string {
	switch {
	case a.Destructive():
		return m.Theme.Err.Render
	case a == tfplan.ActionCreate:
		return m.Theme.OK.Render
	case a == tfplan.ActionUpdate:
		return m.Theme.Warn.Render
	}
	return m.Theme.Muted.Render
}

// list renders the column header and the visible window of rows.
func (m Model) list() string {
	th := m.Theme
	w := m.listWidth()
	const actionW = 8
	flagsW := min(28, max(10, w/4))
	addrW := max(10, w-2-2-actionW-1-flagsW)
	var b strings.Builder
	b.WriteString(th.Label.Render(fmt.Sprintf("    %-*s %-*s %s", actionW, "ACTION", addrW, "RESOURCE", "FLAGS")))
	if len(m.rows) == 0 {
		b.WriteString("\n" + th.Muted.Render("  no change matches"))
		return b.String()
	}
	end := min(len(m.rows), m.offset+m.listHeight())
	for i := m.offset; i < end; i++ {
		c, drift := m.row(i)
		b.WriteString("\n")
		glyph, act, style := actionGlyph(c.Action), shortAction(c.Action), m.actionStyle(c.Action)
		flags := strings.Join(c.Flags, ",")
		if drift != nil {
			// Changed outside Terraform: not this plan's change, but what
			// the apply writes back.
			glyph, act, style, flags = "≈", "drift", th.Warn.Render, "outside terraform"
		}
		row := fmt.Sprintf("%s %-*s %-*s ", glyph, actionW, act, addrW, clip(c.Address, addrW))
		if i == m.cursor {
			b.WriteString(th.Selected.Render(screen.Line(theme.IconCursor+" "+row+clip(flags, flagsW), w)))
			continue
		}
		b.WriteString("  " + style(row) + th.Warn.Render(clip(flags, flagsW)))
	}
	return b.String()
}

func shortAction(a tfplan.Action) string {
	switch a {
	case tfplan.ActionReplaceDeleteFirst:
		return "replace!"
	case tfplan.ActionReplaceCreateFirst:
		return "replace"
	}
	return string(a)
}

// clip cuts plain text to n cells with an ellipsis; addresses are ASCII,
// so byte length is width.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 1 {
		return s[:n]
	}
	return s[:n-1] + "…"
}

// detail renders the selected change: action, flags, what forces
// replacement and the attribute diff. Values arrive masked from the
// domain; Sensitive ones are shown as tfplan.SensitiveMask regardless.
func (m Model) detail(w int) string {
	th := m.Theme
	if len(m.rows) == 0 {
		return th.Muted.Render("select a change to see its attributes")
	}
	c, drift := m.row(m.cursor)
	lines := []string{m.actionStyle(c.Action)(actionGlyph(c.Action)+" "+c.Address) + th.Muted.Render(" · "+string(c.Action))}
	if drift != nil {
		lines = []string{th.Warn.Render("≈ "+c.Address) + th.Muted.Render(" · changed outside Terraform since the last apply; this apply writes it back")}
		if o := drift.Object; o != nil {
			lines = append(lines, th.Label.Render("object ")+strings.TrimPrefix(o.Group+"/", "/")+o.Kind+" "+strings.TrimPrefix(o.Namespace+"/", "/")+o.Name)
		}
	}
	if len(c.Flags) > 0 {
		lines = append(lines, th.Warn.Render("risk: "+strings.Join(c.Flags, ", ")))
	}
	if len(c.ReplacePaths) > 0 {
		lines = append(lines, th.Err.Render("forces replacement: "+strings.Join(c.ReplacePaths, ", ")))
	}
	if len(c.Attributes) == 0 {
		lines = append(lines, th.Muted.Render("no attribute changes recorded"))
	}
	pathW := 0
	for _, a := range c.Attributes {
		pathW = max(pathW, len(a.Path))
	}
	pathW = min(pathW, max(8, w/3))
	for _, a := range c.Attributes {
		before, after := value(a.Before, a.Sensitive, false), value(a.After, a.Sensitive, a.Unknown)
		line := "  " + th.Label.Render(fmt.Sprintf("%-*s", pathW, clip(a.Path, pathW))) + " " +
			th.DiffDel.Render(before) + th.Muted.Render(" → ") + th.DiffAdd.Render(after)
		lines = append(lines, line)
	}
	return ansi.Wrap(strings.Join(lines, "\n"), w, " ")
}

func value(v string, sensitive, unknown bool) string {
	switch {
	case sensitive:
		return tfplan.SensitiveMask
	case unknown:
		return "(known after apply)"
	case v == "":
		return "null"
	}
	return v
}

// revOrNone abbreviates a revision; "(none)" when the plan names none.
func revOrNone(rev string) string {
	if rev == "" {
		return "(none)"
	}
	return workflow.ShortHash(rev)
}

// logHeight is the log pane's height: what the header leaves, or the whole
// screen but the title while planning.
func (m Model) logHeight() int {
	if m.plan == nil {
		return max(1, m.Height-2)
	}
	return max(1, m.Height-(strings.Count(m.header(), "\n")+1))
}
