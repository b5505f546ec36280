package signing

import (
	"fmt"

	"github.com/relcap/relcap/workflow/fault"
)

// ErrUnverified is wrapped by every Verify error that means the signature
// does not count (as opposed to a broken people file, which is
// fault.ErrUsage): a policy that requires signed approvals is then not
// met, hence fault.ErrBlocked.
var ErrUnverified = fmt.Errorf("%w: signature not verified", fault.ErrBlocked)

// signingError is an explained failure. Its message is written for the
// person reading it, without the sentinel's text in front, and it unwraps
// to the sentinels the domain reacts to.
type signingError struct {
	msg  string
	errs []error
}

func (e *signingError) Error() string   { return e.msg }
func (e *signingError) Unwrap() []error { return e.errs }

// usagef is a problem with the people file or the key setting, which the
// person fixes (exit 2).
func usagef(format string, args ...any) error {
	return &signingError{msg: fmt.Sprintf(format, args...), errs: []error{fault.ErrUsage}}
}

// unverifiedf is a signature that does not count.
func unverifiedf(format string, args ...any) error {
	return &signingError{msg: fmt.Sprintf(format, args...), errs: []error{ErrUnverified}}
}

// clip quotes s for an error message, cut to a readable length: error
// messages quote what a file said, and a file can say a lot.
func clip(s string) string {
	const limit = 60
	if len(s) > limit {
		return fmt.Sprintf("%q…", s[:limit])
	}
	return fmt.Sprintf("%q", s)
}
