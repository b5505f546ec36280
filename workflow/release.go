package workflow

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/image"
)

// ReleaseStatus is where a whole release stands.
type ReleaseStatus string

// Release statuses. A release left InProgress or Blocked and never resumed
// counts as failed in reports (stalled); one ended on purpose with relcap
// release abandon is Abandoned, which is not a failure.
const (
	ReleaseInProgress ReleaseStatus = "in-progress"
	ReleaseBlocked    ReleaseStatus = "blocked"
	ReleaseFailed     ReleaseStatus = "failed"
	// ReleaseConverged: a release that shipped an image ended with its
	// evidence (Argo CD converged on the digest).
	ReleaseConverged ReleaseStatus = "converged"
	// ReleaseSucceeded: an infrastructure-only release ended with its
	// evidence (applied, ownership checked, affected applications
	// converged); see Shape.
	ReleaseSucceeded  ReleaseStatus = "succeeded"
	ReleaseRolledBack ReleaseStatus = "rolled-back"
	// ReleaseEnded marks a break-glass that was ended.
	ReleaseEnded ReleaseStatus = "ended"
	// ReleaseAbandoned: ended by a person, with a reason, before it
	// shipped (relcap release abandon); never a change failure.
	ReleaseAbandoned ReleaseStatus = "abandoned"
)

// Done reports whether the release will not run again.
func (s ReleaseStatus) Done() bool {
	return s.Succeeded() || s == ReleaseRolledBack || s == ReleaseEnded || s == ReleaseAbandoned
}

// Succeeded reports whether the release ended with its evidence, whatever
// its shape.
func (s ReleaseStatus) Succeeded() bool { return s == ReleaseConverged || s == ReleaseSucceeded }

// Release is one environment's release of one image: the unit a captain
// drives through the four stages, resumes after an interruption and reports
// effort against.
type Release struct {
	ID      string `json:"id"`
	App     string `json:"app"`
	Env     string `json:"env"`
	Image   string `json:"image"` // the reference as given
	Captain string `json:"captain"`
	// CaptainSignature is the captain's SSH signature of
	// CaptainStatement(), made when the release started; zero without a
	// people file.
	CaptainSignature approval.Signature `json:"captain_signature,omitzero"`
	Status           ReleaseStatus      `json:"status"`
	Kind             ReleaseKind        `json:"kind"`
	RollbackOf       string             `json:"rollback_of,omitempty"`
	// Sandbox: a practice project's release, which reports never count.
	Sandbox       bool          `json:"sandbox,omitempty"`
	Compatibility Compatibility `json:"compatibility,omitzero"`
	Steps         []StepRecord  `json:"steps"`
	CreatedAt     time.Time     `json:"created_at"`
	UpdatedAt     time.Time     `json:"updated_at"`
	EndedAt       time.Time     `json:"ended_at,omitzero"`
	// Checkpoints are what the release has durably done; a step consults
	// them before repeating a side effect. They are stored under
	// "outputs", the name of the string map they replace.
	Checkpoints Checkpoints `json:"outputs,omitzero"`
	// Shape is what the release carries (infrastructure, image, both),
	// as last decided by DecideShape; empty in releases written before
	// shapes, which ShapeOf decides on read.
	Shape Shape `json:"shape,omitempty"`
	// Abandonment is who ended the release, when and why (relcap release
	// abandon); zero unless Status is ReleaseAbandoned.
	Abandonment Abandonment `json:"abandonment,omitzero"`
}

// ReleaseKind says what a release record is.
type ReleaseKind string

// Release kinds.
const (
	KindRelease   ReleaseKind = "release"
	KindRollback  ReleaseKind = "rollback"
	KindPromotion ReleaseKind = "promotion" // relcap promote: the decision step alone
	// KindBreakGlass records are pauses of reconciliation, not releases:
	// they share the ledger, the journal and the effort clock, and
	// reports leave them out of release counts.
	KindBreakGlass ReleaseKind = "break-glass"
)

// Checkpoints are the side effects a release has completed, each recorded
// durably before the next happens, so a resumed release never repeats one.
// The JSON names are the keys of the string map releases were stored with
// before checkpoints were typed; ledgers written then read unchanged.
type Checkpoints struct {
	// Fingerprint is the reviewed plan the release applies.
	Fingerprint string `json:"plan.fingerprint,omitempty"`
	// Applied is set once the plan is applied (or had nothing to apply).
	Applied Applied `json:"apply.done,omitzero"`
	// ApplyRuns are the attempts at applying, each recorded before its
	// Terraform starts, with where its run is kept: an attempt may have
	// started, so a resumed release takes its result from that run
	// and never starts its plan again while the outcome is unknown.
	ApplyRuns []ApplyRun `json:"apply.runs,omitempty"`
	// Digest is the one immutable digest the release promotes, resolved
	// once, in DigestRepository.
	Digest           image.Digest `json:"digest,omitzero"`
	DigestRepository string       `json:"digest.repository,omitempty"`
	// ForceUnverified is the journaled reason for promoting a digest that
	// has not converged in the previous environment.
	ForceUnverified string `json:"promotion.force-unverified,omitempty"`
	// CopiedTo is the environment's repository, once the digest is
	// verified there.
	CopiedTo string `json:"promotion.copied,omitempty"`
	// EnvBranch, EnvPinned and EnvDiff are the relcap branch of the
	// environment repo, the commit pinning the digest on it, and its diff.
	EnvBranch string `json:"envrepo.branch,omitempty"`
	EnvPinned string `json:"envrepo.pinned,omitempty"`
	EnvDiff   string `json:"envrepo.diff,omitempty"`
	// EnvCommit is the environment branch after landing: the revision
	// Argo CD must sync.
	EnvCommit string `json:"envrepo.commit,omitempty"`
	// ConvergedAt is when Argo CD was synced, healthy and running Digest.
	ConvergedAt time.Time `json:"converged.at,omitzero"`
	// RestoreFrom is, for a rollback, the revision whose environment file
	// it restores: where the release it returns to converged.
	RestoreFrom string `json:"rollback.restore-from,omitempty"`
	// PullRequest is, where the environment's changes go through the
	// forge (envrepo.review.via: pull_request), the pull request relcap
	// opened for EnvBranch: its number and address once opened, the
	// reviews as last counted and, once merged, the merge commit (which
	// is then EnvCommit). Releases written before have none.
	PullRequest *forge.PullRequestRecord `json:"promotion.pull_request,omitempty"`
	// PromotionHook is set on the releases a recovery drill starts
	// (its fields keep their JSON names: rehearsal, rehearsal.unavailable).
	PromotionHook
	// BreakGlassPause is set on break-glass records only.
	BreakGlassPause
}

// BreakGlassPause is what a break-glass record keeps of its pause: the
// deny sync window that holds it (or, in records made before windows, the
// sync policy to restore), the time box, who approved it and why, and the
// branch its drift was captured on.
type BreakGlassPause struct {
	// Window is the deny window on the application's Argo CD project
	// that pauses automated sync and self-heal until ExpiresAt, when Argo
	// CD lifts it by itself. It is recorded before it is made, so a crash
	// in between leaves a record that status and end clean up.
	Window *SyncWindow `json:"breakglass.window,omitempty"`
	// WindowRemoved is when relcap removed Window from the project (at
	// end, or once it had closed): its schedule would open it again a
	// year later.
	WindowRemoved time.Time `json:"breakglass.window_removed,omitzero"`
	// SavedPolicy is the sync policy to restore at end, in records made
	// before break-glass used sync windows (it turned automated sync off
	// instead); nil in newer ones.
	SavedPolicy *SyncPolicy `json:"breakglass.saved_policy,omitempty"`
	ExpiresAt   time.Time   `json:"breakglass.expires_at,omitzero"`
	Reason      string      `json:"breakglass.reason,omitempty"`
	Approver    string      `json:"breakglass.approver,omitempty"`
	// ApprovedAt is when the signed approval this break-glass used was
	// given; with Approver it names that approval, which no other
	// break-glass may use.
	ApprovedAt time.Time `json:"breakglass.approved_at,omitzero"`
	Capture    string    `json:"breakglass.capture,omitempty"`
	// CapturePullRequest is the pull request opened for Capture where
	// the environment's changes go through the forge.
	CapturePullRequest *forge.PullRequestRecord `json:"breakglass.capture_pull_request,omitempty"`
}

// ApplyRunsOf are the recorded attempts at applying plan fp.
func (c Checkpoints) ApplyRunsOf(fp string) []ApplyRun {
	var runs []ApplyRun
	for _, r := range c.ApplyRuns {
		if r.Fingerprint == fp {
			runs = append(runs, r)
		}
	}
	return runs
}

// Landed reports whether the promotion landed: the release has an intended
// revision.
func (c Checkpoints) Landed() bool { return c.EnvCommit != "" }

// Converged reports whether the release converged.
func (c Checkpoints) Converged() bool { return !c.ConvergedAt.IsZero() }

// Applied records that the apply step is done: the state serial it left, or
// that the plan had nothing to apply. It is stored as one string, as it was
// before checkpoints were typed: the serial, or "no-changes".
type Applied struct {
	Done        bool
	NoChanges   bool
	StateSerial int64
}

// IsZero reports whether nothing was applied yet.
func (a Applied) IsZero() bool { return !a.Done }

// MarshalText stores the serial, or "no-changes".
func (a Applied) MarshalText() ([]byte, error) {
	if a.NoChanges {
		return []byte("no-changes"), nil
	}
	return strconv.AppendInt(nil, a.StateSerial, 10), nil
}

// UnmarshalText reads what MarshalText wrote.
func (a *Applied) UnmarshalText(b []byte) error {
	switch s := string(b); s {
	case "":
		*a = Applied{}
	case "no-changes":
		*a = Applied{Done: true, NoChanges: true}
	default:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("apply checkpoint %q: want a state serial or no-changes", s)
		}
		*a = Applied{Done: true, StateSerial: n}
	}
	return nil
}

// StepRecord is the persisted state of one step.
type StepRecord struct {
	Kind      StepKind            `json:"kind"`
	Status    StepStatus          `json:"status"`
	Message   string              `json:"message,omitempty"`
	Findings  []finding.Finding   `json:"findings,omitempty"`
	Evidence  []evidence.Evidence `json:"evidence,omitempty"`
	Attempts  int                 `json:"attempts,omitempty"`
	StartedAt time.Time           `json:"started_at,omitzero"`
	EndedAt   time.Time           `json:"ended_at,omitzero"`
}

// NewReleaseOf is NewRelease of project p: its app, and its sandbox mark.
func (p *Project) NewReleaseOf(id, env, image, captain string, now time.Time) *Release {
	r := NewRelease(id, p.App, env, image, captain, now)
	r.Sandbox = p.Sandbox
	return r
}

// NewRelease makes a release with every step pending.
func NewRelease(id, app, env, image, captain string, now time.Time) *Release {
	r := &Release{
		ID: id, App: app, Env: env, Image: image, Captain: captain,
		Status: ReleaseInProgress, Kind: KindRelease,
		CreatedAt: now, UpdatedAt: now,
	}
	for _, k := range StepKinds {
		r.Steps = append(r.Steps, StepRecord{Kind: k, Status: Pending})
	}
	return r
}

// NewReleaseID makes a readable, unique release ID: app-env-date-random.
func NewReleaseID(app, env string, now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%s-%s-%s", app, env, now.UTC().Format("20060102"), hex.EncodeToString(b[:]))
}

// Step returns the record of kind k.
func (r *Release) Step(k StepKind) *StepRecord {
	for i := range r.Steps {
		if r.Steps[i].Kind == k {
			return &r.Steps[i]
		}
	}
	r.Steps = append(r.Steps, StepRecord{Kind: k})
	return &r.Steps[len(r.Steps)-1]
}

// AwaitsReplan reports whether r failed in its apply and waits to be
// planned again (the apply step sent it back to plan review): it stays
// the environment's open release, so relcap plan (the failure's next safe
// action) plans it again rather than starting another release beside a
// half-applied one, and the cockpit offers r to plan again.
func (r *Release) AwaitsReplan() bool {
	return r.Status == ReleaseFailed && r.Step(StepApply).Status == Failed && r.Step(StepPlanReview).Status == Pending
}

// Current is the first step that has not succeeded, or false when all have.
func (r *Release) Current() (StepKind, bool) {
	for _, k := range StepKinds {
		if !r.Step(k).Status.Done() {
			return k, true
		}
	}
	return 0, false
}

// StageStatus summarises a stage from its steps: blocked or failed wins,
// then running, then pending; succeeded only when all steps did.
func (r *Release) StageStatus(s Stage) StepStatus {
	status := Succeeded
	for _, k := range StepKinds {
		if k.Stage() != s {
			continue
		}
		switch st := r.Step(k).Status; st {
		case Skipped:
		case Blocked, Failed:
			return st
		case Running:
			status = Running
		case Pending:
			if status != Running {
				status = Pending
			}
		}
	}
	return status
}

// Clone returns a deep copy, so events hand UIs a snapshot they may keep.
func (r *Release) Clone() *Release {
	c := *r
	c.Steps = make([]StepRecord, len(r.Steps))
	for i, s := range r.Steps {
		s.Findings = append([]finding.Finding(nil), s.Findings...)
		s.Evidence = append([]evidence.Evidence(nil), s.Evidence...)
		c.Steps[i] = s
	}
	// The pull request records are replaced, never changed in place, but
	// a copy keeps a screen's release its own whatever a later change does.
	for _, pr := range []**forge.PullRequestRecord{&c.Checkpoints.PullRequest, &c.Checkpoints.CapturePullRequest} {
		if *pr != nil {
			cp := **pr
			cp.Reviews = append([]forge.ReviewVerdict(nil), cp.Reviews...)
			*pr = &cp
		}
	}
	return &c
}
