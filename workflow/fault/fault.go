// Package fault holds the sentinel errors of the release: what the domain
// and its callers react to (tui/cli maps them to exit codes). It imports
// nothing of relcap, so the leaves beside the core (approvals, digests,
// locks) wrap the same errors the core does.
package fault

import (
	"errors"
	"fmt"
)

// Sentinel errors the domain and its callers react to. tui/cli maps them
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
	// ErrCustody: the state's custody (backend, separation) stops the
	// plan until it is fixed or accepted in relcap.yaml (workflow/custody).
	ErrCustody = fmt.Errorf("%w: state custody", ErrBlocked)
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
