// Package theme is the only place the cockpit defines styles and colours.
// Screens ask for semantic styles (OK, Warn, Err, Muted, a step status)
// and never create colours, so light/dark switching and NO_COLOR are
// handled here and by the renderer.
package theme

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/finding"
)

// Icons are single-cell glyphs, so columns line up in every terminal.
const (
	IconPending   = "○"
	IconRunning   = "◐"
	IconSucceeded = "✓"
	IconFailed    = "✗"
	IconBlocked   = "■"
	IconSkipped   = "–"
	IconCursor    = "›"
	IconBlocker   = "✗"
	IconWarning   = "!"
	IconInfo      = "·"
)

// Theme holds every style the cockpit uses.
type Theme struct {
	IsDark bool

	Base   lipgloss.Style
	Title  lipgloss.Style
	Header lipgloss.Style // the top line: product and screen name
	Label  lipgloss.Style // "Fingerprint:", "Digest:"
	Muted  lipgloss.Style
	Accent lipgloss.Style
	OK     lipgloss.Style
	Warn   lipgloss.Style
	Err    lipgloss.Style
	// Selected is the cursor row of a list.
	Selected lipgloss.Style
	// Key renders a key name inside prose ("press a to approve").
	Key lipgloss.Style
	// Box frames a pane; Width includes its border and padding.
	Box lipgloss.Style
	// Status is the status bar; StatusItem one of its segments.
	Status     lipgloss.Style
	StatusItem lipgloss.Style
	// DiffAdd and DiffDel colour environment-repo and attribute diffs.
	DiffAdd lipgloss.Style
	DiffDel lipgloss.Style

	Step StepStyles
	Help help.Styles

	// ProgressFull and ProgressEmpty colour the promotion progress bar.
	ProgressFull  color.Color
	ProgressEmpty color.Color
}

// StepStyles colours a step by its status.
type StepStyles struct {
	Pending, Running, Succeeded, Failed, Blocked, Skipped lipgloss.Style
}

// New builds the theme for a dark or light background.
func New(isDark bool) Theme {
	ld := lipgloss.LightDark(isDark)
	var (
		fg     = ld(lipgloss.Color("#1F1F1F"), lipgloss.Color("#E4E4E4"))
		muted  = ld(lipgloss.Color("#6B6B6B"), lipgloss.Color("#8A8A8A"))
		accent = ld(lipgloss.Color("#5B3FD9"), lipgloss.Color("#A593FF"))
		green  = ld(lipgloss.Color("#1D7A38"), lipgloss.Color("#5FD787"))
		yellow = ld(lipgloss.Color("#8A5A00"), lipgloss.Color("#F2C14E"))
		red    = ld(lipgloss.Color("#B3261E"), lipgloss.Color("#FF6B6B"))
		blue   = ld(lipgloss.Color("#0B5CAD"), lipgloss.Color("#6CB6FF"))
		selBg  = ld(lipgloss.Color("#E3DDFF"), lipgloss.Color("#3A3357"))
		barBg  = ld(lipgloss.Color("#E6E6E6"), lipgloss.Color("#262626"))
		border = ld(lipgloss.Color("#BDBDBD"), lipgloss.Color("#4A4A4A"))
	)
	base := lipgloss.NewStyle().Foreground(fg)
	t := Theme{
		IsDark:     isDark,
		Base:       base,
		Title:      lipgloss.NewStyle().Foreground(accent).Bold(true),
		Header:     lipgloss.NewStyle().Foreground(accent).Bold(true),
		Label:      lipgloss.NewStyle().Foreground(muted),
		Muted:      lipgloss.NewStyle().Foreground(muted),
		Accent:     lipgloss.NewStyle().Foreground(accent),
		OK:         lipgloss.NewStyle().Foreground(green),
		Warn:       lipgloss.NewStyle().Foreground(yellow),
		Err:        lipgloss.NewStyle().Foreground(red).Bold(true),
		Selected:   lipgloss.NewStyle().Background(selBg).Foreground(fg).Bold(true),
		Key:        lipgloss.NewStyle().Foreground(accent).Bold(true),
		Box:        lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(border).Padding(0, 1),
		Status:     lipgloss.NewStyle().Background(barBg).Foreground(fg),
		StatusItem: lipgloss.NewStyle().Background(barBg).Foreground(fg).Padding(0, 1),
		DiffAdd:    lipgloss.NewStyle().Foreground(green),
		DiffDel:    lipgloss.NewStyle().Foreground(red),
		Step: StepStyles{
			Pending:   lipgloss.NewStyle().Foreground(muted),
			Running:   lipgloss.NewStyle().Foreground(blue).Bold(true),
			Succeeded: lipgloss.NewStyle().Foreground(green),
			Failed:    lipgloss.NewStyle().Foreground(red).Bold(true),
			Blocked:   lipgloss.NewStyle().Foreground(yellow).Bold(true),
			Skipped:   lipgloss.NewStyle().Foreground(muted).Faint(true),
		},
		Help:          help.DefaultStyles(isDark),
		ProgressFull:  accent,
		ProgressEmpty: border,
	}
	return t
}

// StepStyle is the style of a step status.
func (t Theme) StepStyle(s workflow.StepStatus) lipgloss.Style {
	switch s {
	case workflow.Running:
		return t.Step.Running
	case workflow.Succeeded:
		return t.Step.Succeeded
	case workflow.Failed:
		return t.Step.Failed
	case workflow.Blocked:
		return t.Step.Blocked
	case workflow.Skipped:
		return t.Step.Skipped
	}
	return t.Step.Pending
}

// StepIcon is the glyph of a step status.
func StepIcon(s workflow.StepStatus) string {
	switch s {
	case workflow.Running:
		return IconRunning
	case workflow.Succeeded:
		return IconSucceeded
	case workflow.Failed:
		return IconFailed
	case workflow.Blocked:
		return IconBlocked
	case workflow.Skipped:
		return IconSkipped
	}
	return IconPending
}

// SeverityStyle colours a finding by severity.
func (t Theme) SeverityStyle(s finding.Severity) lipgloss.Style {
	switch s {
	case finding.Blocker:
		return t.Err
	case finding.Warning:
		return t.Warn
	}
	return t.Muted
}

// SeverityIcon is the glyph of a finding's severity.
func SeverityIcon(s finding.Severity) string {
	switch s {
	case finding.Blocker:
		return IconBlocker
	case finding.Warning:
		return IconWarning
	}
	return IconInfo
}

// HealthStyle colours an Argo CD health status.
func (t Theme) HealthStyle(h appstate.HealthStatus) lipgloss.Style {
	switch h {
	case appstate.HealthHealthy:
		return t.OK
	case appstate.HealthDegraded, appstate.HealthMissing:
		return t.Err
	case appstate.HealthProgressing, appstate.HealthSuspended:
		return t.Warn
	}
	return t.Muted
}

// SyncStyle colours an Argo CD sync status.
func (t Theme) SyncStyle(s appstate.SyncStatus) lipgloss.Style {
	switch s {
	case appstate.SyncSynced:
		return t.OK
	case appstate.SyncOutOfSync:
		return t.Warn
	}
	return t.Muted
}

// OperationStyle colours an Argo CD operation phase.
func (t Theme) OperationStyle(p appstate.OperationPhase) lipgloss.Style {
	switch p {
	case appstate.OperationSucceeded:
		return t.OK
	case appstate.OperationFailed, appstate.OperationError:
		return t.Err
	case appstate.OperationRunning:
		return t.Warn
	}
	return t.Muted
}
