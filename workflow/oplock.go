package workflow

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/relcap/relcap/workflow/fault"
)

// Cross-captain safety: one apply per Terraform state, one promotion per
// environment, whoever runs it and wherever (OperationLocks).

// LockKind is the kind of operation a lock serializes.
type LockKind string

// The operations relcap serializes across captains.
const (
	// LockApply: a Terraform apply into one state (LockScope.Key is
	// StateBoundary's).
	LockApply LockKind = "apply"
	// LockPromote: a promotion into one environment (copy, pin, land;
	// LockScope.Key is PromotionBoundary's).
	LockPromote LockKind = "promote"
	// LockRun: one process running one release at a time (LockScope.Key
	// is the release's ID), so a second captain's resume of a release
	// another captain is driving is refused before it saves anything,
	// rather than overwriting that run's progress with its own.
	LockRun LockKind = "run"
)

// LockScope is what one lock covers: one kind of operation on one key.
type LockScope struct {
	Kind LockKind `json:"kind"`
	Key  string   `json:"key"`
}

// String names the scope in messages.
func (s LockScope) String() string {
	switch s.Kind {
	case LockApply:
		return "the apply lock of Terraform state " + s.Key
	case LockPromote:
		return "the promotion lock of " + s.Key
	case LockRun:
		return "release " + s.Key
	}
	return fmt.Sprintf("the %s lock of %s", s.Kind, s.Key)
}

// LockHolder is who holds a lock, for what and since when, as a captain
// who is refused reads it.
type LockHolder struct {
	Actor string    `json:"actor"`
	What  string    `json:"what"` // e.g. "apply plan 1a2b3c4d5e6f in staging (release …)"
	Since time.Time `json:"since"`
	// Host and PID are where the holding relcap runs; the lock's keeper
	// fills them in (the workflow does not know the machine).
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
}

// LockedError is a lock refused because another holder has it. It wraps
// ErrLocked and ErrBlocked (exit 3): nothing was done, and what to do is
// to wait or to ask the holder; relcap offers no way to force it, since
// the lock goes by itself when its holder's relcap ends, killed or not.
type LockedError struct {
	Scope  LockScope
	Holder LockHolder
	// Age is how long the holder had held it when the refusal was made.
	Age time.Duration
	// Backend is the holder's PostgreSQL backend pid, for a holder that
	// had not yet said who it is (Holder.Actor empty).
	Backend int
	// LockFile is the lock file of an SQLite ledger's lock, for a holder
	// that had not yet said who it is.
	LockFile string
}

func (e *LockedError) Error() string {
	h := e.Holder
	if h.Actor == "" {
		which := fmt.Sprintf("database backend pid %d", e.Backend)
		if e.Backend == 0 {
			which = "its lock file " + e.LockFile + " names nobody"
		}
		return fmt.Sprintf("%v: %s is held by another relcap that has not said who it is yet (%s); try again in a moment, or ask your team who is applying or promoting",
			fault.ErrLocked, e.Scope, which)
	}
	where := ""
	switch {
	case h.Host != "" && h.PID > 0:
		where = fmt.Sprintf(" (relcap pid %d on %s)", h.PID, h.Host)
	case h.Host != "":
		where = " (on " + h.Host + ")"
	}
	return fmt.Sprintf("%v: %s is held by %s%s: %s, since %s (%s ago); wait until it finishes and run this again, or ask %s; the lock is never forced: it is released as soon as %s's relcap ends, even if it is killed",
		fault.ErrLocked, e.Scope, h.Actor, where, h.What, h.Since.UTC().Format(time.RFC3339), max(e.Age, 0).Round(time.Second), h.Actor, h.Actor)
}

// Unwrap exposes ErrLocked and ErrBlocked to errors.Is.
func (e *LockedError) Unwrap() []error { return []error{fault.ErrLocked, fault.ErrBlocked} }

// StateBoundary is the key of the apply lock of env's Terraform state: the
// project's app, the Terraform root relative to the release repository
// (the directory of relcap.yaml), and the workspace, e.g.
// "web:infra/staging@default". It must name the same state on every
// captain's machine, so it is built from what the release repository says
// rather than from the absolute path of one machine's checkout; the app
// keeps two release repositories with equally named roots apart. Two
// environments sharing a root and workspace share the lock, as they share
// the state. (Within one machine the Terraform adapter also serializes
// operations per working directory, and Terraform's state lock stays on.)
func StateBoundary(p *Project, env Environment) string {
	ws := env.Terraform.Workspace
	if ws == "" {
		ws = "default"
	}
	return p.App + ":" + projectRelative(p, env.Terraform.Dir) + "@" + ws
}

// PromotionBoundary is the key of the promotion lock of env: the app and
// the environment's name, e.g. "web/staging".
func PromotionBoundary(p *Project, env Environment) string {
	return p.App + "/" + env.Name
}

// projectRelative is dir relative to the project's directory, with
// forward slashes; dir itself (cleaned) when it cannot be made relative.
func projectRelative(p *Project, dir string) string {
	base := p.Dir
	if base == "" && p.File != "" {
		base = filepath.Dir(p.File)
	}
	if base != "" && dir != "" {
		if rel, err := filepath.Rel(base, dir); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(filepath.Clean(dir))
}

// lockOperation takes the lock of scope for this Service's actor doing
// what, when the ledger keeps operation locks (a team's PostgreSQL, and
// one machine's SQLite); on a ledger without them it takes nothing. A refusal
// is journaled (lock.refused, with releaseID when there is one) and
// returned as the *LockedError; a lock that cannot be taken for another
// reason (the database unreachable) is an error, never a lock skipped.
func (s *Service) lockOperation(ctx context.Context, scope LockScope, releaseID, what string) (func(), error) {
	locks, ok := s.d.Ledger.(OperationLocks)
	if !ok {
		return func() {}, nil
	}
	s.mu.Lock()
	again := s.held[scope]
	s.mu.Unlock()
	if again {
		// relcap apply holds the lock before it runs the release's apply
		// step, which asks again: the outer holder releases it. (A
		// Service runs one release operation at a time; two goroutines
		// of one Service asking at once both go to the ledger, and the
		// second is refused there.)
		return func() {}, nil
	}
	unlock, err := locks.TryLock(ctx, scope, LockHolder{Actor: s.d.Actor, What: what, Since: s.d.Clock.Now()})
	var le *LockedError
	switch {
	case errors.As(err, &le):
		h := le.Holder
		rec := LockRefused{Kind: scope.Kind, Key: scope.Key, Release: releaseID, Holder: h.Actor, HolderWhat: h.What,
			HolderHost: h.Host, HolderPID: h.PID, Reason: le.Error()}
		if !h.Since.IsZero() {
			since := h.Since.UTC()
			rec.HolderSince = &since
		}
		if jerr := s.journal(context.WithoutCancel(ctx), rec); jerr != nil {
			return nil, errors.Join(le, journalFailed(jerr))
		}
		return nil, le
	case err != nil:
		return nil, fmt.Errorf("take %s: %w", scope, err)
	}
	s.mu.Lock()
	if s.held == nil {
		s.held = map[LockScope]bool{}
	}
	s.held[scope] = true
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.held, scope)
			s.mu.Unlock()
			unlock()
		})
	}, nil
}

// lockBlocked turns a lock refusal into the step's Blocked result (its
// message, the refusal's, is what the cockpit shows). Other errors, and a
// refusal that could not be journaled, are not: the step fails with them.
func lockBlocked(err error) (StepResult, bool) {
	var le *LockedError
	if !errors.As(err, &le) || err != error(le) {
		return StepResult{}, false
	}
	return StepResult{Status: Blocked, Message: le.Error(), Err: le}, true
}
