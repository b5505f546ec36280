package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/journal"
)

// The Service's side of the effort ledger: the effort clock a UI feeds
// with signs of engagement, machine wait of work outside a release run,
// and off-tool time logged by hand. The clock itself is workflow/effort.

// Tracker is the effort clocks this process's UIs feed for the actor
// (effort.Tracker: focus, input, the step followed); FlushEffort and
// Effort store what it measured.
func (s *Service) Tracker() *effort.Tracker { return s.tracker }

// Effort is the effort the ledger holds of a release, what this process
// measured stored first: the release's figure as its views show it
// (effort.Tracker.Sync), others' work (an approver's laptop) read in.
func (s *Service) Effort(ctx context.Context, releaseID string) ([]effort.Entry, error) {
	return s.tracker.Sync(releaseID, func(es []effort.Entry) error { return s.d.Ledger.RecordEffort(ctx, es) },
		func() ([]effort.Entry, error) { return s.records.Effort(ctx, releaseID) })
}

// FlushEffort stores the effort measured so far, running intervals up to
// now included.
func (s *Service) FlushEffort(ctx context.Context, releaseID string) error {
	_, err := s.tracker.Sync(releaseID, func(es []effort.Entry) error { return s.d.Ledger.RecordEffort(ctx, es) }, nil)
	return err
}

// measureWait runs f, machine work on step k outside a release run, and
// stores its duration as machine wait of scope ("unreleased/<env>").
// Staff effort of such commands comes from the cockpit and off-tool logs.
func measureWait[T any](ctx context.Context, s *Service, scope string, k StepKind, f func() (T, error)) (T, error) {
	c := effort.NewClock(s.d.Clock, s.d.Project.Effort.IdleThreshold, scope)
	c.BeginWait(k.String())
	v, err := f()
	c.EndWait(k.String())
	return v, errors.Join(err, s.storeEffort(context.WithoutCancel(ctx), scope, c.Drain()))
}

// storeEffort records measured effort. Losing effort must not fail the
// work it measured, so a failed store is journaled (effort.lost) instead;
// only when that record fails too is it an error.
func (s *Service) storeEffort(ctx context.Context, scope string, entries []effort.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	err := s.d.Ledger.RecordEffort(ctx, entries)
	if err == nil {
		return nil
	}
	if jerr := s.journal(ctx, journal.EffortLost{Release: scope, Error: err.Error()}); jerr != nil {
		return fmt.Errorf("record effort of %s: %w, %w", scope, err, journalFailed(jerr))
	}
	return nil
}

// CommandEffort is how one relcap command at a terminal counts its
// person's time: from Started to now, up to the idle threshold (nobody
// can say what they did beyond it), booked to Step in Role on every
// release the command worked on. A command without a terminal (CI, a
// script) measures nothing and says so: an unmeasured entry with Why,
// never a zero.
type CommandEffort struct {
	Step        string // a step name, or effort.WholeRelease
	Role        effort.Role
	Started     time.Time
	Interactive bool
	Why         string // why it is not interactive
}

// RecordCommandEffort stores a command's effort on the releases this
// session linked (planned, approved, applied, promoted, resumed).
func (s *Service) RecordCommandEffort(ctx context.Context, c CommandEffort) error {
	s.mu.Lock()
	ids := make([]string, 0, len(s.linked))
	for id := range s.linked {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	slices.Sort(ids)
	now := s.d.Clock.Now()
	var errs []error
	for _, id := range ids {
		e := effort.Entry{ReleaseID: id, Person: s.d.Actor, Role: c.Role, Step: c.Step, At: now}
		if c.Interactive {
			e.Kind, e.Duration = effort.Active, min(max(0, now.Sub(c.Started)), s.idleThreshold())
			e.Note = "command at a terminal"
		} else {
			e.Kind, e.Note = effort.Unmeasured, c.Why
		}
		errs = append(errs, s.storeEffort(ctx, id, []effort.Entry{e}))
	}
	return errors.Join(errs...)
}

func (s *Service) idleThreshold() time.Duration {
	if t := s.d.Project.Effort.IdleThreshold; t > 0 {
		return t
	}
	return effort.DefaultIdleThreshold
}
