package tui

import "time"

// effortTimer is the captain's active effort as the status bar shows it:
// time between two key presses counts when the gap is within the idle
// threshold, and a longer gap counts as nothing, the rule the Service's
// EffortClock applies to what it stores. The ledger's number comes from
// Service.Touch; this is its live display, paused while the captain is away.
type effortTimer struct {
	idle   time.Duration
	active time.Duration
	last   time.Time
}

// touch records input at now.
func (e *effortTimer) touch(now time.Time) {
	if !e.last.IsZero() {
		if gap := now.Sub(e.last); gap > 0 && gap <= e.idle {
			e.active += gap
		}
	}
	if now.After(e.last) {
		e.last = now
	}
}

// total is the active effort at now, counting the current gap while it is
// still within the threshold.
func (e effortTimer) total(now time.Time) time.Duration {
	if e.last.IsZero() {
		return e.active
	}
	if gap := now.Sub(e.last); gap > 0 && gap <= e.idle {
		return e.active + gap
	}
	return e.active
}

// paused reports whether the captain has been idle past the threshold.
func (e effortTimer) paused(now time.Time) bool {
	return !e.last.IsZero() && now.Sub(e.last) > e.idle
}
