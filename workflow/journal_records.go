package workflow

import (
	"time"

	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/journal"
)

// JournalRecord is the data of one journal entry. Its type says what it
// records, and JournalKind the name the entry is stored under. Every kind
// relcap journals is declared in this file, which is the catalogue an
// auditor reads: one type per kind, its fields named as they appear in the
// entry's data. Kinds are stored, so their names never change.
type JournalRecord interface {
	JournalKind() journal.Kind
}

// Sessions: one per state-changing command or cockpit run.

// SessionOpened opens every session: the command and its arguments.
type SessionOpened struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Relcap  string   `json:"relcap"` // relcap's version
	// Ledger is the identity of the ledger the session is recorded in
	// (LedgerIdentity): journal verify tells a journal whose ledger row
	// was deleted from one of another ledger sharing the sessions
	// directory. Empty in journals from before it was recorded.
	Ledger string `json:"ledger,omitempty"`
}

// SessionRelease links the session to a release it works on; a session
// links each release once.
type SessionRelease struct {
	Release string `json:"release"`
}

// SessionClosed closes every session with the command's outcome.
type SessionClosed struct {
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error,omitempty"`
}

// ScreenRecorded vouches for a cockpit's screen recording beside the
// journal (File, relative to the session's directory): journal verify
// checks the file still has this SHA-256.
type ScreenRecorded struct {
	File    string `json:"file"`
	Release string `json:"release"`
	SHA256  string `json:"sha256"`
}

// A release run.

// ReleaseStarted: a release (or promotion) was created.
type ReleaseStarted struct {
	Release         string      `json:"release"`
	Kind            ReleaseKind `json:"kind"`
	Env             string      `json:"env"`
	Image           string      `json:"image"`
	Captain         string      `json:"captain"`
	ForceUnverified string      `json:"force_unverified"`
}

// ReleaseImageSet: a release started without its image (by relcap plan)
// was given it by relcap promote.
type ReleaseImageSet struct {
	Release         string `json:"release"`
	Image           string `json:"image"`
	ForceUnverified string `json:"force_unverified,omitempty"`
}

// StepStarted: a step began (again, when Resumed or Attempt > 1).
type StepStarted struct {
	Release string `json:"release"`
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	Resumed bool   `json:"resumed"`
}

// StepFinished: a step ended with Status, its evidence and findings.
type StepFinished struct {
	Release  string            `json:"release"`
	Step     string            `json:"step"`
	Status   string            `json:"status"`
	Message  string            `json:"message"`
	Evidence []Evidence        `json:"evidence,omitempty"`
	Findings []finding.Finding `json:"findings,omitempty"`
}

// StepInterrupted: the run was cancelled inside a step, which stays
// running so resume re-enters it.
type StepInterrupted struct {
	Release string `json:"release"`
	Step    string `json:"step"`
	Error   string `json:"error"`
}

// StepOutput is what the tools a step ran (Terraform) printed for a
// person, line by line, as the cockpit's log pane showed it; Dropped
// counts lines past what the journal keeps of one step.
type StepOutput struct {
	Release string   `json:"release,omitempty"`
	Step    string   `json:"step"`
	Lines   []string `json:"lines"`
	Dropped int      `json:"dropped,omitempty"`
}

// ReleaseDone: the release converged, running Digest at Revision.
type ReleaseDone struct {
	Release  string `json:"release"`
	Digest   string `json:"digest"`
	Revision string `json:"revision"`
}

// EffortLost: measured effort could not be stored in the ledger; the
// release went on, and this entry keeps the loss on record.
type EffortLost struct {
	Release string `json:"release,omitempty"`
	Error   string `json:"error"`
}

// PromotionForceUnverified: a digest was promoted without having converged
// in the previous environment, for Reason.
type PromotionForceUnverified struct {
	Release  string `json:"release"`
	Digest   string `json:"digest"`
	Previous string `json:"previous"`
	Reason   string `json:"reason"`
}

// OperationTerminated (as evidence, and journaled under
// convergence.operation-terminated) ends Argo CD's retries of a failed sync.

// PromotionPROpened: relcap opened (or found open) the pull request of the
// pinned branch Head into Base on the forge.
type PromotionPROpened struct {
	Release string    `json:"release"`
	Env     string    `json:"env"`
	Forge   ForgeKind `json:"forge"`
	Number  int       `json:"number"`
	URL     string    `json:"url"`
	Head    string    `json:"head"`
	Base    string    `json:"base"`
	Commit  string    `json:"commit"`
}

// PromotionPRReviewed: the forge's reviews of the pull request's head
// Commit, as relcap counted them (each login with the principal it is and
// whether it counted, and why not), whenever what counts changed.
type PromotionPRReviewed struct {
	Release  string          `json:"release"`
	Number   int             `json:"number"`
	Commit   string          `json:"commit"`
	Reviews  []ReviewVerdict `json:"reviews"`
	Counted  int             `json:"counted"`
	Required int             `json:"required"`
}

// PromotionPRMerged: the pull request merged at MergeCommit, the revision
// Argo CD must sync; by relcap through the forge's API (ByRelcap) or by a
// person on the forge (MergedBy), with the reviewers that counted.
type PromotionPRMerged struct {
	Release     string          `json:"release"`
	Number      int             `json:"number"`
	URL         string          `json:"url"`
	Reviewed    string          `json:"reviewed"`
	MergeCommit string          `json:"merge_commit"`
	MergedBy    string          `json:"merged_by"`
	ByRelcap    bool            `json:"by_relcap"`
	Reviewers   []ReviewVerdict `json:"reviewers"`
}

// PromotionPRBlocked: the pull request cannot land as it is (closed
// without merge, head moved after approval, refused by the forge), with
// the next safe action.
type PromotionPRBlocked struct {
	Release    string `json:"release"`
	Number     int    `json:"number"`
	Reason     string `json:"reason"`
	NextAction string `json:"next_action"`
}

// TerminateFailed: ending Argo CD's retries was refused; the rollback
// waits them out instead.
type TerminateFailed struct {
	OperationTerminated
	Error string `json:"error"`
}

// Convergence of a revision outside a release (relcap converge --revision).

// RevisionWatch is what a watch of one revision ended with.
type RevisionWatch struct {
	IntendedRevision string       `json:"intended_revision"`
	Digest           string       `json:"digest"`
	Sync             SyncStatus   `json:"sync"`
	Revision         string       `json:"revision"`
	Health           HealthStatus `json:"health"`
	Images           string       `json:"images"`
	Verdict          VerdictKind  `json:"verdict,omitempty"`
	NextAction       string       `json:"next_action,omitempty"`
}

// ConvergeDone, ConvergeFailed and ConvergeTimeout end a revision watch.
type (
	ConvergeDone    struct{ RevisionWatch }
	ConvergeFailed  struct{ RevisionWatch }
	ConvergeTimeout struct{ RevisionWatch }
)

// Plans, applies and state locks.

// PlanStarted: relcap plan began for Env.
type PlanStarted struct {
	Env       string `json:"env"`
	Dir       string `json:"dir"`
	Workspace string `json:"workspace"`
}

// PlanFailed: Terraform could not plan.
type PlanFailed struct {
	Env   string `json:"env"`
	Error string `json:"error"`
}

// PlanRecorded is what the journal keeps of a reviewed plan: counts, flags
// and the fingerprint's inputs, never attribute values.
type PlanRecorded struct {
	Env         string              `json:"env"`
	Fingerprint string              `json:"fingerprint"`
	PlanFileSHA string              `json:"plan_file_sha256"`
	Inputs      PlanInputs          `json:"inputs"`
	Counts      PlanCounts          `json:"counts"`
	Flagged     map[string][]string `json:"flagged"` // risk flag → addresses
	Author      string              `json:"author"`
	// AuthorKey is the fingerprint of the key that signed the plan as its
	// author; "" for a plan nobody signed.
	AuthorKey string `json:"author_key,omitempty"`
	// Drifted counts the objects changed outside Terraform that this apply
	// would write back; Refused says why no approval can make the plan
	// applicable (incomplete, errored, a failing check, owned drift).
	Drifted int    `json:"drifted,omitempty"`
	Refused string `json:"refused,omitempty"`
}

// PlanShared: the plan file is in the team store, encrypted to the keys
// of Principals (the people allowed to apply) until ExpiresAt; Skipped
// are their keys it could not be encrypted to.
type PlanShared struct {
	Env         string             `json:"env"`
	Fingerprint string             `json:"fingerprint"`
	Principals  []string           `json:"principals"`
	Recipients  []PlanRecipient    `json:"recipients"`
	Skipped     []SkippedRecipient `json:"skipped,omitempty"`
	ExpiresAt   time.Time          `json:"expires_at"`
}

// PlanFetched: this machine did not have the plan file, so apply fetched
// it From the team store and decrypted it with Key; its SHA-256 is the
// reviewed plan's.
type PlanFetched struct {
	Env         string    `json:"env"`
	Fingerprint string    `json:"fingerprint"`
	From        string    `json:"from"`
	Key         string    `json:"key"`
	SharedBy    string    `json:"shared_by"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// ApplyRefused: apply refused a plan (unapproved, stale) for Reason.
type ApplyRefused struct {
	Fingerprint string `json:"fingerprint"`
	Reason      string `json:"reason"`
}

// ApplyStarted: Terraform began applying the plan.
type ApplyStarted struct {
	Env         string `json:"env"`
	Fingerprint string `json:"fingerprint"`
	// Run is where the attempt's Terraform run is kept (host:directory),
	// recorded before Terraform may start.
	Run string `json:"run,omitempty"`
}

// ApplyInterrupted: the apply was interrupted and Terraform stopped cleanly.
type ApplyInterrupted struct {
	Fingerprint string `json:"fingerprint"`
	Error       string `json:"error"`
	NextAction  string `json:"next_action"`
}

// ApplyFailed: Terraform failed applying the plan.
type ApplyFailed struct {
	Fingerprint string `json:"fingerprint"`
	Error       string `json:"error"`
	// NextAction is the next safe action relcap showed.
	NextAction string `json:"next_action,omitempty"`
}

// ApplyDone: the plan is applied.
type ApplyDone struct {
	Fingerprint    string `json:"fingerprint"`
	StateSerial    int64  `json:"state_serial"`
	AlreadyApplied bool   `json:"already_applied"`
}

// LockRefused: an apply or a promotion was refused because another
// captain holds its operation lock (Kind, Key): who (Holder, on HolderHost
// as HolderPID), doing what, since when; Reason is the message shown.
type LockRefused struct {
	Kind        LockKind   `json:"kind"`
	Key         string     `json:"key"`
	Release     string     `json:"release,omitempty"`
	Holder      string     `json:"holder"`
	HolderWhat  string     `json:"holder_what"`
	HolderSince *time.Time `json:"holder_since,omitempty"`
	HolderHost  string     `json:"holder_host,omitempty"`
	HolderPID   int        `json:"holder_pid,omitempty"`
	Reason      string     `json:"reason"`
}

// UnlockRequested: a person asked to force-unlock a state lock whose holder
// they checked is gone.
type UnlockRequested struct {
	Env        string `json:"env"`
	LockID     string `json:"lock_id"`
	Reason     string `json:"reason"`
	HolderGone bool   `json:"confirmed_holder_gone"`
}

// UnlockFailed and UnlockDone end a force-unlock.
type (
	UnlockFailed struct {
		Env    string `json:"env"`
		LockID string `json:"lock_id"`
		Error  string `json:"error"`
	}
	UnlockDone struct {
		Env    string `json:"env"`
		LockID string `json:"lock_id"`
	}
)

// Approvals and effort.

// ApprovalRecorded is an approval as the ledger keeps it.
type ApprovalRecorded struct{ Approval }

// ApprovalRefused: an approval the policy would never count was refused.
type ApprovalRefused struct {
	Kind     ApprovalKind `json:"kind"`
	Subject  string       `json:"subject"`
	Approver string       `json:"approver"`
	Reason   string       `json:"reason"`
}

// EffortLogged is off-tool coordination time a person logged.
type EffortLogged struct{ effort.Entry }

// Ownership.

// OwnershipChecked (as evidence) and OwnershipCheckRecorded (relcap
// ownership check): what one environment's check found.
type OwnershipCheckRecorded struct {
	Env      string         `json:"env"`
	Objects  int            `json:"objects"`
	Rows     int            `json:"rows"`
	Findings map[string]int `json:"findings"` // finding code → count
	Blockers int            `json:"blockers"`
}

// OwnershipCheckFailed: a source of managed objects could not be read.
type OwnershipCheckFailed struct {
	Env   string `json:"env"`
	Error string `json:"error"`
}

// Rehearsal (relcap rehearse).

// RehearsalStarted: a drill began from the environment's baseline.
type RehearsalStarted struct {
	Rehearsal string `json:"rehearsal"`
	Env       string `json:"env"`
	Drill     string `json:"drill"`
	Baseline  string `json:"baseline"`
	Digest    string `json:"digest"`
	Expected  string `json:"expected"`
}

// RehearsalProductionOverride: a drill ran in a production environment
// with the captain's --i-know reason.
type RehearsalProductionOverride struct {
	Env    string `json:"env"`
	Drill  string `json:"drill"`
	Reason string `json:"reason"`
}

// RehearsalInjected: the failure is in the environment (Release is the
// drill's release).
type RehearsalInjected struct {
	Rehearsal string    `json:"rehearsal"`
	Release   string    `json:"release"`
	At        time.Time `json:"at"`
	// Plan is the failed-apply drill's plan, about to be applied.
	Plan string `json:"plan,omitempty"`
}

// RehearsalDetected: relcap named the failure, with the four answers as
// it showed them.
type RehearsalDetected struct {
	Rehearsal        string      `json:"rehearsal"`
	Verdict          VerdictKind `json:"verdict"`
	Expected         VerdictKind `json:"expected"`
	IntendedRevision Answer      `json:"intended_revision"`
	ActualArtifact   Answer      `json:"actual_artifact"`
	ControllerStatus Answer      `json:"controller_status"`
	NextSafeAction   Answer      `json:"next_safe_action"`
	DetectSeconds    float64     `json:"detect_seconds"`
}

// RehearsalRecovered: the recovery release converged on the baseline digest.
type RehearsalRecovered struct {
	Rehearsal      string  `json:"rehearsal"`
	Release        string  `json:"release"`
	Digest         string  `json:"digest"`
	RecoverSeconds float64 `json:"recover_seconds"`
	// Plan is the failed-apply drill's recovery plan.
	Plan string `json:"plan,omitempty"`
}

// RehearsalPassed: detected, named correctly and recovered.
type RehearsalPassed struct {
	Rehearsal string `json:"rehearsal"`
}

// RehearsalFailed: not detected, misnamed or not recovered.
type RehearsalFailed struct {
	Rehearsal string `json:"rehearsal"`
	Reason    string `json:"reason"`
}

// RehearsalAbandoned: a drill left unfinished was cleaned up.
type RehearsalAbandoned struct {
	Rehearsal string `json:"rehearsal"`
	Phase     string `json:"phase"`
	Undone    string `json:"undone"`
}

// Rollback.

// RollbackStarted: a rollback release restoring To was created, replacing
// the environment's current release (whose data schema is Schema).
type RollbackStarted struct {
	Release   string `json:"release"`
	Env       string `json:"env"`
	To        string `json:"to"`
	Digest    string `json:"digest"`
	Replacing string `json:"replacing"`
	Schema    int    `json:"schema"`
}

// RollbackRefused: the target release cannot run against today's data.
type RollbackRefused struct {
	Env    string `json:"env"`
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// Break-glass.

// BreakGlassStarted: automated sync and self-heal of App are paused until
// ExpiresAt by Window, a deny window Argo CD lifts by itself, under the
// signed Approval in production. Sessions before sync windows recorded
// SavedPolicy instead: the policy turned off, to restore at end.
type BreakGlassStarted struct {
	ID          string      `json:"id"`
	Env         string      `json:"env"`
	App         string      `json:"app"`
	Reason      string      `json:"reason"`
	Approver    string      `json:"approver"`
	ExpiresAt   time.Time   `json:"expires_at"`
	Window      *SyncWindow `json:"window,omitempty"`
	Approval    *Approval   `json:"approval,omitempty"`
	SavedPolicy *SyncPolicy `json:"saved_policy,omitempty"`
}

// BreakGlassRefused: a break-glass was asked for and refused, with why
// (in production: no signed approval that counts).
type BreakGlassRefused struct {
	Env      string `json:"env"`
	App      string `json:"app"`
	Approver string `json:"approver,omitempty"`
	Reason   string `json:"reason"`
}

// BreakGlassFailed: the pause could not be made; nothing is paused.
type BreakGlassFailed struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// BreakGlassCaptured: the live drift is on Branch for review, in pull
// request PullRequest (URL) where the environment's changes go through the
// forge.
type BreakGlassCaptured struct {
	ID          string `json:"id"`
	Branch      string `json:"branch"`
	Commit      string `json:"commit"`
	Resources   int    `json:"resources"`
	PullRequest int    `json:"pull_request,omitempty"`
	URL         string `json:"url,omitempty"`
}

// BreakGlassWindowRemoved: relcap removed a break-glass's deny window from
// its project (Removed false: it was gone already), at end or because it
// had closed (Expired) and its yearly schedule would open it again.
type BreakGlassWindowRemoved struct {
	ID      string     `json:"id"`
	Window  SyncWindow `json:"window"`
	Expired bool       `json:"expired"`
	Removed bool       `json:"removed"`
}

// BreakGlassEnded: the pause is over. For a window-held pause the window
// is gone (WindowRemoved); a pause from before sync windows had its saved
// sync policy restored (RestoredPolicy).
type BreakGlassEnded struct {
	ID             string      `json:"id"`
	WindowRemoved  bool        `json:"window_removed,omitempty"`
	RestoredPolicy *SyncPolicy `json:"restored_policy,omitempty"`
	Capture        string      `json:"capture"`
	Expired        bool        `json:"expired"`
}

// The demo.

// DemoSandbox: the sandbox a demo runs on.
type DemoSandbox struct {
	Dir             string `json:"dir"`
	Registry        string `json:"registry"`
	Image           string `json:"image"`
	Digest          string `json:"digest"`
	ArgoCDSimulator string `json:"argocd_simulator"`
	EnvRepo         string `json:"env_repo"`
}

// DemoOwnershipFixed: the demo corrected the sandbox's ownership map.
type DemoOwnershipFixed struct {
	File    string   `json:"file"`
	Reason  string   `json:"reason"`
	Removed []string `json:"removed"`
	Added   []string `json:"added"`
}

// The journal kinds, one per record type above (Kind + its name).
const (
	KindSessionOpened               journal.Kind = "session.opened"
	KindSessionRelease              journal.Kind = "session.release"
	KindSessionClosed               journal.Kind = "session.closed"
	KindScreenRecorded              journal.Kind = "screen.recorded"
	KindReleaseStarted              journal.Kind = "release.started"
	KindReleaseImageSet             journal.Kind = "release.image-set"
	KindStepStarted                 journal.Kind = "step.started"
	KindStepFinished                journal.Kind = "step.finished"
	KindStepOutput                  journal.Kind = "step.output"
	KindStepInterrupted             journal.Kind = "step.interrupted"
	KindReleaseDone                 journal.Kind = "release.converged"
	KindEffortLost                  journal.Kind = "effort.lost"
	KindPromotionForceUnverified    journal.Kind = "promotion.force-unverified"
	KindOperationTerminated         journal.Kind = "convergence.operation-terminated"
	KindTerminateFailed             journal.Kind = "convergence.terminate-failed"
	KindConvergeDone                journal.Kind = "converge.done"
	KindConvergeFailed              journal.Kind = "converge.failed"
	KindConvergeTimeout             journal.Kind = "converge.timeout"
	KindPlanStarted                 journal.Kind = "plan.started"
	KindPlanFailed                  journal.Kind = "plan.failed"
	KindPlanRecorded                journal.Kind = "plan.reviewed"
	KindPlanShared                  journal.Kind = "plan.shared"
	KindPlanFetched                 journal.Kind = "plan.fetched"
	KindApplyRefused                journal.Kind = "apply.refused"
	KindApplyStarted                journal.Kind = "apply.started"
	KindApplyInterrupted            journal.Kind = "apply.interrupted"
	KindApplyFailed                 journal.Kind = "apply.failed"
	KindApplyDone                   journal.Kind = "apply.done"
	KindLockRefused                 journal.Kind = "lock.refused"
	KindUnlockRequested             journal.Kind = "unlock.requested"
	KindUnlockFailed                journal.Kind = "unlock.failed"
	KindUnlockDone                  journal.Kind = "unlock.done"
	KindApprovalRecorded            journal.Kind = "approval.recorded"
	KindApprovalRefused             journal.Kind = "approval.refused"
	KindEffortLogged                journal.Kind = "effort.logged"
	KindOwnershipCheckRecorded      journal.Kind = "ownership.checked"
	KindOwnershipCheckFailed        journal.Kind = "ownership.failed"
	KindRehearsalStarted            journal.Kind = "rehearsal.started"
	KindRehearsalProductionOverride journal.Kind = "rehearsal.production_override"
	KindRehearsalInjected           journal.Kind = "rehearsal.injected"
	KindRehearsalDetected           journal.Kind = "rehearsal.detected"
	KindRehearsalRecovered          journal.Kind = "rehearsal.recovered"
	KindRehearsalPassed             journal.Kind = "rehearsal.passed"
	KindRehearsalFailed             journal.Kind = "rehearsal.failed"
	KindRehearsalAbandoned          journal.Kind = "rehearsal.abandoned"
	KindRollbackStarted             journal.Kind = "rollback.started"
	KindRollbackRefused             journal.Kind = "rollback.refused"
	KindBreakGlassStarted           journal.Kind = "breakglass.started"
	KindBreakGlassRefused           journal.Kind = "breakglass.refused"
	KindBreakGlassWindowRemoved     journal.Kind = "breakglass.window-removed"
	KindBreakGlassFailed            journal.Kind = "breakglass.failed"
	KindBreakGlassCaptured          journal.Kind = "breakglass.captured"
	KindBreakGlassEnded             journal.Kind = "breakglass.ended"
	KindPromotionPROpened           journal.Kind = "promotion.pr_opened"
	KindPromotionPRReviewed         journal.Kind = "promotion.pr_reviewed"
	KindPromotionPRMerged           journal.Kind = "promotion.pr_merged"
	KindPromotionPRBlocked          journal.Kind = "promotion.pr_blocked"
	KindDemoSandbox                 journal.Kind = "demo.sandbox"
	KindDemoOwnershipFixed          journal.Kind = "demo.ownership-fixed"
)

// The kinds, by the name each record is stored under.
func (SessionOpened) JournalKind() journal.Kind               { return KindSessionOpened }
func (SessionRelease) JournalKind() journal.Kind              { return KindSessionRelease }
func (SessionClosed) JournalKind() journal.Kind               { return KindSessionClosed }
func (ScreenRecorded) JournalKind() journal.Kind              { return KindScreenRecorded }
func (ReleaseStarted) JournalKind() journal.Kind              { return KindReleaseStarted }
func (ReleaseImageSet) JournalKind() journal.Kind             { return KindReleaseImageSet }
func (StepStarted) JournalKind() journal.Kind                 { return KindStepStarted }
func (StepFinished) JournalKind() journal.Kind                { return KindStepFinished }
func (StepOutput) JournalKind() journal.Kind                  { return KindStepOutput }
func (StepInterrupted) JournalKind() journal.Kind             { return KindStepInterrupted }
func (ReleaseDone) JournalKind() journal.Kind                 { return KindReleaseDone }
func (EffortLost) JournalKind() journal.Kind                  { return KindEffortLost }
func (PromotionForceUnverified) JournalKind() journal.Kind    { return KindPromotionForceUnverified }
func (OperationTerminated) JournalKind() journal.Kind         { return KindOperationTerminated }
func (TerminateFailed) JournalKind() journal.Kind             { return KindTerminateFailed }
func (ConvergeDone) JournalKind() journal.Kind                { return KindConvergeDone }
func (ConvergeFailed) JournalKind() journal.Kind              { return KindConvergeFailed }
func (ConvergeTimeout) JournalKind() journal.Kind             { return KindConvergeTimeout }
func (PlanStarted) JournalKind() journal.Kind                 { return KindPlanStarted }
func (PlanFailed) JournalKind() journal.Kind                  { return KindPlanFailed }
func (PlanRecorded) JournalKind() journal.Kind                { return KindPlanRecorded }
func (PlanShared) JournalKind() journal.Kind                  { return KindPlanShared }
func (PlanFetched) JournalKind() journal.Kind                 { return KindPlanFetched }
func (ApplyRefused) JournalKind() journal.Kind                { return KindApplyRefused }
func (ApplyStarted) JournalKind() journal.Kind                { return KindApplyStarted }
func (ApplyInterrupted) JournalKind() journal.Kind            { return KindApplyInterrupted }
func (ApplyFailed) JournalKind() journal.Kind                 { return KindApplyFailed }
func (ApplyDone) JournalKind() journal.Kind                   { return KindApplyDone }
func (LockRefused) JournalKind() journal.Kind                 { return KindLockRefused }
func (UnlockRequested) JournalKind() journal.Kind             { return KindUnlockRequested }
func (UnlockFailed) JournalKind() journal.Kind                { return KindUnlockFailed }
func (UnlockDone) JournalKind() journal.Kind                  { return KindUnlockDone }
func (ApprovalRecorded) JournalKind() journal.Kind            { return KindApprovalRecorded }
func (ApprovalRefused) JournalKind() journal.Kind             { return KindApprovalRefused }
func (EffortLogged) JournalKind() journal.Kind                { return KindEffortLogged }
func (OwnershipCheckRecorded) JournalKind() journal.Kind      { return KindOwnershipCheckRecorded }
func (OwnershipCheckFailed) JournalKind() journal.Kind        { return KindOwnershipCheckFailed }
func (RollbackStarted) JournalKind() journal.Kind             { return KindRollbackStarted }
func (RehearsalStarted) JournalKind() journal.Kind            { return KindRehearsalStarted }
func (RehearsalProductionOverride) JournalKind() journal.Kind { return KindRehearsalProductionOverride }
func (RehearsalInjected) JournalKind() journal.Kind           { return KindRehearsalInjected }
func (RehearsalDetected) JournalKind() journal.Kind           { return KindRehearsalDetected }
func (RehearsalRecovered) JournalKind() journal.Kind          { return KindRehearsalRecovered }
func (RehearsalPassed) JournalKind() journal.Kind             { return KindRehearsalPassed }
func (RehearsalFailed) JournalKind() journal.Kind             { return KindRehearsalFailed }
func (RehearsalAbandoned) JournalKind() journal.Kind          { return KindRehearsalAbandoned }
func (RollbackRefused) JournalKind() journal.Kind             { return KindRollbackRefused }
func (BreakGlassStarted) JournalKind() journal.Kind           { return KindBreakGlassStarted }
func (BreakGlassRefused) JournalKind() journal.Kind           { return KindBreakGlassRefused }
func (BreakGlassWindowRemoved) JournalKind() journal.Kind     { return KindBreakGlassWindowRemoved }
func (BreakGlassFailed) JournalKind() journal.Kind            { return KindBreakGlassFailed }
func (BreakGlassCaptured) JournalKind() journal.Kind          { return KindBreakGlassCaptured }
func (BreakGlassEnded) JournalKind() journal.Kind             { return KindBreakGlassEnded }
func (PromotionPROpened) JournalKind() journal.Kind           { return KindPromotionPROpened }
func (PromotionPRReviewed) JournalKind() journal.Kind         { return KindPromotionPRReviewed }
func (PromotionPRMerged) JournalKind() journal.Kind           { return KindPromotionPRMerged }
func (PromotionPRBlocked) JournalKind() journal.Kind          { return KindPromotionPRBlocked }
func (DemoSandbox) JournalKind() journal.Kind                 { return KindDemoSandbox }
func (DemoOwnershipFixed) JournalKind() journal.Kind          { return KindDemoOwnershipFixed }
