package workflow

import (
	"context"
	"errors"
	"time"
)

// The hooks journal verification (workflow/audit) needs of the core: how
// a recorded approval's signature is checked, and how a missing port is
// said. The core itself never verifies journals nor seals heads: relcap
// seals a session's head after the Service is done with it.

// SignatureTime is the time a recorded approval's signature is checked
// at when nothing it approves bounds it (journal verify re-checking it):
// when the ledger received it, or its statement's own time for approvals
// recorded before relcap kept the receipt.
func (a Approval) SignatureTime() time.Time { return a.signatureTime(time.Time{}) }

// VerifyApproval checks a's signature with v at a.SignatureTime(), as
// counting approvals does, against the people file v reads now.
func VerifyApproval(ctx context.Context, v SignatureVerifier, a Approval) error {
	if v == nil {
		return errors.New("workflow: verifying an approval needs a signature verifier")
	}
	return verifyWith(ctx, v)(a, a.SignatureTime())
}

// MissingPort is the error of a query whose adapter name is not wired
// for this command: terminal, since retrying cannot help.
func MissingPort(name string) error { return missingPort(name) }
