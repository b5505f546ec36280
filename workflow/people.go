package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The people file that counts is the protected one (PeopleFile): the
// content committed on the protected branch of the repository that holds
// it, not the working copy a captain can edit alone. These decide what an
// environment accepts of it.

// ErrPeopleFileDiffers: the working copy of the people file is not the
// protected one, in an environment whose approvals cannot count on it
// (exit 3).
var ErrPeopleFileDiffers = fmt.Errorf("%w: the people file differs from the protected one", ErrBlocked)

// ErrPeopleUnavailable: the people file that counts cannot be read now
// (its origin cannot be reached), or an earlier revision of it is not on
// this machine: nothing is verified until it can be (exit 3).
var ErrPeopleUnavailable = fmt.Errorf("%w: the people file that counts cannot be read", ErrBlocked)

// strictAboutPeople reports whether env's approvals depend on who is who
// enough that a people file edited on this machine must stop them:
// approvals by someone other than the author, or plan approvals in
// production.
func strictAboutPeople(env Environment) bool {
	return env.Approvals.DistinctFromAuthor || (env.Production && env.Approvals.Plan >= 1)
}

// PeopleFileVerdict is what an environment makes of the people file's
// state: a refusal (ErrPeopleFileDiffers) or warnings to show.
func PeopleFileVerdict(env Environment, st PeopleState) (warnings []string, err error) {
	if len(st.Differs) > 0 {
		msg := fmt.Sprintf("people file %s on this machine differs from %s for %s: approvals are verified against the protected one only; commit the change and push it through review, or restore the file (git checkout -- %s)",
			st.File, st.Where, strings.Join(st.Differs, ", "), st.File)
		if strictAboutPeople(env) {
			return nil, fmt.Errorf("%w: %s (%s counts no approval while they differ)", ErrPeopleFileDiffers, msg, env.Name)
		}
		warnings = append(warnings, msg)
	}
	if !st.Protected && st.File != "" {
		warnings = append(warnings, fmt.Sprintf("people file %s is not protected (%s): whoever can edit it on this machine decides who may approve; keep it in a repository whose origin protects its default branch",
			st.File, st.Where))
	}
	return warnings, nil
}

// peopleVerdict reads the people file's state from v, when v knows it,
// and applies env's verdict; the state is zero when v cannot say.
func peopleVerdict(ctx context.Context, v SignatureVerifier, env Environment) (PeopleState, []string, error) {
	pf, ok := v.(PeopleFile)
	if !ok || v == nil {
		return PeopleState{}, nil, nil
	}
	st, err := pf.PeopleState(ctx)
	if err != nil {
		return PeopleState{}, nil, err
	}
	warnings, err := PeopleFileVerdict(env, st)
	return st, warnings, err
}

// checkApprovalSignature checks a recorded approval's signature for
// journal verify. An approval that names the people file revision it was
// verified against is checked against exactly that revision: if it does
// not hold there (the revision was rewound off the protected branch, or
// the record changed), the record is not what relcap verified, a failed
// check. An approval recorded before relcap named the revision is checked
// against the people file that counts now, as before, its failure a
// warning (a key removed since withdraws it). The error is a people file
// that cannot be read at all.
func checkApprovalSignature(ctx context.Context, v SignatureVerifier, a Approval, av *ApprovalVerification) error {
	at := a.signatureTime(time.Time{})
	av.People = a.People
	ok := VerifyCheck{Status: VerifyOK, Detail: "signed by " + a.Approver + " with key " + a.Signature.Key}
	pf, known := v.(PeopleFile)
	if a.People == "" || !known {
		if a.People == "" && known {
			av.Notes = append(av.Notes, "people file revision not recorded (approved with an older relcap): checked against the people file that counts now")
		}
		err := verifyWith(ctx, v)(a, at)
		switch {
		case errors.Is(err, ErrUsage):
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
	err := pf.VerifyIn(ctx, a.People, a.Approver, NamespaceApproval, a.Statement(), a.Signature, at)
	switch {
	case errors.Is(err, ErrUsage):
		return err
	case errors.Is(err, ErrPeopleUnavailable):
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
