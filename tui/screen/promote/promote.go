// Package promote is the decision stage's screen: the resolved digest, its
// platforms and provenance, copy/pin/land progress, and the environment
// repository diff before it lands.
package promote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/progress"
	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
)

// Port is what the promotion screen needs of the workflow;
// *workflow.Service implements it.
type Port interface {
	ApproveRelease(ctx context.Context, releaseID, comment string) (approval.Approval, approval.Check, error)
	MayApprove(env string, kind approval.Kind, author string) error
	Actor() string
}

var _ Port = (*workflow.Service)(nil)

// Model is the promotion screen.
type Model struct {
	screen.Base[keys.Map]
	port     Port
	progress string
	bar      progress.Model

	approving  bool
	approveErr error
	offset     int
}

// releaseApprovedMsg is the result of approving the release's promotion.
type releaseApprovedMsg struct {
	id    string
	check approval.Check
	err   error
}

// New returns the promotion screen.
func New(port Port, th theme.Theme, km keys.Map) Model {
	m := Model{Base: screen.NewBase(th, km), port: port}
	m.SetTheme(th)
	return m
}

// barWidth leaves room beside the bar for the four phase marks.
func barWidth(w int) int { return min(40, max(12, w-44)) }

// Init does nothing.
func (m Model) Init() tea.Cmd { return nil }

// SetSize sets the area the screen draws in.
func (m *Model) SetSize(w, h int) {
	m.Base.SetSize(w, h)
	m.bar.SetWidth(barWidth(w))
}

// SetTheme switches styles after the background colour is known.
func (m *Model) SetTheme(th theme.Theme) {
	m.Base.SetTheme(th)
	// A static bar (ViewAs) driven by checkpoints: no animation frames, so
	// goldens and recordings are deterministic.
	m.bar = progress.New(progress.WithColors(th.ProgressFull), progress.WithWidth(barWidth(m.Width)))
	m.bar.EmptyColor = th.ProgressEmpty
}

// Update handles messages.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	m.Observe(msg)
	switch msg := msg.(type) {
	case screen.RunStateMsg:
		if msg.Running {
			m.approveErr = nil
		}
	case screen.EventMsg:
		e := msg.Event
		if e.Step == workflow.StepPromotion {
			switch e.Kind {
			case workflow.EventStepProgress:
				m.progress = e.Message
			case workflow.EventStepFinished:
				m.progress = ""
			}
		}
	case releaseApprovedMsg:
		m.approving = false
		m.approveErr = msg.err
		if msg.err == nil {
			note := fmt.Sprintf("approved the promotion as %s (%d/%d)", m.port.Actor(), len(msg.check.Counted), msg.check.Required)
			return m, func() tea.Msg { return screen.NoticeMsg{Text: note} }
		}
	case tea.KeyPressMsg:
		if key.Matches(msg, m.Keys.Promote.Approve) {
			if ok, why := m.canApprove(); !ok {
				return m, func() tea.Msg { return screen.NoticeMsg{Text: why, Err: true} }
			}
			m.approving, m.approveErr = true, nil
			return m, m.approveRelease()
		}
		m.offset = screen.ScrollKeys(msg, m.Keys.List, m.offset, 0)
	}
	return m, nil
}

// approveRelease records the actor's approval of this release's promotion.
func (m Model) approveRelease() tea.Cmd {
	port, id := m.port, m.Release().ID
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, check, err := port.ApproveRelease(ctx, id, "approved in the relcap cockpit")
		return releaseApprovedMsg{id: id, check: check, err: err}
	}
}

// waitsForApproval reports whether the run stopped for promotion approvals.
func (m Model) waitsForApproval() bool {
	return m.Release() != nil && !m.Running() && m.Release().Step(workflow.StepPromotion).Status == workflow.Blocked &&
		errors.Is(m.RunErr(), fault.ErrApprovalRequired) && !errors.Is(m.RunErr(), fault.ErrAwaitingForge)
}

// waitsForForge reports whether the run stopped for reviews or a merge on
// the forge; the cockpit re-runs it by itself.
func (m Model) waitsForForge() bool {
	return m.Release() != nil && !m.Running() && m.Release().Step(workflow.StepPromotion).Status == workflow.Blocked &&
		errors.Is(m.RunErr(), fault.ErrAwaitingForge)
}

// Busy is what the screen is doing that its keys wait for, if anything.
func (m Model) Busy() string {
	if m.approving {
		return "recording the approval"
	}
	return ""
}

func (m Model) canApprove() (bool, string) {
	switch {
	case m.Release() == nil:
		return false, "no release yet"
	case !m.waitsForApproval():
		return false, "the promotion is not waiting for an approval"
	case m.approving:
		return false, "approving…"
	}
	if m.port.MayApprove(m.Release().Env, approval.Promotion, m.Release().Captain) != nil {
		return false, fmt.Sprintf("%s captains this release and %s needs another approver: relcap approve --release %s --actor OTHER", m.port.Actor(), m.Release().Env, m.Release().ID)
	}
	return true, ""
}

// ShortHelp is the one-line help of the screen.
func (m Model) ShortHelp() []key.Binding {
	a := m.Keys.Promote.Approve
	ok, _ := m.canApprove()
	a.SetEnabled(ok)
	return []key.Binding{m.Keys.List.Up, m.Keys.List.Down, a}
}

// FullHelp is the full help of the screen.
func (m Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{append(m.ShortHelp(), m.Keys.List.Top)}
}

// phases are the checkpoints of a promotion, in order.
var phases = []struct {
	done  func(workflow.Checkpoints) bool
	label string
}{
	{func(c workflow.Checkpoints) bool { return !c.Digest.IsZero() }, "resolve"},
	{func(c workflow.Checkpoints) bool { return c.CopiedTo != "" }, "copy"},
	{func(c workflow.Checkpoints) bool { return c.EnvPinned != "" }, "pin"},
	{workflow.Checkpoints.Landed, "land"},
}

// View renders the promotion.
func (m Model) View() string {
	if !m.Sized() {
		return ""
	}
	th := m.Theme
	if m.Release() == nil {
		return m.Fit(th.Title.Render("Digest promotion") + "\n\n" + th.Muted.Render("waiting for the release…"))
	}
	r := m.Release()
	st := r.Step(workflow.StepPromotion)
	lines := []string{th.Title.Render("Digest promotion") + th.Muted.Render(" · decision stage · "+r.Image+" → "+r.Env)}
	// The step's message says what it waits for, with the pull request's
	// address and the forge's reason: wrapped, not cut at the edge.
	label := th.StepStyle(st.Status).Render(theme.StepIcon(st.Status) + " " + st.Status.String())
	if m.waitsForForge() {
		// Blocked for the ledger, but nothing is wrong: someone on the
		// forge is to act, and the cockpit goes on by itself.
		label = th.Warn.Render(theme.IconRunning + " waiting:")
	}
	msg := st.Message
	if m.progress != "" && st.Status == workflow.Running {
		msg = m.progress
	}
	if msg == "" {
		lines = append(lines, label)
	} else {
		indent := ansi.StringWidth(label) + 1
		for i, l := range screen.Wrap(msg, max(20, m.Width-indent)) {
			if i == 0 {
				lines = append(lines, label+" "+th.Muted.Render(l))
			} else {
				lines = append(lines, strings.Repeat(" ", indent)+th.Muted.Render(l))
			}
		}
	}

	done := 0
	var marks []string
	for _, p := range phases {
		if p.done(r.Checkpoints) {
			done++
			marks = append(marks, th.OK.Render(theme.IconSucceeded+" "+p.label))
		} else {
			marks = append(marks, th.Muted.Render(theme.IconPending+" "+p.label))
		}
	}
	lines = append(lines, m.bar.ViewAs(float64(done)/float64(len(phases)))+"  "+strings.Join(marks, " "))
	lines = append(lines, m.action()...)
	lines = append(lines, "")

	digest := r.Checkpoints.Digest.String()
	lines = append(lines, th.Label.Render("Digest     ")+orNone(th, digest))
	if resolved, _, ok := evidence.Of[evidence.DigestResolved](st.Evidence); ok {
		platforms := strings.Join(resolved.Platforms, ", ")
		if platforms == "" {
			// Resolved: the image's config names no OS or architecture.
			platforms = th.Muted.Render("none declared by the image")
		}
		lines = append(lines, th.Label.Render("Platforms  ")+platforms)
		lines = append(lines, th.Label.Render("Source     ")+resolved.Repository+th.Muted.Render(" · first seen "+resolved.FirstSeen.UTC().Format(time.RFC3339)))
		lines = append(lines, th.Label.Render("Provenance ")+provenance(th, resolved.Signed, resolved.Referrers, "at source"))
	}
	if verified, _, ok := evidence.Of[evidence.DigestVerified](st.Evidence); ok {
		lines = append(lines, th.Label.Render("Target     ")+verified.Repository+" "+
			provenance(th, verified.Signed, verified.Referrers, "after copy")+th.Muted.Render(fmt.Sprintf(" · %d blob(s) uploaded", verified.BlobsUploaded)))
	}
	if b := r.Checkpoints.EnvBranch; b != "" {
		line := th.Label.Render("Env repo   ") + b
		if _, pinned, ok := evidence.Of[evidence.EnvPinned](st.Evidence); ok {
			line += th.Muted.Render(" @ " + workflow.ShortHash(pinned.Subject))
		}
		if c := r.Checkpoints.EnvCommit; c != "" {
			line += th.OK.Render(" landed " + workflow.ShortHash(c))
		}
		lines = append(lines, line)
	}
	if pr := r.Checkpoints.PullRequest; pr != nil {
		lines = append(lines, pullRequestLines(th, pr, m.Width)...)
	}
	for _, f := range st.Findings {
		lines = append(lines, th.SeverityStyle(f.Severity).Render(theme.SeverityIcon(f.Severity)+" "+f.Message)+th.Muted.Render(" — "+f.NextAction))
	}
	if diff := r.Checkpoints.EnvDiff; diff != "" {
		lines = append(lines, "", th.Label.Render("Environment repo change"))
		for _, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
			switch {
			case strings.HasPrefix(l, "+"):
				l = th.DiffAdd.Render(l)
			case strings.HasPrefix(l, "-"):
				l = th.DiffDel.Render(l)
			default:
				l = th.Muted.Render(l)
			}
			lines = append(lines, "  "+l)
		}
	}
	off := min(m.offset, max(0, len(lines)-m.Height))
	return m.Fit(strings.Join(lines[off:], "\n"))
}

// action says what the promotion waits for and which key acts on it.
func (m Model) action() []string {
	th := m.Theme
	switch {
	case m.approving:
		return []string{th.Muted.Render("recording approval…")}
	case m.approveErr != nil:
		return []string{th.Err.Render(m.approveErr.Error())}
	case m.waitsForForge():
		where := "the pull request"
		if pr := m.Release().Checkpoints.PullRequest; pr != nil {
			where = fmt.Sprintf("pull request #%d (%s)", pr.Number, pr.URL)
		}
		head := theme.IconBlocked + " waiting on the forge: "
		var out []string
		for i, l := range screen.Wrap("review and merge "+where+fmt.Sprintf(" there; relcap re-checks every %s and continues once it can land", forge.PollInterval), max(20, m.Width-len([]rune(head)))) {
			if i == 0 {
				out = append(out, th.Warn.Render(head)+l)
			} else {
				out = append(out, strings.Repeat(" ", len([]rune(head)))+l)
			}
		}
		return out
	case m.waitsForApproval():
		if ok, why := m.canApprove(); ok {
			return []string{th.Warn.Render(theme.IconBlocked+" the pinned change needs approval: ") + th.Key.Render("a") + " approve as " + m.port.Actor() + th.Muted.Render("; the release continues once approved")}
		} else {
			return []string{th.Warn.Render(theme.IconBlocked+" the pinned change needs approval: ") + why + th.Muted.Render("; the release continues once it is given")}
		}
	case m.Release().Step(workflow.StepPromotion).Status == workflow.Blocked && errors.Is(m.RunErr(), fault.ErrLocked):
		return []string{th.Warn.Render(theme.IconBlocked+" another captain is promoting here (named above): ") + "wait for them or ask them, then " + th.Key.Render("r") + " resume"}
	case m.Release().Step(workflow.StepPromotion).Status == workflow.Blocked:
		return []string{th.Warn.Render(theme.IconBlocked+" blocked by policy: ") + "act on the message above, then " + th.Key.Render("r") + " resume"}
	}
	return nil
}

func provenance(th theme.Theme, signed bool, referrers int, where string) string {
	if signed {
		return th.OK.Render(theme.IconSucceeded+" signed") + th.Muted.Render(fmt.Sprintf(" (%d referrer(s) %s)", referrers, where))
	}
	return th.Warn.Render(theme.IconWarning+" unsigned") + th.Muted.Render(fmt.Sprintf(" (%d referrer(s) %s)", referrers, where))
}

func orNone(th theme.Theme, s string) string {
	if s == "" {
		return th.Muted.Render("not resolved yet")
	}
	return s
}

// pullRequestLines show the promotion's pull request: where it is, where
// it stands, and each reviewer's latest review, counted or why not.
func pullRequestLines(th theme.Theme, pr *forge.PullRequestRecord, width int) []string {
	state := string(pr.State)
	switch {
	case pr.MergeCommit != "" && pr.ByRelcap:
		state = th.OK.Render("merged by relcap at " + workflow.ShortHash(pr.MergeCommit))
	case pr.MergeCommit != "":
		by := "merged on the forge"
		if pr.MergedBy != "" {
			by += " by " + pr.MergedBy
		}
		state = th.OK.Render(by + " at " + workflow.ShortHash(pr.MergeCommit))
	case pr.State == forge.PullRequestClosed:
		state = th.Err.Render("closed without merge")
	case pr.State == forge.PullRequestOpen:
		state = th.Warn.Render("open") + th.Muted.Render(" at "+workflow.ShortHash(pr.HeadSHA))
	}
	lines := []string{th.Label.Render("Pull req.  ") + fmt.Sprintf("#%d %s ", pr.Number, pr.URL) + state}
	if len(pr.Reviews) == 0 && pr.MergeCommit == "" {
		lines = append(lines, th.Muted.Render("           no reviews yet"))
	}
	for _, v := range pr.Reviews {
		who := v.Login
		if v.Principal != v.Login {
			who += " → " + v.Principal
		}
		line := fmt.Sprintf("%s %s on %s", who, v.State, workflow.ShortHash(v.Commit))
		if v.Comment != "" {
			line += fmt.Sprintf(" %q", v.Comment)
		}
		if v.Counted {
			lines = append(lines, "           "+th.OK.Render(theme.IconSucceeded+" "+line)+th.Muted.Render(" · counted"))
		} else {
			// Why a review does not count is what the captain acts on:
			// wrapped under the review, not cut.
			for i, l := range screen.Wrap(theme.IconPending+" "+line+" · not counted: "+v.Why, max(20, width-13)) {
				if i > 0 {
					l = "  " + l
				}
				lines = append(lines, "           "+th.Muted.Render(l))
			}
		}
	}
	return lines
}
