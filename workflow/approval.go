package workflow

import (
	"fmt"
	"time"
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
)

// Approval records who approved which exact thing, and when. Subject is a
// plan fingerprint or a release ID (promotion); an approval never carries
// over to another subject.
type Approval struct {
	Kind     ApprovalKind `json:"kind"`
	Subject  string       `json:"subject"`
	Env      string       `json:"env"`
	Approver string       `json:"approver"`
	Comment  string       `json:"comment,omitempty"`
	At       time.Time    `json:"at"`
}

// ApprovalCheck is the outcome of counting approvals against a rule.
type ApprovalCheck struct {
	Required int
	Counted  []Approval
	// Ignored are approvals that do not count, with why.
	Ignored map[string]string
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
// many approvals it needs and whether the author's own counts. It is the
// one place the approval policy is decided; the Service applies it before
// apply and land, and the screens ask it before offering an approve key.
type ApprovalRule struct {
	Kind               ApprovalKind
	Required           int
	DistinctFromAuthor bool
}

// Rule is the policy's rule for kind.
func (p ApprovalPolicy) Rule(kind ApprovalKind) ApprovalRule {
	r := ApprovalRule{Kind: kind, DistinctFromAuthor: p.DistinctFromAuthor}
	switch kind {
	case ApprovePlan:
		r.Required = p.Plan
	case ApprovePromotion:
		r.Required = p.Promotion
	}
	return r
}

// Refuses says why approver's approval of author's change would never
// count, or nil when it would: the approver hears it when approving, not
// at apply time.
func (r ApprovalRule) Refuses(author, approver string) error {
	if r.DistinctFromAuthor && author != "" && author == approver {
		what := "wrote this plan"
		if r.Kind == ApprovePromotion {
			what = "captains this release"
		}
		return fmt.Errorf("%w: %s %s and the environment requires approval by someone else (approvals.distinct_from_author)", ErrBlocked, approver, what)
	}
	return nil
}

// Count applies the rule to the approvals recorded for one subject: one
// approval per person, only for this exact subject, and not the author's
// own when the rule wants them distinct.
func (r ApprovalRule) Count(subject, author string, approvals []Approval) ApprovalCheck {
	c := ApprovalCheck{Required: r.Required, Ignored: map[string]string{}}
	seen := map[string]bool{}
	for _, a := range approvals {
		switch {
		case a.Kind != r.Kind || a.Subject != subject:
			c.Ignored[a.Approver] = fmt.Sprintf("approved %s %s, not this one", a.Kind, a.Subject)
		case r.Refuses(author, a.Approver) != nil:
			c.Ignored[a.Approver] = "the author cannot approve their own change in this environment"
		case seen[a.Approver]:
			// Approving twice counts once.
		default:
			seen[a.Approver] = true
			c.Counted = append(c.Counted, a)
		}
	}
	return c
}
