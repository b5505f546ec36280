package plain

import (
	"fmt"
	"io"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/breakglass"
)

// ApprovalDocument is relcap approve --json. The statement is what the
// signature covers: with it, ssh-keygen -Y verify checks the approval by
// hand.
func ApprovalDocument(approval workflow.Approval, check workflow.ApprovalCheck) map[string]any {
	return map[string]any{"approval": approval, "statement": string(approval.Statement()),
		"counted": len(check.Counted), "required": check.Required, "satisfied": check.Satisfied(), "warnings": check.Warnings}
}

// PrintApproval says what was approved, how it was signed, and what counts
// (warnings on errw).
func PrintApproval(out, errw io.Writer, approval workflow.Approval, check workflow.ApprovalCheck) {
	for _, w := range check.Warnings {
		fmt.Fprintln(errw, "warning: "+w)
	}
	if approval.Kind == workflow.ApproveBreakGlass {
		fmt.Fprintf(out, "approved breakglass of %s by %s for up to %s\n", approval.Subject, approval.Approver, workflow.ShortDuration(approval.TimeBox))
	} else {
		fmt.Fprintf(out, "approved %s %s by %s (%d of %d required)\n", approval.Kind, approval.Subject, approval.Approver, len(check.Counted), check.Required)
	}
	if approval.Signature.IsZero() {
		fmt.Fprintln(out, "  unsigned: this environment takes unsigned approvals")
	} else {
		fmt.Fprintf(out, "  signed by %s with %s\n", approval.Approver, approval.Signature.Key)
	}
	if approval.Kind == workflow.ApproveBreakGlass {
		fmt.Fprintf(out, "  for one break-glass, started by someone else before %s:\n  relcap breakglass start --env %s --ttl %s --approver %s --reason TEXT\n",
			approval.At.Add(breakglass.ApprovalValidity).UTC().Format(time.RFC3339), approval.Env, workflow.ShortDuration(approval.TimeBox), approval.Approver)
		return
	}
	for who, why := range check.Ignored {
		fmt.Fprintf(out, "  not counted: %s: %s\n", who, why)
	}
}
