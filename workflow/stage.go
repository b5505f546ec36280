// Package workflow is relcap's domain: a release, the four stages it passes
// through (problem → boundary → decision → evidence), their steps, findings,
// evidence, approvals and policies, the effort clock and the journal chain.
//
// It declares the ports it needs (ports.go) and knows nothing about the SDKs
// or the terminal UI that implement or drive them; workflow/deps_test.go
// enforces that.
package workflow

import (
	"errors"
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

// Sentinel errors the domain and its callers react to. cmd/relcap maps them
// to exit codes in one place.
var (
	// ErrUsage: bad flags, arguments or configuration (exit 2).
	ErrUsage = errors.New("invalid input")
	// ErrBlocked: a policy stops the release: conflict, unapproved, stale,
	// incompatible (exit 3).
	ErrBlocked = errors.New("blocked by policy")
	// ErrApprovalRequired: the plan or promotion waits for approvals (exit 3).
	ErrApprovalRequired = fmt.Errorf("%w: approval required", ErrBlocked)
	// ErrAwaitingForge: the promotion's pull request waits for reviews or
	// a merge on the forge (exit 3). Nothing in the ledger changes when it
	// is reviewed there, so the cockpit re-runs the step every
	// ForgePollInterval and relcap resume re-checks.
	ErrAwaitingForge = fmt.Errorf("%w: waiting on the forge", ErrApprovalRequired)
	// ErrForgeNotReady is a forge's refusal to merge for want of what its
	// branch protection requires and a person can still give: approving
	// reviews, passing checks. Gitea reports such a pull request mergeable
	// (it has no conflict) and says so only when asked to merge, so this
	// is a wait on the forge, not a block.
	ErrForgeNotReady = errors.New("the forge does not let it merge yet")
	// ErrStalePlan: the plan no longer matches its inputs or state (exit 3).
	ErrStalePlan = fmt.Errorf("%w: stale plan", ErrBlocked)
	// ErrAlreadyApplied: the plan was applied already; its fingerprint
	// names a state that is gone, and it is never applied again (exit 3).
	ErrAlreadyApplied = fmt.Errorf("%w: plan already applied", ErrBlocked)
	// ErrApplyOutcomeUnknown: an apply of the plan may have started and
	// whether it changed anything cannot be established (Terraform gone
	// without an exit status); relcap never applies it again and says
	// what to inspect (exit 3).
	ErrApplyOutcomeUnknown = fmt.Errorf("%w: outcome of an earlier apply unknown", ErrBlocked)
	// ErrPlanRefused: relcap cannot vouch for the plan (errored,
	// incomplete, a failing check, drift on another owner's fields), so
	// no approval makes it applicable (exit 3).
	ErrPlanRefused = fmt.Errorf("%w: plan refused", ErrBlocked)
	// ErrOwnershipConflict: an object or field has more than one owner (exit 3).
	ErrOwnershipConflict = fmt.Errorf("%w: ownership conflict", ErrBlocked)
	// ErrNotPromotable: the digest has not converged in the previous
	// environment, or lacks required provenance (exit 3).
	ErrNotPromotable = fmt.Errorf("%w: digest not promotable", ErrBlocked)
	// ErrIncompatible: a rollback target cannot run against today's data (exit 3).
	ErrIncompatible = fmt.Errorf("%w: incompatible release", ErrBlocked)
	// ErrTampered: a journal failed verification (exit 3).
	ErrTampered = fmt.Errorf("%w: journal verification failed", ErrBlocked)
	// ErrDigestMismatch: the bytes in the target are not the bytes promoted.
	ErrDigestMismatch = errors.New("digest mismatch")
	// ErrNotConverged: convergence failed or timed out (exit 4).
	ErrNotConverged = errors.New("not converged")
	// ErrNotFound: the named release, session or plan does not exist.
	ErrNotFound = errors.New("not found")
	// ErrNotReconciled: Argo CD's application controller did not act on
	// a refresh request in time (a Refresher's answer).
	ErrNotReconciled = errors.New("the application controller did not reconcile the application")
	// ErrLocked: another writer holds the lock (state lock, apply lock).
	ErrLocked = errors.New("locked by another writer")
)

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
