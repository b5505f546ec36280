// Package oplock holds the values of relcap's operation locks: which
// operations are serialized across captains (one apply per Terraform
// state, one promotion per environment, one process per release), what a
// lock covers and who holds it, and the refusal a captain sees. It is a
// leaf apart from the release core because the ledgers that keep the
// locks (adapters/store), the journal's records and the screens read
// these values without the core; taking a lock is the core's
// (Service.lockOperation).
package oplock

import (
	"fmt"
	"time"

	"github.com/relcap/relcap/workflow/fault"
)

// Kind is the kind of operation a lock serializes.
type Kind string

// The operations relcap serializes across captains.
const (
	// Apply: a Terraform apply into one state (Scope.Key is
	// StateBoundary's).
	Apply Kind = "apply"
	// Promote: a promotion into one environment (copy, pin, land;
	// Scope.Key is PromotionBoundary's).
	Promote Kind = "promote"
	// Run: one process running one release at a time (Scope.Key
	// is the release's ID), so a second captain's resume of a release
	// another captain is driving is refused before it saves anything,
	// rather than overwriting that run's progress with its own.
	Run Kind = "run"
)

// Scope is what one lock covers: one kind of operation on one key.
type Scope struct {
	Kind Kind   `json:"kind"`
	Key  string `json:"key"`
}

// String names the scope in messages.
func (s Scope) String() string {
	switch s.Kind {
	case Apply:
		return "the apply lock of Terraform state " + s.Key
	case Promote:
		return "the promotion lock of " + s.Key
	case Run:
		return "release " + s.Key
	}
	return fmt.Sprintf("the %s lock of %s", s.Kind, s.Key)
}

// Holder is who holds a lock, for what and since when, as a captain
// who is refused reads it.
type Holder struct {
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
	Scope  Scope
	Holder Holder
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
