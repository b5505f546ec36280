// Package effort measures the staff time a release costs: the effort clock
// (active effort per person and step, from signs of engagement within an
// idle threshold), machine wait, off-tool coordination logged by hand, and
// their totals. Staff effort and machine wait are different numbers and
// are never added together (DESIGN.md, Effort timing).
package effort

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// TimeSource is where the effort clock reads the time; workflow.Clock is
// one, so effort is deterministic under a fake clock.
type TimeSource interface {
	Now() time.Time
}

// ErrInvalid marks an entry that cannot be stored: no release, a negative
// duration, an unknown kind, staff effort without a person.
var ErrInvalid = errors.New("invalid effort entry")

// DefaultIdleThreshold is how long without input still counts as engaged.
const DefaultIdleThreshold = 2 * time.Minute

// Kind separates the numbers that must never be added together.
type Kind string

// Effort kinds: staff time (active, off-tool), machine time (wait), and
// the mark that a person's work could not be measured (unmeasured).
const (
	Active  Kind = "active"   // a person engaged with relcap
	Wait    Kind = "wait"     // waiting on Terraform, copies, reconciliation
	OffTool Kind = "off-tool" // meetings and chat logged by hand
	// Unmeasured says a person's work on a step happened where relcap could
	// not measure it (no terminal, CI, a script). It carries no duration:
	// it is the absence of a measurement, which reports must never read as
	// zero effort, and Note says why.
	Unmeasured Kind = "unmeasured"
)

// Role is the part a person plays in a release.
type Role string

// Roles.
const (
	RoleCaptain  Role = "captain"
	RoleApprover Role = "approver"
)

// WholeRelease attributes effort to the release as a whole (off-tool time,
// commands outside a step).
const WholeRelease = "release"

// Entry is one measured (or logged) amount of time.
type Entry struct {
	ReleaseID string        `json:"release_id"`
	Person    string        `json:"person,omitempty"` // empty for machine wait
	Role      Role          `json:"role,omitempty"`
	Step      string        `json:"step"` // a workflow step name, or WholeRelease
	Kind      Kind          `json:"kind"`
	Duration  time.Duration `json:"duration"`
	At        time.Time     `json:"at"` // when the measured span ended
	Note      string        `json:"note,omitempty"`
	// Inputs is how many key presses and clicks went with active effort.
	Inputs int `json:"inputs,omitempty"`
}

// Validate checks an entry before it is stored.
func (e Entry) Validate() error {
	switch {
	case e.ReleaseID == "":
		return fmt.Errorf("%w: effort entry needs a release", ErrInvalid)
	case e.Duration < 0:
		return fmt.Errorf("%w: effort cannot be negative (%s)", ErrInvalid, e.Duration)
	case e.Kind != Active && e.Kind != Wait && e.Kind != OffTool && e.Kind != Unmeasured:
		return fmt.Errorf("%w: unknown effort kind %q", ErrInvalid, e.Kind)
	case e.Inputs < 0 || e.Inputs > 0 && e.Kind != Active:
		return fmt.Errorf("%w: only active effort has inputs (%d on %s)", ErrInvalid, e.Inputs, e.Kind)
	case e.Kind == Unmeasured && e.Duration != 0:
		return fmt.Errorf("%w: an unmeasured entry carries no duration (got %s): record measured time as active", ErrInvalid, e.Duration)
	case e.Kind != Wait && e.Person == "":
		return fmt.Errorf("%w: staff effort needs a person", ErrInvalid)
	}
	return nil
}

// Clock measures active effort per person per step and machine wait
// per step. Active time accrues between two signs of engagement (input,
// focus) no more than the idle threshold apart; a longer gap counts as
// nothing, because nobody can say what the person did in it, and so does
// time with the terminal unfocused (Pause). Within a gap, time is booked
// to the step the person had in front of them: the step of their last
// input, then each step the work moved on to (Follow). It reads time only
// from the Clock, so it is deterministic under a fake one.
type Clock struct {
	mu        sync.Mutex
	clock     TimeSource
	idle      time.Duration
	releaseID string
	last      map[string]*engagement // by person; absent: not engaged (new, idle or unfocused)
	waits     map[string]time.Time
	pending   map[effortKey]time.Duration
	// measured are the (person, role, step) the clock saw engagement on;
	// Drain reports each once even at 0, since a measured zero is a fact
	// and no entry at all is no data.
	measured map[effortKey]bool
	reported map[effortKey]bool
	// total is each person's active effort credited so far, drained or
	// not, for a live display.
	total  map[string]time.Duration
	inputs map[string]int
	// pendingInputs are the inputs since the last Drain, by the step
	// they were made on.
	pendingInputs map[effortKey]int
}

// engagement is a person's open gap: since their last input, split at
// the steps the work moved to.
type engagement struct {
	input    time.Time // the last sign of engagement
	role     Role
	segments []segment // closed parts of the gap, oldest first
	from     time.Time // start of the open part
	step     string    // step of the open part
}

type segment struct {
	step string
	d    time.Duration
}

type effortKey struct {
	person string
	role   Role
	step   string
	kind   Kind
}

// NewClock starts a clock for one release.
func NewClock(clock TimeSource, idle time.Duration, releaseID string) *Clock {
	if idle <= 0 {
		idle = DefaultIdleThreshold
	}
	return &Clock{
		clock: clock, idle: idle, releaseID: releaseID,
		last: map[string]*engagement{}, waits: map[string]time.Time{}, pending: map[effortKey]time.Duration{},
		measured: map[effortKey]bool{}, reported: map[effortKey]bool{}, total: map[string]time.Duration{}, inputs: map[string]int{},
		pendingInputs: map[effortKey]int{},
	}
}

// Touch records a sign that person is engaged on step (a key press, a
// mouse event, the terminal gaining focus). The gap since their previous
// one is credited, split by step, if it is within the idle threshold.
func (c *Clock) Touch(person string, role Role, step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.touch(person, role, step)
}

// touch is Touch with c.mu held.
func (c *Clock) touch(person string, role Role, step string) {
	now := c.clock.Now()
	c.settle(person, now)
	c.last[person] = &engagement{input: now, role: role, from: now, step: step}
	c.measured[effortKey{person, role, step, Active}] = true
}

// Input is Touch for a key press or mouse click, which is also counted:
// the number of inputs a release took is one of its costs.
func (c *Clock) Input(person string, role Role, step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.touch(person, role, step)
	c.inputs[person]++
	c.pendingInputs[effortKey{person, role, step, Active}]++
}

// Follow moves person's open gap on to step: the work went there (the
// cockpit shows the next step) without their input. What they spent
// looking at the previous step stays that step's, once the gap closes
// within the threshold.
func (c *Clock) Follow(person string, step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.last[person]
	if !ok || e.step == step {
		return
	}
	now := c.clock.Now()
	if now.Sub(e.input) > c.idle {
		// Idle already: nothing of this gap will count.
		delete(c.last, person)
		return
	}
	e.segments = append(e.segments, segment{e.step, now.Sub(e.from)})
	e.from, e.step = now, step
	c.measured[effortKey{person, e.role, step, Active}] = true
}

// Pause ends person's engagement now (the terminal lost focus): the gap up
// to now counts if within the threshold, and nothing counts until their
// next Touch.
func (c *Clock) Pause(person string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settle(person, c.clock.Now())
	delete(c.last, person)
}

// settle credits person's open gap up to now when it is within the idle
// threshold.
func (c *Clock) settle(person string, now time.Time) {
	e, ok := c.last[person]
	if !ok {
		return
	}
	gap := now.Sub(e.input)
	if gap <= 0 || gap > c.idle {
		return
	}
	for _, sg := range append(e.segments, segment{e.step, now.Sub(e.from)}) {
		if sg.d > 0 {
			c.pending[effortKey{person, e.role, sg.step, Active}] += sg.d
			c.total[person] += sg.d
		}
	}
}

// Active is person's active effort on this clock so far, the open gap
// included while it is within the threshold: what a live display shows.
func (c *Clock) Active(person string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.total[person]
	if e, ok := c.last[person]; ok {
		if gap := c.clock.Now().Sub(e.input); gap > 0 && gap <= c.idle {
			d += gap
		}
	}
	return d
}

// Idle reports whether person is not engaged now: never touched, past the
// threshold, or paused.
func (c *Clock) Idle(person string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.last[person]
	return !ok || c.clock.Now().Sub(e.input) > c.idle
}

// Inputs is how many key presses and clicks person made on this clock.
func (c *Clock) Inputs(person string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inputs[person]
}

// BeginWait starts timing machine work on step; EndWait stops it. A wait
// begun twice keeps its first start.
func (c *Clock) BeginWait(step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.waits[step]; !ok {
		c.waits[step] = c.clock.Now()
	}
}

// EndWait credits the machine wait since BeginWait.
func (c *Clock) EndWait(step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start, ok := c.waits[step]
	if !ok {
		return
	}
	delete(c.waits, step)
	if d := c.clock.Now().Sub(start); d > 0 {
		c.pending[effortKey{"", "", step, Wait}] += d
	}
}

// Drain returns what was measured since the last Drain, in a stable order,
// ready to store. Open waits are credited up to now and keep running.
func (c *Clock) Drain() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for step, start := range c.waits {
		if d := now.Sub(start); d > 0 {
			c.pending[effortKey{"", "", step, Wait}] += d
		}
		c.waits[step] = now
	}
	keys := make([]effortKey, 0, len(c.pending))
	for k, d := range c.pending {
		if d > 0 {
			keys = append(keys, k)
		}
	}
	for k := range c.measured {
		if c.pending[k] <= 0 && (!c.reported[k] || c.pendingInputs[k] > 0) {
			keys = append(keys, k) // measured, at 0 so far, or inputs to report
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		if a.person != b.person {
			return a.person < b.person
		}
		return a.step < b.step
	})
	out := make([]Entry, 0, len(keys))
	for _, k := range keys {
		out = append(out, Entry{
			ReleaseID: c.releaseID, Person: k.person, Role: k.role, Step: k.step,
			Kind: k.kind, Duration: c.pending[k], At: now, Inputs: c.pendingInputs[k],
		})
	}
	for _, k := range keys {
		if k.kind == Active {
			c.reported[k] = true
		}
	}
	clear(c.pending)
	clear(c.pendingInputs)
	return out
}

// Totals sums entries; staff effort and machine wait stay apart.
type Totals struct {
	Active  time.Duration
	OffTool time.Duration
	Wait    time.Duration
}

// Staff is the effort people spent: active plus off-tool. Machine wait is
// not part of it.
func (t Totals) Staff() time.Duration { return t.Active + t.OffTool }

// Sum totals entries by kind.
func Sum(entries []Entry) Totals {
	var t Totals
	for _, e := range entries {
		switch e.Kind {
		case Active:
			t.Active += e.Duration
		case OffTool:
			t.OffTool += e.Duration
		case Wait:
			t.Wait += e.Duration
		}
	}
	return t
}
