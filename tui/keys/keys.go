// Package keys is the cockpit's key map, grouped by area. Screens match
// keys only with key.Matches against these bindings, and disable the ones
// that do not apply, so the on-screen help never offers a dead key.
package keys

import "charm.land/bubbles/v2/key"

// Map is every binding of the cockpit.
type Map struct {
	Global    Global
	List      List
	Plan      Plan
	Ownership Ownership
	Promote   Promote
	Home      Home
}

// Home keys act on the decision map's release.
type Home struct {
	// Abandon ends the release as abandoned, after a reason and a
	// confirmation.
	Abandon key.Binding
}

// Global keys work on every screen (unless a screen is capturing text).
type Global struct {
	Quit       key.Binding
	Help       key.Binding
	Map        key.Binding
	Resume     key.Binding
	NextScreen key.Binding
	PrevScreen key.Binding
	Ownership  key.Binding
	Plan       key.Binding
	Promotion  key.Binding
	Converge   key.Binding
	Effort     key.Binding
}

// List keys move a cursor or scroll, on every screen with a list.
type List struct {
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding
	Open     key.Binding
}

// Plan keys act on the plan review.
type Plan struct {
	Filter      key.Binding
	ClearFilter key.Binding
	ApplyFilter key.Binding
	Approve     key.Binding
	Continue    key.Binding
	Confirm     key.Binding
	Cancel      key.Binding
	// Log toggles Terraform's output (init, plan, apply) in place of the
	// list of changes.
	Log key.Binding
}

// Promote keys act on the promotion.
type Promote struct {
	Approve key.Binding
}

// Ownership keys act on the ownership check.
type Ownership struct {
	// Matrix toggles the resource × owner × fields matrix, read live.
	Matrix key.Binding
}

// Default returns the standard key map.
func Default() Map {
	return Map{
		Global: Global{
			Quit:       key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit (resumable)")),
			Help:       key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
			Map:        key.NewBinding(key.WithKeys("m", "esc"), key.WithHelp("m/esc", "decision map")),
			Resume:     key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "resume run")),
			NextScreen: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next screen")),
			PrevScreen: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous screen")),
			Ownership:  key.NewBinding(key.WithKeys("1"), key.WithHelp("1", "ownership")),
			Plan:       key.NewBinding(key.WithKeys("2"), key.WithHelp("2", "plan")),
			Promotion:  key.NewBinding(key.WithKeys("3"), key.WithHelp("3", "promotion")),
			Converge:   key.NewBinding(key.WithKeys("4"), key.WithHelp("4", "convergence")),
			Effort:     key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "effort report")),
		},
		List: List{
			Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
			Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
			PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
			PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d", "space"), key.WithHelp("pgdn", "page down")),
			Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "top")),
			Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "bottom")),
			Open:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open step")),
		},
		Plan: Plan{
			Filter:      key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
			ClearFilter: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
			ApplyFilter: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "keep filter")),
			Approve:     key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve plan")),
			Continue:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply & continue")),
			Confirm:     key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes, apply")),
			Cancel:      key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n", "no")),
			Log:         key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "terraform log")),
		},
		Promote: Promote{
			Approve: key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve promotion")),
		},
		Home: Home{
			Abandon: key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "abandon release")),
		},
		Ownership: Ownership{
			Matrix: key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "ownership matrix")),
		},
	}
}
