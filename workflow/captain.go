package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

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
	r.CaptainSignature = Signature{}
	var err error
	if s.d.Signer == nil {
		err = errNoSigner
	} else {
		var sig Signature
		if sig, err = s.d.Signer.Sign(ctx, r.Captain, NamespaceApproval, r.CaptainStatement()); err == nil {
			if err = s.d.Verifier.Verify(ctx, r.Captain, NamespaceApproval, r.CaptainStatement(), sig, r.CreatedAt); err == nil {
				r.CaptainSignature = sig
			}
		}
	}
	if err != nil && needsVerifiedAuthor(env.Approvals.Rule(ApprovePromotion)) {
		return fmt.Errorf("%w: releases in %s are signed by their captain (approvals.distinct_from_author needs to know who captains them), and %s cannot sign as %s: %v",
			ErrAuthorUnverified, env.Name, s.d.Actor, r.Captain, err)
	}
	return nil
}

// promotionCaptain is who counts as r's captain under rule: the verified
// captain, or an ErrAuthorUnverified error (with the next safe action)
// when the rule depends on the captain and no signature proves one.
func promotionCaptain(ctx context.Context, v SignatureVerifier, env Environment, rule ApprovalRule, r *Release) (string, error) {
	if v == nil || !needsVerifiedAuthor(rule) {
		return r.Captain, nil
	}
	why := fmt.Sprintf("release %s was not signed by its captain (%s)", r.ID, orUnknown(r.Captain))
	if !r.CaptainSignature.IsZero() {
		err := v.Verify(ctx, r.Captain, NamespaceApproval, r.CaptainStatement(), r.CaptainSignature, r.CreatedAt)
		if err == nil {
			return r.Captain, nil
		}
		if errors.Is(err, ErrUsage) {
			return "", err
		}
		why = fmt.Sprintf("release %s's captain signature (as %s) does not verify: %v", r.ID, orUnknown(r.Captain), err)
	}
	return "", fmt.Errorf("%w: %s; %s requires approval by someone other than the captain (approvals.distinct_from_author), so its promotion cannot count approvals: start the release again with your own key",
		ErrAuthorUnverified, why, env.Name)
}
