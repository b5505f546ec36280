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
// per step. A sign of engagement (input, focus) makes the time after it
// count, until the next sign, the idle threshold or the terminal losing
// focus (Pause), whichever comes first: a person is engaged for up to the
// threshold after their last sign, and nobody can say what they did
// beyond it. Time is booked to the step the person had in front of them:
// the step of their last sign, then each step the work moved on to
// (Follow). The figure only ever grows, so what a screen shows at an
// instant is what a Drain at that instant stores (Tally). It reads time
// only from its TimeSource, so it is deterministic under a fake one.
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
	inputs   map[string]int
	// pendingInputs are the inputs since the last Drain, by the step
	// they were made on.
	pendingInputs map[effortKey]int
}

// engagement is a person's running interval: since their last sign, on
// one step, credited up to from.
type engagement struct {
	input time.Time // the last sign of engagement
	role  Role
	step  string
	from  time.Time // credited up to here
}

// running is the part of e not credited yet at now: up to the threshold
// after the last sign.
func (e *engagement) running(now time.Time, idle time.Duration) time.Duration {
	end := e.input.Add(idle)
	if now.Before(end) {
		end = now
	}
	return max(0, end.Sub(e.from))
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
		measured: map[effortKey]bool{}, reported: map[effortKey]bool{}, inputs: map[string]int{},
		pendingInputs: map[effortKey]int{},
	}
}

// Touch records a sign that person is engaged on step (a key press, a
// mouse event, the terminal gaining focus): the running interval before it
// is credited, and a new one starts.
func (c *Clock) Touch(person string, role Role, step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.touch(person, role, step)
}

// touch is Touch with c.mu held.
func (c *Clock) touch(person string, role Role, step string) {
	now := c.clock.Now()
	c.settle(person, now)
	c.last[person] = &engagement{input: now, role: role, step: step, from: now}
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

// Follow moves person's running interval on to step: the work went there
// (the cockpit shows the next step) without their input. What they spent
// on the previous step stays that step's.
func (c *Clock) Follow(person string, step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.last[person]
	if !ok || e.step == step {
		return
	}
	now := c.clock.Now()
	c.settle(person, now)
	if now.Sub(e.input) > c.idle {
		delete(c.last, person) // idle already: nothing more counts
		return
	}
	e.step = step
	c.measured[effortKey{person, e.role, step, Active}] = true
}

// Pause ends person's engagement now (the terminal lost focus): the
// running interval up to now is credited, and nothing counts until their
// next Touch.
func (c *Clock) Pause(person string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settle(person, c.clock.Now())
	delete(c.last, person)
}

// settle credits person's running interval up to now.
func (c *Clock) settle(person string, now time.Time) {
	e, ok := c.last[person]
	if !ok {
		return
	}
	if d := e.running(now, c.idle); d > 0 {
		c.pending[effortKey{person, e.role, e.step, Active}] += d
		e.from = e.from.Add(d)
	}
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

// Drain returns what was measured since the last Drain, up to now, in a
// stable order, ready to store: running intervals and open waits are
// credited up to now and keep running.
func (c *Clock) Drain() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for person := range c.last {
		c.settle(person, now)
	}
	for step, start := range c.waits {
		if d := now.Sub(start); d > 0 {
			c.pending[effortKey{"", "", step, Wait}] += d
		}
		c.waits[step] = now
	}
	out := c.entries(c.pending, now)
	for _, e := range out {
		if e.Kind == Active {
			c.reported[effortKey{e.Person, e.Role, e.Step, e.Kind}] = true
		}
	}
	clear(c.pending)
	clear(c.pendingInputs)
	return out
}

// Unstored is what Drain would return now, without draining: the part of
// a release's figure this clock holds and the ledger does not yet.
func (c *Clock) Unstored() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	pending := make(map[effortKey]time.Duration, len(c.pending)+len(c.last)+len(c.waits))
	for k, d := range c.pending {
		pending[k] = d
	}
	for person, e := range c.last {
		if d := e.running(now, c.idle); d > 0 {
			pending[effortKey{person, e.role, e.step, Active}] += d
		}
	}
	for step, start := range c.waits {
		if d := now.Sub(start); d > 0 {
			pending[effortKey{"", "", step, Wait}] += d
		}
	}
	return c.entries(pending, now)
}

// entries lists pending, and the measured keys not reported yet, as
// entries at now; c.mu held.
func (c *Clock) entries(pending map[effortKey]time.Duration, now time.Time) []Entry {
	keys := make([]effortKey, 0, len(pending))
	for k, d := range pending {
		if d > 0 {
			keys = append(keys, k)
		}
	}
	for k := range c.measured {
		if pending[k] <= 0 && (!c.reported[k] || c.pendingInputs[k] > 0) {
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
			Kind: k.kind, Duration: pending[k], At: now, Inputs: c.pendingInputs[k],
		})
	}
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
		t = t.add(e)
	}
	return t
}

// add is t with e counted under its kind; unmeasured adds nothing.
func (t Totals) add(e Entry) Totals {
	switch e.Kind {
	case Active:
		t.Active += e.Duration
	case OffTool:
		t.OffTool += e.Duration
	case Wait:
		t.Wait += e.Duration
	}
	return t
}
