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
// nothing, because nobody can say what the person did in it. It reads time
// only from the Clock, so it is deterministic under a fake one.
type Clock struct {
	mu        sync.Mutex
	clock     TimeSource
	idle      time.Duration
	releaseID string
	last      map[string]touch // by person
	waits     map[string]time.Time
	pending   map[effortKey]time.Duration
}

type touch struct {
	at   time.Time
	role Role
	step string
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
		last: map[string]touch{}, waits: map[string]time.Time{}, pending: map[effortKey]time.Duration{},
	}
}

// Touch records a sign that person is engaged on step. The time since their
// previous touch is credited to the previous touch's step if it is within
// the idle threshold.
func (c *Clock) Touch(person string, role Role, step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if prev, ok := c.last[person]; ok {
		if gap := now.Sub(prev.at); gap > 0 && gap <= c.idle {
			c.pending[effortKey{person, prev.role, prev.step, Active}] += gap
		}
	}
	c.last[person] = touch{at: now, role: role, step: step}
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
			Kind: k.kind, Duration: c.pending[k], At: now,
		})
	}
	clear(c.pending)
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
