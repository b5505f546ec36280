// Package approval is the approval policy: what an approval is, the exact
// statement its signature covers, and how many of which approvals count
// for an environment's rule. It imports nothing of the release core;
// the core records approvals and applies the rule before apply and land.
package approval

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
)

// ApprovalKind says what an approval approves.
type Kind string

// Approval kinds.
const (
	// ApprovePlan approves one saved plan; its subject is the fingerprint.
	Plan Kind = "plan"
	// ApprovePromotion approves one release's promotion; its subject is
	// the release ID.
	Promotion Kind = "promotion"
	// ApproveBreakGlass approves one break-glass pause in a production
	// environment; its subject is the environment's application as
	// BreakGlassSubject names it ("prod/web-prod") and its TimeBox the
	// longest pause it allows.
	BreakGlass Kind = "breakglass"
)

// Approval records who approved which exact thing, and when. Subject is a
// plan fingerprint, a release ID (promotion) or an environment's
// application (break-glass); an approval never carries over to another
// subject.
type Approval struct {
	Kind     Kind      `json:"kind"`
	Subject  string    `json:"subject"`
	Env      string    `json:"env"`
	Approver string    `json:"approver"`
	Comment  string    `json:"comment,omitempty"`
	At       time.Time `json:"at"`
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
type Check struct {
	Required int
	Counted  []Approval
	// Ignored are approvals that do not count, with why.
	Ignored map[string]string
	// Warnings are what the reader must know of how they were counted:
	// a people file nothing protects, or a working copy that differs.
	Warnings []string
}

// Satisfied reports whether enough approvals counted.
func (c Check) Satisfied() bool { return len(c.Counted) >= c.Required }

// Missing is how many more approvals are needed.
func (c Check) Missing() int { return max(0, c.Required-len(c.Counted)) }

// ApprovedBy reports whether person's approval counted.
func (c Check) ApprovedBy(person string) bool {
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
type Rule struct {
	Kind               Kind
	Env                string
	Required           int
	DistinctFromAuthor bool
	Signed             bool
	// Approvers are the principals who may approve; none means anyone the
	// people file names.
	Approvers []string
}

// Rule is the policy's rule for kind.
func (p Policy) Rule(kind Kind) Rule {
	r := Rule{Kind: kind, DistinctFromAuthor: p.DistinctFromAuthor, Signed: p.Signed}
	switch kind {
	case Plan:
		r.Required, r.Approvers = p.Plan, p.Approvers.Plan
	case Promotion:
		r.Required, r.Approvers = p.Promotion, p.Approvers.Promotion
	case BreakGlass:
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
func (r Rule) Refuses(author, approver string) error {
	if len(r.Approvers) > 0 && !slices.Contains(r.Approvers, approver) {
		return fmt.Errorf("%w: %s may not approve %s here: approvers.%s lists %s", fault.ErrBlocked, approver, r.Kind, r.Kind, strings.Join(r.Approvers, ", "))
	}
	if r.DistinctFromAuthor && author != "" && author == approver {
		what := "wrote this plan"
		switch r.Kind {
		case Promotion:
			what = "captains this release"
		case BreakGlass:
			return fmt.Errorf("%w: %s breaks the glass, and a break-glass needs someone else's approval", fault.ErrBlocked, approver)
		}
		return fmt.Errorf("%w: %s %s and the environment requires approval by someone else (approvals.distinct_from_author)", fault.ErrBlocked, approver, what)
	}
	return nil
}

// ApprovalTarget is exactly what an approval must be of to count: the
// subject (plan fingerprint, release ID) and, for a promotion, the pinned
// commit and the digest it pins.
type Target struct {
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
func (r Rule) Count(target Target, author string, approvals []Approval, verify VerifyFunc) Check {
	c := Check{Required: r.Required, Ignored: map[string]string{}}
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
func (r Rule) ignores(target Target, author string, a Approval, verify VerifyFunc) string {
	switch {
	case a.Kind != r.Kind || a.Subject != target.Subject:
		return fmt.Sprintf("approved %s %s, not this one", a.Kind, a.Subject)
	case target.Commit != "" && a.Commit != target.Commit:
		return fmt.Sprintf("approved commit %s, but the change is now at %s: the branch moved after approval", finding.ShortHash(a.Commit), finding.ShortHash(target.Commit))
	case target.Digest != "" && a.Digest != target.Digest:
		return fmt.Sprintf("approved digest %s, not %s", a.Digest, target.Digest)
	case r.Refuses(author, a.Approver) != nil:
		return strings.TrimPrefix(r.Refuses(author, a.Approver).Error(), fault.ErrBlocked.Error()+": ")
	case a.Signature.IsZero() && r.Signed:
		return "unsigned, and this environment counts only approvals signed with the approver's key"
	case !a.ReceivedAt.IsZero() && (a.At.Sub(a.ReceivedAt) > StatementSkew || a.ReceivedAt.Sub(a.At) > StatementSkew):
		return fmt.Sprintf("its statement is dated %s but relcap received it at %s: a statement dated more than %s from its receipt does not count (approve again: relcap approve)",
			a.At.UTC().Format(time.RFC3339), a.ReceivedAt.UTC().Format(time.RFC3339), finding.ShortDuration(StatementSkew))
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
func (c Check) Unsigned() []Approval {
	var out []Approval
	for _, a := range c.Counted {
		if a.Signature.IsZero() {
			out = append(out, a)
		}
	}
	return out
}

// ApprovalPolicy says how many approvals each decision needs and whether the
// author may count as one.
type Policy struct {
	Plan               int
	Promotion          int
	DistinctFromAuthor bool
	// Signed says approvals count only when signed with the approver's own
	// key and verified against the people file at the time of use. The
	// configuration turns it off explicitly (approvals.signed: false), and
	// every report says which approvals were unsigned.
	Signed bool
	// Approvers are who may approve each decision (principals of the people
	// file); none listed means anyone the file names.
	Approvers Approvers
}

// Approvers lists, per decision, the principals allowed to approve it.
type Approvers struct {
	Plan       []string
	Promotion  []string
	BreakGlass []string
	// Apply are who may run relcap apply (approvers.apply); in a team
	// store, shared plans are encrypted to them alone.
	Apply []string
}

// NeedsApprovals reports whether any decision in the environment waits for
// someone's approval (production break-glass always does).
func (p Policy) NeedsApprovals(production bool) bool {
	return p.Plan > 0 || p.Promotion > 0 || production
}

// SignatureTime is the time a recorded approval's signature is checked
// at when nothing it approves bounds it (journal verify re-checking it):
// when the ledger received it, or its statement's own time for approvals
// recorded before relcap kept the receipt.
func (a Approval) SignatureTime() time.Time { return a.signatureTime(time.Time{}) }

// NotCountedNote says, for a refusal's message, which approvals did not count
// and why; "" when none were ignored.
func (c Check) NotCountedNote() string {
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
