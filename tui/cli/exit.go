package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/relcap/relcap/tui/asciicast"
	"github.com/relcap/relcap/workflow/fault"
)

// Exit codes (DESIGN.md, command line contract).
const (
	ExitOK           = 0
	ExitError        = 1
	ExitUsage        = 2
	ExitBlocked      = 3
	ExitNotConverged = 4
	ExitInterrupted  = 130
)

// SilentError means the command already printed what went wrong; it
// carries the exit code to use.
type SilentError struct{ Code int }

func (e SilentError) Error() string { return fmt.Sprintf("exit %d", e.Code) }

// UsageError marks flag and argument mistakes (exit 2).
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// ExitCode maps an error to the process exit code, in one place.
func ExitCode(err error) int {
	var silent SilentError
	var usage UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &silent):
		return silent.Code
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &usage), errors.Is(err, fault.ErrUsage), errors.Is(err, asciicast.ErrNotACast):
		return ExitUsage
	case errors.Is(err, fault.ErrAlreadyApplied):
		// Its own error, not a stale plan: nothing to re-plan for, the
		// plan's change is in; blocked like every refusal.
		return ExitBlocked
	case errors.Is(err, fault.ErrBlocked):
		return ExitBlocked
	case errors.Is(err, fault.ErrNotConverged):
		return ExitNotConverged
	}
	return ExitError
}
