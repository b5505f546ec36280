package journal

import (
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/oplock"
	"github.com/relcap/relcap/workflow/tfplan"
)

// Record is the data of one journal entry. Its type says what it
// records, and JournalKind the name the entry is stored under. This file
// is the catalogue of the release core's records (sessions, steps, plans,
// applies, locks, approvals, ownership, rollback, the demo): one type per
// kind, its fields named as they appear in the entry's data. Each feature's
// records live in its own package, in records.go beside the code that
// writes them (workflow/rehearsal, workflow/breakglass, workflow/landing
// for the promotion.pr_* records). Kinds are stored, so their names never
// change.
type Record interface {
	JournalKind() Kind
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
	Release         string `json:"release"`
	Kind            string `json:"kind"` // the release's workflow.ReleaseKind
	Env             string `json:"env"`
	Image           string `json:"image"`
	Captain         string `json:"captain"`
	ForceUnverified string `json:"force_unverified"`
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
	Release  string              `json:"release"`
	Step     string              `json:"step"`
	Status   string              `json:"status"`
	Message  string              `json:"message"`
	Evidence []evidence.Evidence `json:"evidence,omitempty"`
	Findings []finding.Finding   `json:"findings,omitempty"`
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

// OperationTerminatedRecord journals the evidence that relcap ended Argo
// CD's retries of a failed sync (evidence.OperationTerminated), under
// convergence.operation-terminated.
type OperationTerminatedRecord struct{ evidence.OperationTerminated }

// TerminateFailed: ending Argo CD's retries was refused; the rollback
// waits them out instead.
type TerminateFailed struct {
	evidence.OperationTerminated
	Error string `json:"error"`
}

// Convergence of a revision outside a release (relcap converge --revision).

// RevisionWatch is what a watch of one revision ended with.
type RevisionWatch struct {
	IntendedRevision string                `json:"intended_revision"`
	Digest           string                `json:"digest"`
	Sync             appstate.SyncStatus   `json:"sync"`
	Revision         string                `json:"revision"`
	Health           appstate.HealthStatus `json:"health"`
	Images           string                `json:"images"`
	Verdict          appstate.VerdictKind  `json:"verdict,omitempty"`
	NextAction       string                `json:"next_action,omitempty"`
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
	Inputs      tfplan.Inputs       `json:"inputs"`
	Counts      tfplan.Counts       `json:"counts"`
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
	Env         string                    `json:"env"`
	Fingerprint string                    `json:"fingerprint"`
	Principals  []string                  `json:"principals"`
	Recipients  []tfplan.Recipient        `json:"recipients"`
	Skipped     []tfplan.SkippedRecipient `json:"skipped,omitempty"`
	ExpiresAt   time.Time                 `json:"expires_at"`
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
	Kind        oplock.Kind `json:"kind"`
	Key         string      `json:"key"`
	Release     string      `json:"release,omitempty"`
	Holder      string      `json:"holder"`
	HolderWhat  string      `json:"holder_what"`
	HolderSince *time.Time  `json:"holder_since,omitempty"`
	HolderHost  string      `json:"holder_host,omitempty"`
	HolderPID   int         `json:"holder_pid,omitempty"`
	Reason      string      `json:"reason"`
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
type ApprovalRecorded struct{ approval.Approval }

// ApprovalRefused: an approval the policy would never count was refused.
type ApprovalRefused struct {
	Kind     approval.Kind `json:"kind"`
	Subject  string        `json:"subject"`
	Approver string        `json:"approver"`
	Reason   string        `json:"reason"`
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

// CustodyReviewed: what the state custody check (workflow/custody) found
// of one environment at plan time: where its state lives (never a
// credential), the codes of what it found by severity, and the findings
// relcap.yaml accepts there with their reasons.
type CustodyReviewed struct {
	Env      string            `json:"env"`
	Backend  string            `json:"backend"`
	Location string            `json:"location,omitempty"`
	Source   string            `json:"source"`
	Blockers []string          `json:"blockers,omitempty"`
	Warnings []string          `json:"warnings,omitempty"`
	Accepted map[string]string `json:"accepted,omitempty"`
}

// OwnershipInferred (relcap ownership infer): a draft ownership map
// proposed from what really writes each field, where it was written and
// its SHA-256, and what it found.
type OwnershipInferred struct {
	Envs      []string `json:"envs"`
	Objects   int      `json:"objects"`
	Contested int      `json:"contested"`
	Flipping  int      `json:"flipping"`
	Changes   int      `json:"changes"`
	Live      bool     `json:"live"`
	Draft     string   `json:"draft,omitempty"`
	SHA256    string   `json:"sha256"`
}

// OwnershipCheckFailed: a source of managed objects could not be read.
type OwnershipCheckFailed struct {
	Env   string `json:"env"`
	Error string `json:"error"`
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
	KindSessionOpened            Kind = "session.opened"
	KindSessionRelease           Kind = "session.release"
	KindSessionClosed            Kind = "session.closed"
	KindScreenRecorded           Kind = "screen.recorded"
	KindReleaseStarted           Kind = "release.started"
	KindReleaseImageSet          Kind = "release.image-set"
	KindStepStarted              Kind = "step.started"
	KindStepFinished             Kind = "step.finished"
	KindStepOutput               Kind = "step.output"
	KindStepInterrupted          Kind = "step.interrupted"
	KindReleaseDone              Kind = "release.converged"
	KindEffortLost               Kind = "effort.lost"
	KindPromotionForceUnverified Kind = "promotion.force-unverified"
	KindOperationTerminated      Kind = "convergence.operation-terminated"
	KindTerminateFailed          Kind = "convergence.terminate-failed"
	KindConvergeDone             Kind = "converge.done"
	KindConvergeFailed           Kind = "converge.failed"
	KindConvergeTimeout          Kind = "converge.timeout"
	KindPlanStarted              Kind = "plan.started"
	KindPlanFailed               Kind = "plan.failed"
	KindPlanRecorded             Kind = "plan.reviewed"
	KindPlanShared               Kind = "plan.shared"
	KindPlanFetched              Kind = "plan.fetched"
	KindApplyRefused             Kind = "apply.refused"
	KindApplyStarted             Kind = "apply.started"
	KindApplyInterrupted         Kind = "apply.interrupted"
	KindApplyFailed              Kind = "apply.failed"
	KindApplyDone                Kind = "apply.done"
	KindLockRefused              Kind = "lock.refused"
	KindUnlockRequested          Kind = "unlock.requested"
	KindUnlockFailed             Kind = "unlock.failed"
	KindUnlockDone               Kind = "unlock.done"
	KindApprovalRecorded         Kind = "approval.recorded"
	KindApprovalRefused          Kind = "approval.refused"
	KindEffortLogged             Kind = "effort.logged"
	KindOwnershipCheckRecorded   Kind = "ownership.checked"
	KindOwnershipCheckFailed     Kind = "ownership.failed"
	KindOwnershipInferred        Kind = "ownership.inferred"
	KindCustodyReviewed          Kind = "custody.reviewed"
	KindRollbackStarted          Kind = "rollback.started"
	KindRollbackRefused          Kind = "rollback.refused"
	KindDemoSandbox              Kind = "demo.sandbox"
	KindDemoOwnershipFixed       Kind = "demo.ownership-fixed"
)

// The kinds, by the name each record is stored under.
func (SessionOpened) JournalKind() Kind             { return KindSessionOpened }
func (SessionRelease) JournalKind() Kind            { return KindSessionRelease }
func (SessionClosed) JournalKind() Kind             { return KindSessionClosed }
func (ScreenRecorded) JournalKind() Kind            { return KindScreenRecorded }
func (ReleaseStarted) JournalKind() Kind            { return KindReleaseStarted }
func (ReleaseImageSet) JournalKind() Kind           { return KindReleaseImageSet }
func (StepStarted) JournalKind() Kind               { return KindStepStarted }
func (StepFinished) JournalKind() Kind              { return KindStepFinished }
func (StepOutput) JournalKind() Kind                { return KindStepOutput }
func (StepInterrupted) JournalKind() Kind           { return KindStepInterrupted }
func (ReleaseDone) JournalKind() Kind               { return KindReleaseDone }
func (EffortLost) JournalKind() Kind                { return KindEffortLost }
func (PromotionForceUnverified) JournalKind() Kind  { return KindPromotionForceUnverified }
func (OperationTerminatedRecord) JournalKind() Kind { return KindOperationTerminated }
func (TerminateFailed) JournalKind() Kind           { return KindTerminateFailed }
func (ConvergeDone) JournalKind() Kind              { return KindConvergeDone }
func (ConvergeFailed) JournalKind() Kind            { return KindConvergeFailed }
func (ConvergeTimeout) JournalKind() Kind           { return KindConvergeTimeout }
func (PlanStarted) JournalKind() Kind               { return KindPlanStarted }
func (PlanFailed) JournalKind() Kind                { return KindPlanFailed }
func (PlanRecorded) JournalKind() Kind              { return KindPlanRecorded }
func (PlanShared) JournalKind() Kind                { return KindPlanShared }
func (PlanFetched) JournalKind() Kind               { return KindPlanFetched }
func (ApplyRefused) JournalKind() Kind              { return KindApplyRefused }
func (ApplyStarted) JournalKind() Kind              { return KindApplyStarted }
func (ApplyInterrupted) JournalKind() Kind          { return KindApplyInterrupted }
func (ApplyFailed) JournalKind() Kind               { return KindApplyFailed }
func (ApplyDone) JournalKind() Kind                 { return KindApplyDone }
func (LockRefused) JournalKind() Kind               { return KindLockRefused }
func (UnlockRequested) JournalKind() Kind           { return KindUnlockRequested }
func (UnlockFailed) JournalKind() Kind              { return KindUnlockFailed }
func (UnlockDone) JournalKind() Kind                { return KindUnlockDone }
func (ApprovalRecorded) JournalKind() Kind          { return KindApprovalRecorded }
func (ApprovalRefused) JournalKind() Kind           { return KindApprovalRefused }
func (EffortLogged) JournalKind() Kind              { return KindEffortLogged }
func (OwnershipCheckRecorded) JournalKind() Kind    { return KindOwnershipCheckRecorded }
func (OwnershipCheckFailed) JournalKind() Kind      { return KindOwnershipCheckFailed }
func (OwnershipInferred) JournalKind() Kind         { return KindOwnershipInferred }
func (CustodyReviewed) JournalKind() Kind           { return KindCustodyReviewed }
func (RollbackStarted) JournalKind() Kind           { return KindRollbackStarted }
func (RollbackRefused) JournalKind() Kind           { return KindRollbackRefused }
func (DemoSandbox) JournalKind() Kind               { return KindDemoSandbox }
func (DemoOwnershipFixed) JournalKind() Kind        { return KindDemoOwnershipFixed }
