package workflow

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// EffortKind separates the numbers that must never be added together.
type EffortKind string

// Effort kinds: staff time (active, off-tool) and machine time (wait).
const (
	EffortActive  EffortKind = "active"   // a person engaged with relcap
	EffortWait    EffortKind = "wait"     // waiting on Terraform, copies, reconciliation
	EffortOffTool EffortKind = "off-tool" // meetings and chat logged by hand
)

// Roles a person plays in a release.
const (
	RoleCaptain  = "captain"
	RoleApprover = "approver"
)

// StepNone attributes effort to the release as a whole (off-tool time,
// commands outside a step).
const StepNone = "release"

// EffortEntry is one measured (or logged) amount of time.
type EffortEntry struct {
	ReleaseID string        `json:"release_id"`
	Person    string        `json:"person,omitempty"` // empty for machine wait
	Role      string        `json:"role,omitempty"`
	Step      string        `json:"step"` // a StepKind name or StepNone
	Kind      EffortKind    `json:"kind"`
	Duration  time.Duration `json:"duration"`
	At        time.Time     `json:"at"` // when the measured span ended
	Note      string        `json:"note,omitempty"`
}

// Validate checks an entry before it is stored.
func (e EffortEntry) Validate() error {
	switch {
	case e.ReleaseID == "":
		return fmt.Errorf("%w: effort entry needs a release", ErrUsage)
	case e.Duration < 0:
		return fmt.Errorf("%w: effort cannot be negative (%s)", ErrUsage, e.Duration)
	case e.Kind != EffortActive && e.Kind != EffortWait && e.Kind != EffortOffTool:
		return fmt.Errorf("%w: unknown effort kind %q", ErrUsage, e.Kind)
	case e.Kind != EffortWait && e.Person == "":
		return fmt.Errorf("%w: staff effort needs a person", ErrUsage)
	}
	return nil
}

// EffortClock measures active effort per person per step and machine wait
// per step. Active time accrues between two signs of engagement (input,
// focus) no more than the idle threshold apart; a longer gap counts as
// nothing, because nobody can say what the person did in it. It reads time
// only from the Clock, so it is deterministic under a fake one.
type EffortClock struct {
	mu        sync.Mutex
	clock     Clock
	idle      time.Duration
	releaseID string
	last      map[string]touch // by person
	waits     map[string]time.Time
	pending   map[effortKey]time.Duration
}

type touch struct {
	at   time.Time
	role string
	step string
}

type effortKey struct {
	person, role, step string
	kind               EffortKind
}

// NewEffortClock starts a clock for one release.
func NewEffortClock(clock Clock, idle time.Duration, releaseID string) *EffortClock {
	if idle <= 0 {
		idle = DefaultIdleThreshold
	}
	return &EffortClock{
		clock: clock, idle: idle, releaseID: releaseID,
		last: map[string]touch{}, waits: map[string]time.Time{}, pending: map[effortKey]time.Duration{},
	}
}

// Touch records a sign that person is engaged on step. The time since their
// previous touch is credited to the previous touch's step if it is within
// the idle threshold.
func (c *EffortClock) Touch(person, role, step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if prev, ok := c.last[person]; ok {
		if gap := now.Sub(prev.at); gap > 0 && gap <= c.idle {
			c.pending[effortKey{person, prev.role, prev.step, EffortActive}] += gap
		}
	}
	c.last[person] = touch{at: now, role: role, step: step}
}

// BeginWait starts timing machine work on step; EndWait stops it. A wait
// begun twice keeps its first start.
func (c *EffortClock) BeginWait(step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.waits[step]; !ok {
		c.waits[step] = c.clock.Now()
	}
}

// EndWait credits the machine wait since BeginWait.
func (c *EffortClock) EndWait(step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start, ok := c.waits[step]
	if !ok {
		return
	}
	delete(c.waits, step)
	if d := c.clock.Now().Sub(start); d > 0 {
		c.pending[effortKey{"", "", step, EffortWait}] += d
	}
}

// Drain returns what was measured since the last Drain, in a stable order,
// ready to store. Open waits are credited up to now and keep running.
func (c *EffortClock) Drain() []EffortEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for step, start := range c.waits {
		if d := now.Sub(start); d > 0 {
			c.pending[effortKey{"", "", step, EffortWait}] += d
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
	out := make([]EffortEntry, 0, len(keys))
	for _, k := range keys {
		out = append(out, EffortEntry{
			ReleaseID: c.releaseID, Person: k.person, Role: k.role, Step: k.step,
			Kind: k.kind, Duration: c.pending[k], At: now,
		})
	}
	clear(c.pending)
	return out
}

// EffortTotals sums entries; staff effort and machine wait stay apart.
type EffortTotals struct {
	Active  time.Duration
	OffTool time.Duration
	Wait    time.Duration
}

// Staff is the effort people spent: active plus off-tool. Machine wait is
// not part of it.
func (t EffortTotals) Staff() time.Duration { return t.Active + t.OffTool }

// SumEffort totals entries by kind.
func SumEffort(entries []EffortEntry) EffortTotals {
	var t EffortTotals
	for _, e := range entries {
		switch e.Kind {
		case EffortActive:
			t.Active += e.Duration
		case EffortOffTool:
			t.OffTool += e.Duration
		case EffortWait:
			t.Wait += e.Duration
		}
	}
	return t
}
