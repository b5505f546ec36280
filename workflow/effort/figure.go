package effort

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Figure is a release's effort at one instant: every view of it (the
// cockpit's status bar, decision map, effort screen and exit summary) reads
// this, computed by Tally from what the ledger holds plus what a clock has
// measured and not stored yet. No view keeps a clock of its own.
type Figure struct {
	Totals
	// Rows are the figures per person, role, step and kind, in a stable
	// order (kind, person, step).
	Rows []Row
	// Unmeasured are the person's steps relcap could not measure, each
	// with why (Entry.Note), once per person and step.
	Unmeasured []Entry
	// Idle and Inputs are the state of the person whose clock this is
	// (Tracker.Figure): not engaged now, and their key presses and clicks
	// on the release in this process.
	Idle   bool
	Inputs int
}

// Row is one person's (or, for machine wait, no one's) time on one step.
type Row struct {
	Person   string
	Role     Role
	Step     string
	Kind     Kind
	Duration time.Duration
	Inputs   int
}

// Tally is the one function from effort entries to a figure: stored and
// unstored entries of a release go in together, and the same entries give
// the same figure wherever it is shown.
func Tally(entries ...[]Entry) Figure {
	var f Figure
	rows := map[effortKey]*Row{}
	unmeasured := map[[2]string]bool{}
	for _, es := range entries {
		for _, e := range es {
			if e.Kind == Unmeasured {
				if k := [2]string{e.Person, e.Step}; !unmeasured[k] {
					unmeasured[k] = true
					f.Unmeasured = append(f.Unmeasured, e)
				}
				continue
			}
			f.Totals = f.Totals.add(e)
			k := effortKey{e.Person, e.Role, e.Step, e.Kind}
			r, ok := rows[k]
			if !ok {
				r = &Row{Person: e.Person, Role: e.Role, Step: e.Step, Kind: e.Kind}
				rows[k] = r
			}
			r.Duration += e.Duration
			r.Inputs += e.Inputs
		}
	}
	for _, r := range rows {
		f.Rows = append(f.Rows, *r)
	}
	slices.SortFunc(f.Rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Person, b.Person), cmp.Compare(a.Step, b.Step), cmp.Compare(a.Role, b.Role))
	})
	slices.SortFunc(f.Unmeasured, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Person, b.Person), cmp.Compare(a.Step, b.Step))
	})
	return f
}

// Of is person's active time on step in the figure.
func (f Figure) Of(person, step string) time.Duration {
	var d time.Duration
	for _, r := range f.Rows {
		if r.Kind == Active && r.Person == person && r.Step == step {
			d += r.Duration
		}
	}
	return d
}

// Format writes an effort figure the one way every view writes it: whole
// seconds (rounded half up), as 42s, 3m05s or 1h02m00s.
func Format(d time.Duration) string {
	d = max(0, d.Round(time.Second))
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}
