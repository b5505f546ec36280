package effort

import (
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

	mu     sync.Mutex
	clocks map[string]*Clock
}

// NewTracker tracks person's effort with clock's time and the idle
// threshold idle.
func NewTracker(clock TimeSource, idle time.Duration, person string) *Tracker {
	return &Tracker{clock: clock, idle: idle, person: person, clocks: map[string]*Clock{}}
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

// Live is the person's effort on a release in this process so far, as a
// status bar shows it: the same clock the Service stores.
type Live struct {
	Active time.Duration
	Idle   bool // not engaged now: idle past the threshold or unfocused
	Inputs int
}

// Live reads the person's clock of a release.
func (t *Tracker) Live(releaseID string) Live {
	c := t.of(releaseID)
	return Live{Active: c.Active(t.person), Idle: c.Idle(t.person), Inputs: c.Inputs(t.person)}
}

// Drain returns the entries measured on a release since the last Drain.
func (t *Tracker) Drain(releaseID string) []Entry { return t.of(releaseID).Drain() }

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
