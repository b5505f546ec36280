package workflowtest

import (
	"context"
	"sync"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/oplock"
)

// FakeLocks is a fake workflow.OperationLocks in memory: the locks of one
// team ledger as every process sharing it sees them. It records every lock
// taken and released, so tests prove an operation held its lock while its
// side effect ran, and released it after.
type FakeLocks struct {
	// Clock, when set, dates refusals (LockedError.Age).
	Clock workflow.Clock

	mu       sync.Mutex
	held     map[oplock.Scope]oplock.Holder
	taken    []oplock.Scope
	released []oplock.Scope
}

var _ workflow.OperationLocks = (*FakeLocks)(nil)

// TryLock takes scope for holder, or refuses with a *oplock.LockedError
// naming the holder.
func (f *FakeLocks) TryLock(_ context.Context, scope oplock.Scope, holder oplock.Holder) (func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h, ok := f.held[scope]; ok {
		le := &oplock.LockedError{Scope: scope, Holder: h}
		if f.Clock != nil {
			le.Age = f.Clock.Now().Sub(h.Since)
		}
		return nil, le
	}
	if f.held == nil {
		f.held = map[oplock.Scope]oplock.Holder{}
	}
	f.held[scope] = holder
	f.taken = append(f.taken, scope)
	var once sync.Once
	return func() { once.Do(func() { f.release(scope) }) }, nil
}

// Hold makes holder (another captain) hold scope until the returned func
// is called.
func (f *FakeLocks) Hold(scope oplock.Scope, holder oplock.Holder) (release func()) {
	unlock, err := f.TryLock(context.Background(), scope, holder)
	if err != nil {
		panic("FakeLocks.Hold: " + err.Error())
	}
	return unlock
}

func (f *FakeLocks) release(scope oplock.Scope) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.held, scope)
	f.released = append(f.released, scope)
}

// Holder returns who holds scope now.
func (f *FakeLocks) Holder(scope oplock.Scope) (oplock.Holder, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.held[scope]
	return h, ok
}

// Taken and Released are the scopes locked and unlocked so far, in order.
func (f *FakeLocks) Taken() []oplock.Scope {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]oplock.Scope(nil), f.taken...)
}

// Released: see Taken.
func (f *FakeLocks) Released() []oplock.Scope {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]oplock.Scope(nil), f.released...)
}

// LockingLedger is a fake team ledger: the in-memory Ledger with the
// ability to keep operation locks, as a PostgreSQL ledger has.
type LockingLedger struct {
	*Ledger
	*FakeLocks
}

var (
	_ workflow.Ledger         = LockingLedger{}
	_ workflow.OperationLocks = LockingLedger{}
)
