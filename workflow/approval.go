package workflow

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/fault"
)

// ApprovalKind says what an approval approves.
type ApprovalKind string

// Approval kinds.
const (
	// ApprovePlan approves one saved plan; its subject is the fingerprint.
	ApprovePlan ApprovalKind = "plan"
	// ApprovePromotion approves one release's promotion; its subject is
	// the release ID.
	ApprovePromotion ApprovalKind = "promotion"
	// ApproveBreakGlass approves one break-glass pause in a production
	// environment; its subject is the environment's application as
	// BreakGlassSubject names it ("prod/web-prod") and its TimeBox the
	// longest pause it allows.
	ApproveBreakGlass ApprovalKind = "breakglass"
)

// Approval records who approved which exact thing, and when. Subject is a
// plan fingerprint, a release ID (promotion) or an environment's
// application (break-glass); an approval never carries over to another
// subject.
type Approval struct {
	Kind     ApprovalKind `json:"kind"`
	Subject  string       `json:"subject"`
	Env      string       `json:"env"`
	Approver string       `json:"approver"`
	Comment  string       `json:"comment,omitempty"`
	At       time.Time    `json:"at"`
	// Commit and Digest bind a promotion approval to exactly what was
	// reviewed: the pinned commit of the release's branch and the digest
	// it pins. A branch that moved afterwards voids the approval.
	Commit string `json:"commit,omitempty"`
	Digest string `json:"digest,omitempty"`
	// TimeBox is how long a break-glass approval lets reconciliation stay
	// paused; zero for other kinds.
	TimeBox time.Duration `json:"time_box,omitzero"`
	// Signature is the approver's SSH signature of Statement(); zero for
	// an unsigned approval, which counts only where the environment says
	// approvals.signed: false.
	Signature Signature `json:"signature,omitzero"`
	// ReceivedAt is when the ledger received the approval, by the
	// ledger's clock (the team database's own, on PostgreSQL). It is not
	// signed: At is what the approver claims, ReceivedAt what relcap saw,
	// and a signature is checked at the time relcap received it. Zero for
	// approvals recorded before relcap kept it.
	ReceivedAt time.Time `json:"received_at,omitzero"`
	// People names the revision of the people file the signature was
	// verified against when it was recorded (PeopleRevision.ID); "" when
	// unsigned, or recorded before relcap kept it.
	People string `json:"people,omitempty"`
}

// StatementSkew is how far a signed statement's own time may be from the
// time relcap received it, and how much earlier than the thing it approves
// (a plan's creation) it may claim to be: clocks of two machines differ a
// little, never by more. A statement dated further away is refused, so no
// one back-dates a signature into a key's validity.
const StatementSkew = 5 * time.Minute

// signatureTime is the time at which a's signature is checked against
// the people file's validity windows: when relcap received it (its
// statement's own time only for approvals recorded before relcap kept the
// receipt), and never earlier than notBefore, the creation of what it
// approves.
func (a Approval) signatureTime(notBefore time.Time) time.Time {
	at := a.ReceivedAt
	if at.IsZero() {
		at = a.At
	}
	if at.Before(notBefore) {
		at = notBefore
	}
	return at
}

// Statement is the exact text an approval's signature covers: what kind of
// decision, in which environment, of which subject (and, for a promotion,
// which commit and digest; for a break-glass, which time box), by whom and
// when. It is what ssh-keygen -Y verify reads on its standard input. Lines
// for fields that are empty are left out, so statements signed before a
// field existed read the same.
func (a Approval) Statement() []byte {
	var b strings.Builder
	b.WriteString("relcap approval v1\n")
	fmt.Fprintf(&b, "kind: %s\nenv: %s\nsubject: %s\n", a.Kind, a.Env, a.Subject)
	if a.Commit != "" {
		fmt.Fprintf(&b, "commit: %s\n", a.Commit)
	}
	if a.Digest != "" {
		fmt.Fprintf(&b, "digest: %s\n", a.Digest)
	}
	if a.TimeBox != 0 {
		fmt.Fprintf(&b, "time-box: %s\n", a.TimeBox)
	}
	fmt.Fprintf(&b, "approver: %s\nat: %s\n", a.Approver, a.At.UTC().Format(time.RFC3339Nano))
	if a.Comment != "" {
		fmt.Fprintf(&b, "comment: %s\n", strconv.Quote(a.Comment))
	}
	return []byte(b.String())
}

// Signature is an SSH signature in the armored format `ssh-keygen -Y sign`
// writes, and the SHA-256 fingerprint of the public key that made it.
type Signature struct {
	Armored string `json:"armored"`
	Key     string `json:"key"`
}

// IsZero reports an absent signature.
func (s Signature) IsZero() bool { return s.Armored == "" }

// Signature namespaces (ssh-keygen -Y's -n): a signature made for one is
// never accepted for another.
const (
	NamespaceApproval = "relcap-approval"
	NamespaceJournal  = "relcap-journal"
)

// ApprovalCheck is the outcome of counting approvals against a rule.
type ApprovalCheck struct {
	Required int
	Counted  []Approval
	// Ignored are approvals that do not count, with why.
	Ignored map[string]string
	// Warnings are what the reader must know of how they were counted:
	// a people file nothing protects, or a working copy that differs.
	Warnings []string
}

// Satisfied reports whether enough approvals counted.
func (c ApprovalCheck) Satisfied() bool { return len(c.Counted) >= c.Required }

// Missing is how many more approvals are needed.
func (c ApprovalCheck) Missing() int { return max(0, c.Required-len(c.Counted)) }

// ApprovedBy reports whether person's approval counted.
func (c ApprovalCheck) ApprovedBy(person string) bool {
	for _, a := range c.Counted {
		if a.Approver == person {
			return true
		}
	}
	return false
}

// ApprovalRule is an environment's policy for one kind of decision: how
// many approvals it needs, who may give them, whether the author's own
// counts and whether they must be signed. It is the one place the approval
// policy is decided; the Service applies it before apply and land, and the
// screens ask it before offering an approve key.
type ApprovalRule struct {
	Kind               ApprovalKind
	Env                string
	Required           int
	DistinctFromAuthor bool
	Signed             bool
	// Approvers are the principals who may approve; none means anyone the
	// people file names.
	Approvers []string
}

// Rule is the policy's rule for kind.
func (p ApprovalPolicy) Rule(kind ApprovalKind) ApprovalRule {
	r := ApprovalRule{Kind: kind, DistinctFromAuthor: p.DistinctFromAuthor, Signed: p.Signed}
	switch kind {
	case ApprovePlan:
		r.Required, r.Approvers = p.Plan, p.Approvers.Plan
	case ApprovePromotion:
		r.Required, r.Approvers = p.Promotion, p.Approvers.Promotion
	case ApproveBreakGlass:
		// Whatever the environment says of its other approvals, a
		// break-glass needs a second person (never the one who breaks the
		// glass) and their signature: it pauses production's
		// reconciliation on one person's word otherwise.
		r.Required, r.Approvers, r.DistinctFromAuthor, r.Signed = 1, p.Approvers.BreakGlass, true, true
	}
	return r
}

// Refuses says why approver's approval of author's change would never
// count, or nil when it would: the approver hears it when approving, not
// at apply time.
func (r ApprovalRule) Refuses(author, approver string) error {
	if len(r.Approvers) > 0 && !slices.Contains(r.Approvers, approver) {
		return fmt.Errorf("%w: %s may not approve %s here: approvers.%s lists %s", fault.ErrBlocked, approver, r.Kind, r.Kind, strings.Join(r.Approvers, ", "))
	}
	if r.DistinctFromAuthor && author != "" && author == approver {
		what := "wrote this plan"
		switch r.Kind {
		case ApprovePromotion:
			what = "captains this release"
		case ApproveBreakGlass:
			return fmt.Errorf("%w: %s breaks the glass, and a break-glass needs someone else's approval", fault.ErrBlocked, approver)
		}
		return fmt.Errorf("%w: %s %s and the environment requires approval by someone else (approvals.distinct_from_author)", fault.ErrBlocked, approver, what)
	}
	return nil
}

// ApprovalTarget is exactly what an approval must be of to count: the
// subject (plan fingerprint, release ID) and, for a promotion, the pinned
// commit and the digest it pins.
type ApprovalTarget struct {
	Subject string
	Commit  string
	Digest  string
	// NotBefore is when the subject came to be (a plan's creation): an
	// approval dated before it is refused, and signatures are checked no
	// earlier. Zero when unknown.
	NotBefore time.Time
}

// VerifyFunc checks an approval's signature at time at (see
// Approval.signatureTime); nil means nothing can be verified here.
type VerifyFunc func(a Approval, at time.Time) error

// Count applies the rule to the approvals recorded for one subject: one
// approval per person, only of this exact target, only from those the rule
// allows, not the author's own when the rule wants them distinct, and, when
// the rule wants them signed, only those whose signature verifies now.
func (r ApprovalRule) Count(target ApprovalTarget, author string, approvals []Approval, verify VerifyFunc) ApprovalCheck {
	c := ApprovalCheck{Required: r.Required, Ignored: map[string]string{}}
	seen := map[string]bool{}
	for _, a := range approvals {
		if why := r.ignores(target, author, a, verify); why != "" {
			c.Ignored[a.Approver] = why
			continue
		}
		if !seen[a.Approver] { // approving twice counts once
			seen[a.Approver] = true
			c.Counted = append(c.Counted, a)
		}
	}
	for who := range seen {
		delete(c.Ignored, who)
	}
	return c
}

// ignores says why a does not count towards target, or "" when it does.
func (r ApprovalRule) ignores(target ApprovalTarget, author string, a Approval, verify VerifyFunc) string {
	switch {
	case a.Kind != r.Kind || a.Subject != target.Subject:
		return fmt.Sprintf("approved %s %s, not this one", a.Kind, a.Subject)
	case target.Commit != "" && a.Commit != target.Commit:
		return fmt.Sprintf("approved commit %s, but the change is now at %s: the branch moved after approval", ShortHash(a.Commit), ShortHash(target.Commit))
	case target.Digest != "" && a.Digest != target.Digest:
		return fmt.Sprintf("approved digest %s, not %s", a.Digest, target.Digest)
	case r.Refuses(author, a.Approver) != nil:
		return strings.TrimPrefix(r.Refuses(author, a.Approver).Error(), fault.ErrBlocked.Error()+": ")
	case a.Signature.IsZero() && r.Signed:
		return "unsigned, and this environment counts only approvals signed with the approver's key"
	case !a.ReceivedAt.IsZero() && (a.At.Sub(a.ReceivedAt) > StatementSkew || a.ReceivedAt.Sub(a.At) > StatementSkew):
		return fmt.Sprintf("its statement is dated %s but relcap received it at %s: a statement dated more than %s from its receipt does not count (approve again: relcap approve)",
			a.At.UTC().Format(time.RFC3339), a.ReceivedAt.UTC().Format(time.RFC3339), ShortDuration(StatementSkew))
	case !target.NotBefore.IsZero() && a.At.Before(target.NotBefore.Add(-StatementSkew)):
		return fmt.Sprintf("its statement is dated %s, before what it approves was made (%s): an approval cannot predate its subject",
			a.At.UTC().Format(time.RFC3339), target.NotBefore.UTC().Format(time.RFC3339))
	case !a.Signature.IsZero() && verify == nil:
		return "signed, but no people file to verify it against"
	case !a.Signature.IsZero():
		if err := verify(a, a.signatureTime(target.NotBefore)); err != nil {
			return "signature does not verify: " + err.Error()
		}
	}
	return ""
}

// Unsigned are the counted approvals nobody signed (where the environment
// allows that): reports and journal verify name them.
func (c ApprovalCheck) Unsigned() []Approval {
	var out []Approval
	for _, a := range c.Counted {
		if a.Signature.IsZero() {
			out = append(out, a)
		}
	}
	return out
}

// PromotionTarget is what a promotion approval of r must be of: the commit
// its branch pinned and the digest it pins.
func PromotionTarget(r *Release) ApprovalTarget {
	return ApprovalTarget{Subject: r.ID, Commit: r.Checkpoints.EnvPinned, Digest: r.Checkpoints.Digest.String()}
}

// verifyWith checks approvals' signatures with v against the people file
// as it reads now; nil when there is no verifier.
func verifyWith(ctx context.Context, v SignatureVerifier) VerifyFunc {
	if v == nil {
		return nil
	}
	return func(a Approval, at time.Time) error {
		return v.Verify(ctx, a.Approver, NamespaceApproval, a.Statement(), a.Signature, at)
	}
}

// ignoredNote says, for a refusal's message, which approvals did not count
// and why; "" when none were ignored.
func ignoredNote(c ApprovalCheck) string {
	if len(c.Ignored) == 0 {
		return ""
	}
	who := slices.Sorted(maps.Keys(c.Ignored))
	parts := make([]string, len(who))
	for i, w := range who {
		parts[i] = w + ": " + c.Ignored[w]
	}
	return " (not counted: " + strings.Join(parts, "; ") + ")"
}

// ApprovePlan records d.Actor's approval of exactly the plan with this
// fingerprint, refusing what the environment's policy would never count.
func (s *Service) ApprovePlan(ctx context.Context, fingerprint, comment string) (Approval, ApprovalCheck, error) {
	d := s.d
	plan, err := d.Ledger.LoadPlan(ctx, fingerprint)
	if errors.Is(err, fault.ErrNotFound) {
		return Approval{}, ApprovalCheck{}, fmt.Errorf("%w: no plan with fingerprint %s: run relcap plan --env ENV and approve the fingerprint it prints", fault.ErrUsage, fingerprint)
	}
	if err != nil {
		return Approval{}, ApprovalCheck{}, err
	}
	env, err := d.Project.Env(plan.Env)
	if err != nil {
		return Approval{}, ApprovalCheck{}, err
	}
	a := Approval{Kind: ApprovePlan, Subject: fingerprint, Env: plan.Env, Approver: d.Actor, Comment: comment, At: d.Clock.Now()}
	rule := env.Approvals.Rule(ApprovePlan)
	author, err := planAuthorFor(ctx, d.Verifier, env, rule, plan)
	if err != nil {
		return Approval{}, ApprovalCheck{}, s.journalFailure(ctx, err, ApprovalRefused{Kind: a.Kind, Subject: a.Subject, Approver: a.Approver, Reason: err.Error()})
	}
	a, check, err := s.approve(ctx, rule, author, plan.CreatedAt, a)
	if err != nil {
		return a, check, err
	}
	// The plan is a release's: the approver's session worked on it.
	if r, err := s.ReleaseOfPlan(ctx, fingerprint); err != nil {
		return a, check, err
	} else if r != nil {
		return a, check, s.linkSession(ctx, r.ID)
	}
	return a, check, nil
}

// ApproveRelease records d.Actor's approval of a release's promotion.
func (s *Service) ApproveRelease(ctx context.Context, releaseID, comment string) (Approval, ApprovalCheck, error) {
	d := s.d
	r, err := d.Ledger.LoadRelease(ctx, releaseID)
	if err != nil {
		return Approval{}, ApprovalCheck{}, err
	}
	env, err := d.Project.Env(r.Env)
	if err != nil {
		return Approval{}, ApprovalCheck{}, err
	}
	if review := env.EnvRepo.Review; review.PullRequests() && review.Approvals != ApprovalsFromBoth {
		where := "the forge"
		if pr := r.Checkpoints.PullRequest; pr != nil {
			where = pr.URL
		}
		err := fmt.Errorf("%w: %s's promotions are approved by reviewing the pull request on the forge (envrepo.review.approvals: forge): approve it at %s", fault.ErrUsage, r.Env, where)
		return Approval{}, ApprovalCheck{}, s.journalFailure(ctx, err, ApprovalRefused{Kind: ApprovePromotion, Subject: releaseID, Approver: d.Actor, Reason: err.Error()})
	}
	if r.Checkpoints.EnvPinned == "" {
		err := fmt.Errorf("%w: release %s has not pinned its change yet: a promotion approval signs the pinned commit and digest, so approve once relcap has pushed %s's branch", fault.ErrBlocked, r.ID, r.Env)
		return Approval{}, ApprovalCheck{}, s.journalFailure(ctx, err, ApprovalRefused{Kind: ApprovePromotion, Subject: releaseID, Approver: d.Actor, Reason: err.Error()})
	}
	rule := env.Approvals.Rule(ApprovePromotion)
	captain, err := promotionCaptain(ctx, d.Verifier, env, rule, r)
	if err != nil {
		return Approval{}, ApprovalCheck{}, s.journalFailure(ctx, err, ApprovalRefused{Kind: ApprovePromotion, Subject: releaseID, Approver: d.Actor, Reason: err.Error()})
	}
	a, check, err := s.approve(ctx, rule, captain, r.CreatedAt,
		Approval{Kind: ApprovePromotion, Subject: releaseID, Env: r.Env, Approver: d.Actor, Comment: comment, At: d.Clock.Now(),
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
func (s *Service) ApproveBreakGlass(ctx context.Context, envName string, ttl time.Duration, reason string) (Approval, ApprovalCheck, error) {
	d := s.d
	env, err := d.Project.Env(envName)
	if err != nil {
		return Approval{}, ApprovalCheck{}, err
	}
	switch {
	case !env.Production:
		return Approval{}, ApprovalCheck{}, fmt.Errorf("%w: %s is not a production environment: break-glass there needs no approval", fault.ErrUsage, env.Name)
	case env.ArgoCD.App == "":
		return Approval{}, ApprovalCheck{}, fmt.Errorf("%w: %s has no argo cd application (argocd.app) to break the glass of", fault.ErrUsage, env.Name)
	case strings.TrimSpace(reason) == "":
		return Approval{}, ApprovalCheck{}, fmt.Errorf("%w: a break-glass approval needs --reason: say what you approve it for (it is signed)", fault.ErrUsage)
	case ttl <= 0 || ttl > MaxBreakGlassTTL:
		return Approval{}, ApprovalCheck{}, fmt.Errorf("%w: --ttl must be more than 0 and at most %s, got %s", fault.ErrUsage, MaxBreakGlassTTL, ttl)
	}
	return s.approve(ctx, env.Approvals.Rule(ApproveBreakGlass), "", time.Time{},
		Approval{Kind: ApproveBreakGlass, Subject: BreakGlassSubject(env), Env: env.Name, Approver: d.Actor, Comment: reason, At: d.Clock.Now(), TimeBox: ttl})
}

// approve records a, unless rule would never count it, and returns how the
// subject's approvals now count; notBefore is when the subject was made
// (zero when unknown).
func (s *Service) approve(ctx context.Context, rule ApprovalRule, author string, notBefore time.Time, a Approval) (Approval, ApprovalCheck, error) {
	refuse := func(err error) (Approval, ApprovalCheck, error) {
		return Approval{}, ApprovalCheck{}, s.journalFailure(ctx, err, ApprovalRefused{Kind: a.Kind, Subject: a.Subject, Approver: a.Approver, Reason: err.Error()})
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
	target := ApprovalTarget{Subject: a.Subject, Commit: a.Commit, Digest: a.Digest, NotBefore: notBefore}
	// The ledger keeps its own time of receipt (the team database's clock
	// on PostgreSQL); this one stands where the ledger keeps none.
	a.ReceivedAt = s.d.Clock.Now()
	if err := s.d.Ledger.RecordApproval(ctx, a); err != nil {
		return Approval{}, ApprovalCheck{}, fmt.Errorf("record approval: %w", err)
	}
	if err := s.journal(ctx, ApprovalRecorded{Approval: a}); err != nil {
		return Approval{}, ApprovalCheck{}, err
	}
	all, err := s.d.Ledger.Approvals(ctx, a.Kind, a.Subject)
	if err != nil {
		return a, ApprovalCheck{}, fmt.Errorf("read approvals: %w", err)
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
func (s *Service) sign(ctx context.Context, a Approval) (Approval, error) {
	if s.d.Signer == nil || s.d.Verifier == nil {
		return a, errNoSigner
	}
	sig, err := s.d.Signer.Sign(ctx, a.Approver, NamespaceApproval, a.Statement())
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
func (s *Service) MayApprove(env string, kind ApprovalKind, author string) error {
	e, err := s.d.Project.Env(env)
	if err != nil {
		return err
	}
	return e.Approvals.Rule(kind).Refuses(author, s.d.Actor)
}
