// Package workflow is relcap's domain: a release, the four stages it passes
// through (problem → boundary → decision → evidence), their steps, findings,
// evidence, approvals and policies, the effort clock and the journal chain.
//
// It declares the ports it needs (ports.go) and knows nothing about the SDKs
// or the terminal UI that implement or drive them; workflow/deps_test.go
// enforces that.
package workflow

import (
	"fmt"
)

// Stage is one of the four stages of the guided flow.
type Stage int

// The stages, in the order a release passes through them.
const (
	StageProblem  Stage = iota // who owns what
	StageBoundary              // the exact Terraform plan, approved and applied
	StageDecision              // one immutable digest promoted and pinned
	StageEvidence              // Argo CD converged on that digest
)

// Stages lists every stage in flow order.
var Stages = []Stage{StageProblem, StageBoundary, StageDecision, StageEvidence}

func (s Stage) String() string {
	switch s {
	case StageProblem:
		return "problem"
	case StageBoundary:
		return "boundary"
	case StageDecision:
		return "decision"
	case StageEvidence:
		return "evidence"
	}
	return fmt.Sprintf("stage(%d)", int(s))
}

// StepKind names a step of the release flow.
type StepKind int

// The steps, in the order the Service runs them.
const (
	StepOwnership   StepKind = iota // ownership check
	StepPlanReview                  // saved plan, review, approvals bound to its fingerprint
	StepApply                       // apply exactly the approved plan
	StepPromotion                   // digest copy and environment-repo pin
	StepConvergence                 // Argo CD synced, healthy, running the digest
)

// StepKinds lists every step in run order.
var StepKinds = []StepKind{StepOwnership, StepPlanReview, StepApply, StepPromotion, StepConvergence}

func (k StepKind) String() string {
	switch k {
	case StepOwnership:
		return "ownership"
	case StepPlanReview:
		return "plan-review"
	case StepApply:
		return "apply"
	case StepPromotion:
		return "promotion"
	case StepConvergence:
		return "convergence"
	}
	return fmt.Sprintf("step(%d)", int(k))
}

// Title is the human name of the step, as screens and reports show it.
func (k StepKind) Title() string {
	switch k {
	case StepOwnership:
		return "Ownership check"
	case StepPlanReview:
		return "Plan review"
	case StepApply:
		return "Apply"
	case StepPromotion:
		return "Digest promotion"
	case StepConvergence:
		return "Convergence watch"
	}
	return k.String()
}

// Stage is the stage the step belongs to.
func (k StepKind) Stage() Stage {
	switch k {
	case StepOwnership:
		return StageProblem
	case StepPlanReview, StepApply:
		return StageBoundary
	case StepPromotion:
		return StageDecision
	default:
		return StageEvidence
	}
}

// ParseStepKind is the inverse of StepKind.String.
func ParseStepKind(s string) (StepKind, error) {
	for _, k := range StepKinds {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown step %q (want one of ownership, plan-review, apply, promotion, convergence)", s)
}

// StepStatus is where a step stands.
type StepStatus int

// Done reports whether the step needs no more work.
func (s StepStatus) Done() bool { return s == Succeeded || s == Skipped }

// Step statuses. Blocked means a policy or a person stops the step (exit 3);
// Failed means it was attempted and went wrong.
const (
	Pending StepStatus = iota
	Running
	Succeeded
	Failed
	Blocked
	// Skipped: not part of this run (relcap promote runs the decision step
	// alone); it counts as done.
	Skipped
)

func (s StepStatus) String() string {
	switch s {
	case Pending:
		return "pending"
	case Running:
		return "running"
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	case Blocked:
		return "blocked"
	case Skipped:
		return "skipped"
	}
	return fmt.Sprintf("status(%d)", int(s))
}

// MarshalText stores statuses by name so ledgers stay readable.
func (s StepStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a status name.
func (s *StepStatus) UnmarshalText(b []byte) error {
	for _, c := range []StepStatus{Pending, Running, Succeeded, Failed, Blocked, Skipped} {
		if c.String() == string(b) {
			*s = c
			return nil
		}
	}
	return fmt.Errorf("unknown step status %q", b)
}

// MarshalText stores step kinds by name.
func (k StepKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses a step name.
func (k *StepKind) UnmarshalText(b []byte) error {
	v, err := ParseStepKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// StepError says which step an error came from.
type StepError struct {
	Step StepKind
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("%s: %v", e.Step, e.Err) }

// Unwrap exposes the cause to errors.Is/As.
func (e *StepError) Unwrap() error { return e.Err }

// TerminalError marks an error that retrying will not fix.
type TerminalError struct{ Err error }

func (e *TerminalError) Error() string { return e.Err.Error() }

// Unwrap exposes the cause to errors.Is/As.
func (e *TerminalError) Unwrap() error { return e.Err }
