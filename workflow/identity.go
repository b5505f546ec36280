package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

// Identity: who is who, and what proves it. The people file that counts,
// the captain who signs a release and the author who signs a plan; an
// approval's own signature is approval.go's.

// The people file that counts is the protected one (PeopleFile): the
// content committed on the protected branch of the repository that holds
// it, not the working copy a captain can edit alone. These decide what an
// environment accepts of it.

// ErrPeopleFileDiffers: the working copy of the people file is not the
// protected one, in an environment whose approvals cannot count on it
// (exit 3).
var ErrPeopleFileDiffers = fmt.Errorf("%w: the people file differs from the protected one", fault.ErrBlocked)

// ErrPeopleUnavailable: the people file that counts cannot be read now
// (its origin cannot be reached), or an earlier revision of it is not on
// this machine: nothing is verified until it can be (exit 3).
var ErrPeopleUnavailable = fmt.Errorf("%w: the people file that counts cannot be read", fault.ErrBlocked)

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

// A release's captain is the author of its promotion, as a plan's author
// is of the plan: with a people file the captain signs the release when it
// starts, and approvals.distinct_from_author on promotions compares the
// approver with the captain's verified principal, never with --actor
// alone.

// CaptainStatement is the exact text a release's captain signature
// covers: which release, of which application, environment and image, by
// whom and when it started.
func (r *Release) CaptainStatement() []byte {
	var b strings.Builder
	b.WriteString("relcap release v1\n")
	fmt.Fprintf(&b, "id: %s\napp: %s\nenv: %s\nkind: %s\n", r.ID, r.App, r.Env, r.Kind)
	if r.Image != "" {
		fmt.Fprintf(&b, "image: %s\n", r.Image)
	}
	fmt.Fprintf(&b, "captain: %s\nat: %s\n", r.Captain, r.CreatedAt.UTC().Format(time.RFC3339Nano))
	return []byte(b.String())
}

// signRelease signs r as its captain when the project names a people
// file. Where the environment's promotion rule depends on the captain, a
// release its captain cannot sign is refused before it starts.
func (s *Service) signRelease(ctx context.Context, env Environment, r *Release) error {
	if s.d.Verifier == nil {
		return nil
	}
	r.CaptainSignature = approval.Signature{}
	var err error
	if s.d.Signer == nil {
		err = errNoSigner
	} else {
		var sig approval.Signature
		if sig, err = s.d.Signer.Sign(ctx, r.Captain, approval.NamespaceApproval, r.CaptainStatement()); err == nil {
			if err = s.d.Verifier.Verify(ctx, r.Captain, approval.NamespaceApproval, r.CaptainStatement(), sig, r.CreatedAt); err == nil {
				r.CaptainSignature = sig
			}
		}
	}
	if err != nil && needsVerifiedAuthor(env.Approvals.Rule(approval.Promotion)) {
		return fmt.Errorf("%w: releases in %s are signed by their captain (approvals.distinct_from_author needs to know who captains them), and %s cannot sign as %s: %v",
			ErrAuthorUnverified, env.Name, s.d.Actor, r.Captain, err)
	}
	return nil
}

// promotionCaptain is who counts as r's captain under rule: the verified
// captain, or an ErrAuthorUnverified error (with the next safe action)
// when the rule depends on the captain and no signature proves one.
func promotionCaptain(ctx context.Context, v SignatureVerifier, env Environment, rule approval.Rule, r *Release) (string, error) {
	if v == nil || !needsVerifiedAuthor(rule) {
		return r.Captain, nil
	}
	why := fmt.Sprintf("release %s was not signed by its captain (%s)", r.ID, orUnknown(r.Captain))
	if !r.CaptainSignature.IsZero() {
		err := v.Verify(ctx, r.Captain, approval.NamespaceApproval, r.CaptainStatement(), r.CaptainSignature, r.CreatedAt)
		if err == nil {
			return r.Captain, nil
		}
		if errors.Is(err, fault.ErrUsage) {
			return "", err
		}
		why = fmt.Sprintf("release %s's captain signature (as %s) does not verify: %v", r.ID, orUnknown(r.Captain), err)
	}
	return "", fmt.Errorf("%w: %s; %s requires approval by someone other than the captain (approvals.distinct_from_author), so its promotion cannot count approvals: start the release again with your own key",
		ErrAuthorUnverified, why, env.Name)
}

// A plan's author is who signed it. With a people file, relcap signs every
// plan it saves with its author's own key, as an approval is signed, and
// approvals.distinct_from_author compares the approver's verified principal
// with the author's verified principal: --actor alone proves nobody.

// ErrAuthorUnverified: the plan's author signature is absent or does not
// verify, and the environment needs to know who wrote it (exit 3).
var ErrAuthorUnverified = fmt.Errorf("%w: the plan's author is not verified", fault.ErrBlocked)

// needsVerifiedAuthor reports whether rule's count depends on who wrote
// the plan.
func needsVerifiedAuthor(rule approval.Rule) bool {
	return rule.DistinctFromAuthor && rule.Required > 0
}

// signPlan signs p as its author when the project names a people file.
// Where the environment's plan rule depends on the author, a plan its
// author cannot sign is refused before it is saved: it could never be
// applied.
func (s *Service) signPlan(ctx context.Context, env Environment, p tfplan.Summary) (tfplan.Summary, error) {
	if s.d.Verifier == nil {
		return p, nil
	}
	p.AuthorSignature, p.AuthorPeople = approval.Signature{}, ""
	st, _, err := peopleVerdict(ctx, s.d.Verifier, env)
	switch {
	case err != nil:
	case s.d.Signer == nil:
		err = errNoSigner
	default:
		var sig approval.Signature
		sig, err = s.d.Signer.Sign(ctx, p.Author, approval.NamespaceApproval, p.AuthorStatement())
		if err == nil {
			p.AuthorSignature, p.AuthorPeople = sig, st.Revision
			if verr := s.d.Verifier.Verify(ctx, p.Author, approval.NamespaceApproval, p.AuthorStatement(), sig, p.CreatedAt); verr != nil {
				p.AuthorSignature, p.AuthorPeople, err = approval.Signature{}, "", fmt.Errorf("the signature does not verify against the people file: %w", verr)
			}
		}
	}
	if err != nil && needsVerifiedAuthor(env.Approvals.Rule(approval.Plan)) {
		return p, fmt.Errorf("%w: plans in %s are signed by their author (approvals.distinct_from_author needs to know who wrote them), and %s cannot sign as %s: %v",
			ErrAuthorUnverified, env.Name, s.d.Actor, p.Author, err)
	}
	return p, nil
}

// verifiedAuthor is the plan's author as its signature proves it, checked
// against the people file at the plan's creation; "" and why not when it
// is unsigned or does not verify. Without a people file nothing can be
// proven, and the recorded author stands (approvals are unsigned there).
func verifiedAuthor(ctx context.Context, v SignatureVerifier, p tfplan.Summary) (string, error) {
	if v == nil {
		return p.Author, nil
	}
	if p.AuthorSignature.IsZero() {
		return "", fmt.Errorf("plan %s was not signed by its author (%s)", ShortHash(p.Fingerprint), orUnknown(p.Author))
	}
	if err := v.Verify(ctx, p.Author, approval.NamespaceApproval, p.AuthorStatement(), p.AuthorSignature, p.CreatedAt); err != nil {
		if errors.Is(err, fault.ErrUsage) {
			return "", err
		}
		return "", fmt.Errorf("plan %s's author signature (as %s) does not verify: %v", ShortHash(p.Fingerprint), orUnknown(p.Author), err)
	}
	return p.Author, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "no author recorded"
	}
	return s
}

// planAuthorFor is who counts as plan's author under rule: the verified
// author, or an ErrAuthorUnverified error (with the next safe action) when
// the rule depends on the author and the signature does not prove one.
func planAuthorFor(ctx context.Context, v SignatureVerifier, env Environment, rule approval.Rule, p tfplan.Summary) (string, error) {
	author, err := verifiedAuthor(ctx, v, p)
	switch {
	case err == nil:
		return author, nil
	case errors.Is(err, fault.ErrUsage):
		return "", err
	case !needsVerifiedAuthor(rule):
		return p.Author, nil
	}
	return "", fmt.Errorf("%w: %v; %s requires approval by someone other than the author (approvals.distinct_from_author), so the plan cannot be approved or applied: plan again with your own key (relcap plan --env %s)",
		ErrAuthorUnverified, err, env.Name, env.Name)
}

// countPlanApprovals counts approvals of p under env's plan rule, with the
// plan's verified author and its creation as the earliest time an
// approval may claim.
func countPlanApprovals(ctx context.Context, v SignatureVerifier, env Environment, p tfplan.Summary, approvals []approval.Approval) (approval.Check, error) {
	_, warnings, err := peopleVerdict(ctx, v, env)
	if err != nil {
		return approval.Check{}, err
	}
	rule := env.Approvals.Rule(approval.Plan)
	author, err := planAuthorFor(ctx, v, env, rule, p)
	if err != nil {
		return approval.Check{}, err
	}
	check := rule.Count(approval.Target{Subject: p.Fingerprint, NotBefore: p.CreatedAt}, author, approvals, verifyWith(ctx, v))
	check.Warnings = warnings
	return check, nil
}

// withoutSentinel is err's message without sentinel's text in front, for
// a blocked step that names the sentinel itself.
func withoutSentinel(err, sentinel error) string {
	return strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
}
