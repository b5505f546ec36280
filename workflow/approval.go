package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/journal"
)

// PromotionTarget is what a promotion approval of r must be of: the commit
// its branch pinned and the digest it pins.
func PromotionTarget(r *Release) approval.Target {
	return approval.Target{Subject: r.ID, Commit: r.Checkpoints.EnvPinned, Digest: r.Checkpoints.Digest.String()}
}

// verifyWith checks approvals' signatures with v against the people file
// as it reads now; nil when there is no verifier.
func verifyWith(ctx context.Context, v SignatureVerifier) approval.VerifyFunc {
	if v == nil {
		return nil
	}
	return func(a approval.Approval, at time.Time) error {
		return v.Verify(ctx, a.Approver, approval.NamespaceApproval, a.Statement(), a.Signature, at)
	}
}

// ApprovePlan records d.Actor's approval of exactly the plan with this
// fingerprint, refusing what the environment's policy would never count.
func (s *Service) ApprovePlan(ctx context.Context, fingerprint, comment string) (approval.Approval, approval.Check, error) {
	d := s.d
	plan, err := d.Ledger.LoadPlan(ctx, fingerprint)
	if errors.Is(err, fault.ErrNotFound) {
		return approval.Approval{}, approval.Check{}, fmt.Errorf("%w: no plan with fingerprint %s: run relcap plan --env ENV and approve the fingerprint it prints", fault.ErrUsage, fingerprint)
	}
	if err != nil {
		return approval.Approval{}, approval.Check{}, err
	}
	env, err := d.Project.Env(plan.Env)
	if err != nil {
		return approval.Approval{}, approval.Check{}, err
	}
	a := approval.Approval{Kind: approval.Plan, Subject: fingerprint, Env: plan.Env, Approver: d.Actor, Comment: comment, At: d.Clock.Now()}
	rule := env.Approvals.Rule(approval.Plan)
	author, err := planAuthorFor(ctx, d.Verifier, env, rule, plan)
	if err != nil {
		return approval.Approval{}, approval.Check{}, s.journalFailure(ctx, err, journal.ApprovalRefused{Kind: a.Kind, Subject: a.Subject, Approver: a.Approver, Reason: err.Error()})
	}
	a, check, err := s.approve(ctx, rule, author, plan.CreatedAt, a)
	if err != nil {
		return a, check, err
	}
	// The plan is a release's: the approver's session worked on it.
	if r, err := s.records.ReleaseOfPlan(ctx, fingerprint); err != nil {
		return a, check, err
	} else if r != nil {
		return a, check, s.linkSession(ctx, r.ID)
	}
	return a, check, nil
}

// ApproveRelease records d.Actor's approval of a release's promotion.
func (s *Service) ApproveRelease(ctx context.Context, releaseID, comment string) (approval.Approval, approval.Check, error) {
	d := s.d
	r, err := d.Ledger.LoadRelease(ctx, releaseID)
	if err != nil {
		return approval.Approval{}, approval.Check{}, err
	}
	env, err := d.Project.Env(r.Env)
	if err != nil {
		return approval.Approval{}, approval.Check{}, err
	}
	if review := env.EnvRepo.Review; review.PullRequests() && review.Approvals != forge.ApprovalsFromBoth {
		where := "the forge"
		if pr := r.Checkpoints.PullRequest; pr != nil {
			where = pr.URL
		}
		err := fmt.Errorf("%w: %s's promotions are approved by reviewing the pull request on the forge (envrepo.review.approvals: forge): approve it at %s", fault.ErrUsage, r.Env, where)
		return approval.Approval{}, approval.Check{}, s.journalFailure(ctx, err, journal.ApprovalRefused{Kind: approval.Promotion, Subject: releaseID, Approver: d.Actor, Reason: err.Error()})
	}
	if r.Checkpoints.EnvPinned == "" {
		err := fmt.Errorf("%w: release %s has not pinned its change yet: a promotion approval signs the pinned commit and digest, so approve once relcap has pushed %s's branch", fault.ErrBlocked, r.ID, r.Env)
		return approval.Approval{}, approval.Check{}, s.journalFailure(ctx, err, journal.ApprovalRefused{Kind: approval.Promotion, Subject: releaseID, Approver: d.Actor, Reason: err.Error()})
	}
	rule := env.Approvals.Rule(approval.Promotion)
	captain, err := promotionCaptain(ctx, d.Verifier, env, rule, r)
	if err != nil {
		return approval.Approval{}, approval.Check{}, s.journalFailure(ctx, err, journal.ApprovalRefused{Kind: approval.Promotion, Subject: releaseID, Approver: d.Actor, Reason: err.Error()})
	}
	a, check, err := s.approve(ctx, rule, captain, r.CreatedAt,
		approval.Approval{Kind: approval.Promotion, Subject: releaseID, Env: r.Env, Approver: d.Actor, Comment: comment, At: d.Clock.Now(),
			Commit: r.Checkpoints.EnvPinned, Digest: r.Checkpoints.Digest.String()})
	if err != nil {
		return a, check, err
	}
	// The approver's session worked on this release: audits find it there.
	return a, check, s.linkSession(ctx, releaseID)
}

// ApproveBreakGlass records d.Actor's signed approval of a break-glass in
// the production environment envName: that its application may have
// reconciliation paused for up to ttl, for reason. The approval is for one
// break-glass, started within breakglass.ApprovalValidity by someone else
// (relcap breakglass start --approver d.Actor); who will break the glass is
// not known yet, so that is checked when it is used.
func (s *Service) ApproveBreakGlass(ctx context.Context, envName string, ttl time.Duration, reason string) (approval.Approval, approval.Check, error) {
	d := s.d
	env, err := d.Project.Env(envName)
	if err != nil {
		return approval.Approval{}, approval.Check{}, err
	}
	switch {
	case !env.Production:
		return approval.Approval{}, approval.Check{}, fmt.Errorf("%w: %s is not a production environment: break-glass there needs no approval", fault.ErrUsage, env.Name)
	case env.ArgoCD.App == "":
		return approval.Approval{}, approval.Check{}, fmt.Errorf("%w: %s has no argo cd application (argocd.app) to break the glass of", fault.ErrUsage, env.Name)
	case strings.TrimSpace(reason) == "":
		return approval.Approval{}, approval.Check{}, fmt.Errorf("%w: a break-glass approval needs --reason: say what you approve it for (it is signed)", fault.ErrUsage)
	case ttl <= 0 || ttl > MaxBreakGlassTTL:
		return approval.Approval{}, approval.Check{}, fmt.Errorf("%w: --ttl must be more than 0 and at most %s, got %s", fault.ErrUsage, MaxBreakGlassTTL, ttl)
	}
	return s.approve(ctx, env.Approvals.Rule(approval.BreakGlass), "", time.Time{},
		approval.Approval{Kind: approval.BreakGlass, Subject: BreakGlassSubject(env), Env: env.Name, Approver: d.Actor, Comment: reason, At: d.Clock.Now(), TimeBox: ttl})
}

// approve records a, unless rule would never count it, and returns how the
// subject's approvals now count; notBefore is when the subject was made
// (zero when unknown).
func (s *Service) approve(ctx context.Context, rule approval.Rule, author string, notBefore time.Time, a approval.Approval) (approval.Approval, approval.Check, error) {
	refuse := func(err error) (approval.Approval, approval.Check, error) {
		return approval.Approval{}, approval.Check{}, s.journalFailure(ctx, err, journal.ApprovalRefused{Kind: a.Kind, Subject: a.Subject, Approver: a.Approver, Reason: err.Error()})
	}
	if err := rule.Refuses(author, a.Approver); err != nil {
		return refuse(err)
	}
	env, err := s.d.Project.Env(a.Env)
	if err != nil {
		return refuse(err)
	}
	people, warnings, err := peopleVerdict(ctx, s.d.Verifier, env)
	if err != nil {
		return refuse(err)
	}
	a.People = people.Revision
	signed, err := s.sign(ctx, a)
	switch {
	case err != nil && rule.Signed:
		return refuse(fmt.Errorf("%w: approvals in %s are signed with the approver's own key, and %s cannot sign as %s: %v", fault.ErrBlocked, a.Env, s.d.Actor, a.Approver, err))
	case err == nil:
		a = signed
	default:
		a.People = "" // unsigned: verified against nothing
	}
	target := approval.Target{Subject: a.Subject, Commit: a.Commit, Digest: a.Digest, NotBefore: notBefore}
	// The ledger keeps its own time of receipt (the team database's clock
	// on PostgreSQL); this one stands where the ledger keeps none.
	a.ReceivedAt = s.d.Clock.Now()
	if err := s.d.Ledger.RecordApproval(ctx, a); err != nil {
		return approval.Approval{}, approval.Check{}, fmt.Errorf("record approval: %w", err)
	}
	if err := s.journal(ctx, journal.ApprovalRecorded{Approval: a}); err != nil {
		return approval.Approval{}, approval.Check{}, err
	}
	all, err := s.d.Ledger.Approvals(ctx, a.Kind, a.Subject)
	if err != nil {
		return a, approval.Check{}, fmt.Errorf("read approvals: %w", err)
	}
	check := rule.Count(target, author, all, verifyWith(ctx, s.d.Verifier))
	check.Warnings = warnings
	return a, check, nil
}

// errNoSigner says why this process cannot sign.
var errNoSigner = errors.New("no signing key: relcap signs with your SSH key through ssh-agent (SSH_AUTH_SOCK) or the key file named by RELCAP_SIGNING_KEY or git's user.signingkey, and needs the project's people file (people: in relcap.yaml)")

// sign signs a with the actor's key and checks the signature against the
// people file at once, so a key the file does not know is refused when
// approving, not at apply time.
func (s *Service) sign(ctx context.Context, a approval.Approval) (approval.Approval, error) {
	if s.d.Signer == nil || s.d.Verifier == nil {
		return a, errNoSigner
	}
	sig, err := s.d.Signer.Sign(ctx, a.Approver, approval.NamespaceApproval, a.Statement())
	if err != nil {
		return a, err
	}
	a.Signature = sig
	if err := verifyWith(ctx, s.d.Verifier)(a, a.At); err != nil {
		return a, fmt.Errorf("the signature does not verify against the people file: %w", err)
	}
	return a, nil
}

// MayApprove says whether the actor may approve kind for a change by
// author in env, and if not, why: what the screens ask before they offer
// an approve key, under the same rule the Service enforces.
func (s *Service) MayApprove(env string, kind approval.Kind, author string) error {
	e, err := s.d.Project.Env(env)
	if err != nil {
		return err
	}
	return e.Approvals.Rule(kind).Refuses(author, s.d.Actor)
}
