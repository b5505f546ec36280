package effort

import (
	"slices"
	"sync"
	"time"
)

// Tracker is the effort clocks a UI feeds for the person at it, one per
// release: signs of engagement (focus, key presses, the step the screen
// follows) become active time within the idle threshold. The Service that
// stores the measured time holds one (Service.Tracker) and drains it into
// the ledger; the UI only feeds and reads it.
type Tracker struct {
	clock  TimeSource
	idle   time.Duration
	person string

	// syncing makes a store and the ledger read after it (Sync) one step.
	syncing sync.Mutex
	mu      sync.Mutex
	clocks  map[string]*Clock
	// stored is what the ledger holds of each release, as far as this
	// process knows: read by Stored, grown by Recorded.
	stored map[string][]Entry
}

// NewTracker tracks person's effort with clock's time and the idle
// threshold idle.
func NewTracker(clock TimeSource, idle time.Duration, person string) *Tracker {
	return &Tracker{clock: clock, idle: idle, person: person, clocks: map[string]*Clock{}, stored: map[string][]Entry{}}
}

// Touch records that the person is engaged with step of a release in
// role: call it when the terminal gains focus.
func (t *Tracker) Touch(releaseID string, role Role, step string) {
	t.of(releaseID).Touch(t.person, role, step)
}

// Input is Touch for a key press or a mouse click, which is also counted.
func (t *Tracker) Input(releaseID string, role Role, step string) {
	t.of(releaseID).Input(t.person, role, step)
}

// Follow books the person's time from now on to step, where the release
// went on without their input (the UI shows the new step).
func (t *Tracker) Follow(releaseID, step string) { t.of(releaseID).Follow(t.person, step) }

// Pause stops the person's clock (the terminal lost focus) until their
// next Touch or Input.
func (t *Tracker) Pause(releaseID string) { t.of(releaseID).Pause(t.person) }

// Figure is the release's effort now: what the ledger holds (Stored,
// Drain) plus what this process measured and has not stored yet, the
// person's running interval included, by the one function Tally. Every
// view shows this, so two views read at one instant agree, and what a
// Drain stores at that instant leaves it unchanged.
func (t *Tracker) Figure(releaseID string) Figure {
	c := t.of(releaseID)
	t.mu.Lock()
	f := Tally(t.stored[releaseID], c.Unstored()) // under t.mu: no Drain moves entries meanwhile
	t.mu.Unlock()
	f.Idle, f.Inputs = c.Idle(t.person), c.Inputs(t.person)
	return f
}

// Stored sets what the ledger holds of a release, read after this
// process's measured time was drained into it.
func (t *Tracker) Stored(releaseID string, entries []Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stored[releaseID] = slices.Clone(entries)
}

// Sync stores what was measured on a release since the last Drain
// (store) and then, when read is given, takes what the ledger holds of it
// (read) as its stored part, returning that: one step, so two Syncs never
// interleave a store with a read. A failed store is returned, and the
// figure keeps its entries until a read brings it back to the ledger's.
func (t *Tracker) Sync(releaseID string, store func([]Entry) error, read func() ([]Entry, error)) ([]Entry, error) {
	t.syncing.Lock()
	defer t.syncing.Unlock()
	if entries := t.Drain(releaseID); len(entries) > 0 {
		if err := store(entries); err != nil {
			return nil, err
		}
	}
	if read == nil {
		return nil, nil
	}
	entries, err := read()
	if err != nil {
		return nil, err
	}
	t.Stored(releaseID, entries)
	return entries, nil
}

// Drain returns the entries measured on a release since the last Drain,
// for the caller to store, and counts them as stored from now on: the
// figure does not change across a Drain. A caller that fails to store them
// says so (the Service journals effort.lost) and reads the ledger again
// with Stored.
func (t *Tracker) Drain(releaseID string) []Entry {
	c := t.of(releaseID)
	t.mu.Lock()
	defer t.mu.Unlock()
	out := c.Drain()
	t.stored[releaseID] = append(t.stored[releaseID], out...)
	return out
}

// of is the clock of a release, made on first use.
func (t *Tracker) of(releaseID string) *Clock {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.clocks[releaseID]
	if !ok {
		c = NewClock(t.clock, t.idle, releaseID)
		t.clocks[releaseID] = c
	}
	return c
}
