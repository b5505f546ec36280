package plain

import (
	"fmt"
	"io"
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/finding"

	"github.com/relcap/relcap/workflow/breakglass"
)

// ApprovalDocument is relcap approve --json. The statement is what the
// signature covers: with it, ssh-keygen -Y verify checks the approval by
// hand.
func ApprovalDocument(a approval.Approval, check approval.Check) map[string]any {
	return map[string]any{"approval": a, "statement": string(a.Statement()),
		"counted": len(check.Counted), "required": check.Required, "satisfied": check.Satisfied(), "warnings": check.Warnings}
}

// PrintApproval says what was approved, how it was signed, and what counts
// (warnings on errw).
func PrintApproval(out, errw io.Writer, a approval.Approval, check approval.Check) {
	for _, w := range check.Warnings {
		fmt.Fprintln(errw, "warning: "+w)
	}
	if a.Kind == approval.BreakGlass {
		fmt.Fprintf(out, "approved breakglass of %s by %s for up to %s\n", a.Subject, a.Approver, finding.ShortDuration(a.TimeBox))
	} else {
		fmt.Fprintf(out, "approved %s %s by %s (%d of %d required)\n", a.Kind, a.Subject, a.Approver, len(check.Counted), check.Required)
	}
	if a.Signature.IsZero() {
		fmt.Fprintln(out, "  unsigned: this environment takes unsigned approvals")
	} else {
		fmt.Fprintf(out, "  signed by %s with %s\n", a.Approver, a.Signature.Key)
	}
	if a.Kind == approval.BreakGlass {
		fmt.Fprintf(out, "  for one break-glass, started by someone else before %s:\n  relcap breakglass start --env %s --ttl %s --approver %s --reason TEXT\n",
			a.At.Add(breakglass.ApprovalValidity).UTC().Format(time.RFC3339), a.Env, finding.ShortDuration(a.TimeBox), a.Approver)
		return
	}
	for who, why := range check.Ignored {
		fmt.Fprintf(out, "  not counted: %s: %s\n", who, why)
	}
}
