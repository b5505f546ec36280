package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/relcap/relcap/tui/asciicast"
	"github.com/relcap/relcap/workflow/fault"
)

// Exit codes (DESIGN.md, command line contract).
const (
	exitOK           = 0
	exitError        = 1
	exitUsage        = 2
	exitBlocked      = 3
	exitNotConverged = 4
	exitInterrupted  = 130
)

// errSilent means the command already printed what went wrong; it carries
// the exit code to use.
type errSilent struct{ code int }

func (e errSilent) Error() string { return fmt.Sprintf("exit %d", e.code) }

// usageError marks flag and argument mistakes (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode maps an error to the process exit code, in one place.
func exitCode(err error) int {
	var silent errSilent
	var usage usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &silent):
		return silent.code
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &usage), errors.Is(err, fault.ErrUsage), errors.Is(err, asciicast.ErrNotACast):
		return exitUsage
	case errors.Is(err, fault.ErrAlreadyApplied):
		// Its own error, not a stale plan: nothing to re-plan for, the
		// plan's change is in; blocked like every refusal.
		return exitBlocked
	case errors.Is(err, fault.ErrBlocked):
		return exitBlocked
	case errors.Is(err, fault.ErrNotConverged):
		return exitNotConverged
	}
	return exitError
}
