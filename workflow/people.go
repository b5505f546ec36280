package workflow

import (
	"context"
	"fmt"
	"strings"
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
