package workflow

import (
	"fmt"
	"time"
)

// Approval subjects.
const (
	ApprovePlan      = "plan"
	ApprovePromotion = "promotion"
)

// Approval records who approved which exact thing, and when. Subject is a
// plan fingerprint or a release ID (promotion); an approval never carries
// over to another fingerprint.
type Approval struct {
	Kind     string    `json:"kind"` // ApprovePlan or ApprovePromotion
	Subject  string    `json:"subject"`
	Env      string    `json:"env"`
	Approver string    `json:"approver"`
	Comment  string    `json:"comment,omitempty"`
	At       time.Time `json:"at"`
}

// ApprovalCheck is the outcome of counting approvals against a policy.
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

// CountApprovals applies a policy to the approvals recorded for one subject:
// one approval per person, only for this exact subject, and not the author's
// own when the policy wants them distinct.
func CountApprovals(kind, subject, author string, required int, distinct bool, approvals []Approval) ApprovalCheck {
	c := ApprovalCheck{Required: required, Ignored: map[string]string{}}
	seen := map[string]bool{}
	for _, a := range approvals {
		switch {
		case a.Kind != kind || a.Subject != subject:
			c.Ignored[a.Approver] = fmt.Sprintf("approved %s %s, not this one", a.Kind, a.Subject)
		case distinct && a.Approver == author:
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

// CheckSelfApproval refuses an approval the policy would never count, so the
// approver hears it when approving, not at apply time.
func CheckSelfApproval(policy ApprovalPolicy, author, approver string) error {
	if policy.DistinctFromAuthor && author != "" && author == approver {
		return fmt.Errorf("%w: %s wrote this plan and the environment requires approval by someone else (approvals.distinct_from_author)", ErrBlocked, approver)
	}
	return nil
}
