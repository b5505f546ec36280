package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
)

// checkApprovalSignature checks a recorded approval's signature for
// journal verify. An approval that names the people file revision it was
// verified against is checked against exactly that revision: if it does
// not hold there (the revision was rewound off the protected branch, or
// the record changed), the record is not what relcap verified, a failed
// check. An approval recorded before relcap named the revision is checked
// against the people file that counts now, as before, its failure a
// warning (a key removed since withdraws it). The error is a people file
// that cannot be read at all.
func checkApprovalSignature(ctx context.Context, v workflow.SignatureVerifier, a approval.Approval, av *ApprovalVerification) error {
	at := a.SignatureTime()
	av.People = a.People
	ok := VerifyCheck{Status: VerifyOK, Detail: "signed by " + a.Approver + " with key " + a.Signature.Key}
	pf, known := v.(workflow.PeopleFile)
	if a.People == "" || !known {
		if a.People == "" && known {
			av.Notes = append(av.Notes, "people file revision not recorded (approved with an older relcap): checked against the people file that counts now")
		}
		err := workflow.VerifyApproval(ctx, v, a)
		switch {
		case errors.Is(err, fault.ErrUsage):
			return err
		case err != nil:
			av.Signature = VerifyCheck{Status: VerifyFailed, Detail: err.Error()}
		default:
			av.Signature = ok
		}
		return nil
	}
	if strings.HasPrefix(a.People, "file:") {
		av.Notes = append(av.Notes, "verified against a people file nothing protected (no origin to take it from): whoever could edit it then decided who approved")
	}
	err := pf.VerifyIn(ctx, a.People, a.Approver, approval.NamespaceApproval, a.Statement(), a.Signature, at)
	switch {
	case errors.Is(err, fault.ErrUsage):
		return err
	case errors.Is(err, workflow.ErrPeopleUnavailable):
		// The revision cannot be read here (nothing protected it and the
		// file changed since, or origin cannot be reached): unchecked.
		av.Signature = VerifyCheck{Status: VerifyUnchecked, Detail: err.Error()}
	case err != nil:
		av.Signature, av.Binding = VerifyCheck{Status: VerifyFailed, Detail: err.Error()}, true
	default:
		av.Signature, av.Binding = ok, true
	}
	return nil
}

// approvalFailures are the failed checks of approvals that do not hold
// against the people file revision they were recorded with.
func approvalFailures(approvals []ApprovalVerification) []string {
	var out []string
	for _, a := range approvals {
		if a.Binding && a.Signature.Status == VerifyFailed {
			out = append(out, fmt.Sprintf("approval: %s's %s approval of %s does not hold against the people file it was recorded with: %s", a.Approver, a.Kind, a.Subject, a.Signature.Detail))
		}
	}
	return out
}
