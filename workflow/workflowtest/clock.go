package workflowtest

import (
	"context"
	"sync"
	"time"
)

// Clock is a fake clock that moves only when told. Channels from After
// receive when Advance moves the clock past their deadline; WaitForTimers
// lets a test wait until the code under test is waiting on the clock.
type Clock struct {
	mu      sync.Mutex
	t       time.Time
	timers  []timer
	changed chan struct{} // closed and replaced whenever timers change
}

type timer struct {
	at time.Time
	ch chan time.Time
}

// NewClock starts at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t, changed: make(chan struct{})} }

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// After returns a channel that receives once the clock has been advanced
// by d.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.t
		return ch
	}
	c.timers = append(c.timers, timer{at: c.t.Add(d), ch: ch})
	c.notify()
	return ch
}

// Advance moves the clock forward and fires the timers it passes.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(c.t) {
			kept = append(kept, tm)
			continue
		}
		tm.ch <- c.t
	}
	c.timers = kept
	c.notify()
}

// Timers is how many After channels are waiting.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitForTimers blocks until at least n After channels are waiting, or ctx
// ends (false).
func (c *Clock) WaitForTimers(ctx context.Context, n int) bool {
	for {
		c.mu.Lock()
		ok, changed := len(c.timers) >= n, c.changed
		c.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// notify wakes WaitForTimers; c.mu is held.
func (c *Clock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}
