package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A plan's author is who signed it. With a people file, relcap signs every
// plan it saves with its author's own key, as an approval is signed, and
// approvals.distinct_from_author compares the approver's verified principal
// with the author's verified principal: --actor alone proves nobody.

// ErrAuthorUnverified: the plan's author signature is absent or does not
// verify, and the environment needs to know who wrote it (exit 3).
var ErrAuthorUnverified = fmt.Errorf("%w: the plan's author is not verified", ErrBlocked)

// AuthorStatement is the exact text a plan's author signature covers:
// which plan (fingerprint) of which environment, for which release, by
// whom and when it was made. The first line keeps it from ever reading as
// an approval's statement.
func (p PlanSummary) AuthorStatement() []byte {
	var b strings.Builder
	b.WriteString("relcap plan v1\n")
	fmt.Fprintf(&b, "env: %s\nfingerprint: %s\n", p.Env, p.Fingerprint)
	if p.Release != "" {
		fmt.Fprintf(&b, "release: %s\n", p.Release)
	}
	fmt.Fprintf(&b, "author: %s\nat: %s\n", p.Author, p.CreatedAt.UTC().Format(time.RFC3339Nano))
	return []byte(b.String())
}

// needsVerifiedAuthor reports whether rule's count depends on who wrote
// the plan.
func needsVerifiedAuthor(rule ApprovalRule) bool {
	return rule.DistinctFromAuthor && rule.Required > 0
}

// signPlan signs p as its author when the project names a people file.
// Where the environment's plan rule depends on the author, a plan its
// author cannot sign is refused before it is saved: it could never be
// applied.
func (s *Service) signPlan(ctx context.Context, env Environment, p PlanSummary) (PlanSummary, error) {
	if s.d.Verifier == nil {
		return p, nil
	}
	p.AuthorSignature, p.AuthorPeople = Signature{}, ""
	st, _, err := peopleVerdict(ctx, s.d.Verifier, env)
	switch {
	case err != nil:
	case s.d.Signer == nil:
		err = errNoSigner
	default:
		var sig Signature
		sig, err = s.d.Signer.Sign(ctx, p.Author, NamespaceApproval, p.AuthorStatement())
		if err == nil {
			p.AuthorSignature, p.AuthorPeople = sig, st.Revision
			if verr := s.d.Verifier.Verify(ctx, p.Author, NamespaceApproval, p.AuthorStatement(), sig, p.CreatedAt); verr != nil {
				p.AuthorSignature, p.AuthorPeople, err = Signature{}, "", fmt.Errorf("the signature does not verify against the people file: %w", verr)
			}
		}
	}
	if err != nil && needsVerifiedAuthor(env.Approvals.Rule(ApprovePlan)) {
		return p, fmt.Errorf("%w: plans in %s are signed by their author (approvals.distinct_from_author needs to know who wrote them), and %s cannot sign as %s: %v",
			ErrAuthorUnverified, env.Name, s.d.Actor, p.Author, err)
	}
	return p, nil
}

// verifiedAuthor is the plan's author as its signature proves it, checked
// against the people file at the plan's creation; "" and why not when it
// is unsigned or does not verify. Without a people file nothing can be
// proven, and the recorded author stands (approvals are unsigned there).
func verifiedAuthor(ctx context.Context, v SignatureVerifier, p PlanSummary) (string, error) {
	if v == nil {
		return p.Author, nil
	}
	if p.AuthorSignature.IsZero() {
		return "", fmt.Errorf("plan %s was not signed by its author (%s)", ShortHash(p.Fingerprint), orUnknown(p.Author))
	}
	if err := v.Verify(ctx, p.Author, NamespaceApproval, p.AuthorStatement(), p.AuthorSignature, p.CreatedAt); err != nil {
		if errors.Is(err, ErrUsage) {
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
func planAuthorFor(ctx context.Context, v SignatureVerifier, env Environment, rule ApprovalRule, p PlanSummary) (string, error) {
	author, err := verifiedAuthor(ctx, v, p)
	switch {
	case err == nil:
		return author, nil
	case errors.Is(err, ErrUsage):
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
func countPlanApprovals(ctx context.Context, v SignatureVerifier, env Environment, p PlanSummary, approvals []Approval) (ApprovalCheck, error) {
	_, warnings, err := peopleVerdict(ctx, v, env)
	if err != nil {
		return ApprovalCheck{}, err
	}
	rule := env.Approvals.Rule(ApprovePlan)
	author, err := planAuthorFor(ctx, v, env, rule, p)
	if err != nil {
		return ApprovalCheck{}, err
	}
	check := rule.Count(ApprovalTarget{Subject: p.Fingerprint, NotBefore: p.CreatedAt}, author, approvals, verifyWith(ctx, v))
	check.Warnings = warnings
	return check, nil
}

// withoutSentinel is err's message without sentinel's text in front, for
// a blocked step that names the sentinel itself.
func withoutSentinel(err, sentinel error) string {
	return strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
}
