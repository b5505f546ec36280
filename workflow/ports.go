package workflow

import (
	"context"
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/oplock"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/tfplan"
)

// The ports: every interface the domain needs of the world, in one file.
// Adapters implement them (adapters/*); workflowtest fakes them. An
// optional ability of an adapter is a small interface of its own, found by
// a type assertion where it is used.

// Clock is where the domain reads the time and waits, so effort, journal
// times and the convergence watch are deterministic under a fake.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed on this
	// clock, as time.After does.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Problem: who owns what.

// OwnershipSource lists what one manager writes in an environment:
// Terraform resources from state and the current plan, or Argo CD
// applications' managed resources. It blocks until the source is read.
type OwnershipSource interface {
	ManagedObjects(ctx context.Context, env Environment) ([]ownership.ManagedObject, error)
}

// Boundary: the exact Terraform plan.

// Planner makes a saved Terraform plan and reads the inputs a plan depends
// on (to refuse stale plans). It returns data; the review is the core's
// (ReviewPlan).
type Planner interface {
	// Plan runs init and plan -out into the private plan store and returns
	// what it read of the plan: its changes, the plan file and its hash,
	// and the inputs it was computed from. author is recorded on the plan.
	Plan(ctx context.Context, env Environment, author string) (tfplan.Facts, error)
	// Inputs reads the current revision, lock file, var files, workspace and
	// state lineage/serial, without planning.
	Inputs(ctx context.Context, env Environment) (tfplan.Inputs, error)
}

// Applier applies exactly one saved plan. It never bypasses state locking;
// a held lock is reported as ErrLocked with its holder. On context
// cancellation it interrupts Terraform gracefully and waits for it.
type Applier interface {
	Apply(ctx context.Context, req ApplyRequest) (ApplyResult, error)
}

// ApplyRequest asks to apply exactly one saved, approved plan.
type ApplyRequest struct {
	Env         Environment
	Fingerprint string
	PlanFile    string
	PlanHash    string
	Inputs      tfplan.Inputs
	// Run names this attempt: the Applier keeps Terraform's run under
	// it, where a relcap that died meanwhile finds it. It was recorded
	// (a release's checkpoint, the journal) before the Applier is asked.
	Run ApplyRun
	// Earlier are attempts at this plan recorded before, which may have
	// started Terraform: the Applier takes their result (waiting for one
	// still running) and never starts the plan again while one's outcome
	// is unknown.
	Earlier []ApplyRun
}

// ApplyRun is one attempt at applying a plan, recorded before Terraform
// starts: where its run is kept (its host and directory, whose files say
// whether Terraform still runs, how it exited and what it printed).
type ApplyRun struct {
	Fingerprint string    `json:"fingerprint"`
	ID          string    `json:"id"`
	Host        string    `json:"host,omitempty"`
	Dir         string    `json:"dir,omitempty"`
	StartedAt   time.Time `json:"started_at,omitzero"`
}

// IsZero reports whether no attempt is recorded.
func (r ApplyRun) IsZero() bool { return r.ID == "" }

// ApplyRunPlacer is the optional ability of an Applier to say, before it
// starts Terraform, where the run of an attempt will be kept, so the
// attempt's record names it.
type ApplyRunPlacer interface {
	PlaceApplyRun(fingerprint, id string) ApplyRun
}

// ApplyResult is what an apply did.
type ApplyResult struct {
	// AlreadyApplied is true when the plan had been applied by an earlier,
	// interrupted run, by the evidence that run left (Terraform's own
	// exit status and result for this plan); nothing was applied twice.
	AlreadyApplied bool  `json:"already_applied,omitempty"`
	StateSerial    int64 `json:"state_serial"`
}

// StateReader is the optional ability of a Planner to read the state of
// an environment's Terraform root: after a failed apply relcap names the
// resources it left tainted, and a recovery drill compares the state with
// its baseline. It writes nothing.
type StateReader interface {
	// StateResources reads the managed resource instances of env's state
	// (terraform show -json), without their values.
	StateResources(ctx context.Context, env Environment) ([]StateResource, error)
}

// StateResource is one managed resource instance a Terraform state holds,
// without its values.
type StateResource struct {
	Address string `json:"address"`
	// Tainted: created part-way (a provisioner failed); the next apply
	// replaces it.
	Tainted bool `json:"tainted,omitempty"`
}

// Decision: one digest, pinned.

// Registry resolves references and copies digests between repositories.
type Registry interface {
	// Resolve turns a tag or digest reference into one digest, once.
	Resolve(ctx context.Context, ref string) (image.Artifact, error)
	// Promote copies the digest and its referrers (signatures,
	// attestations) from req.From to req.To, skipping blobs already
	// present, and verifies the target digest. It is idempotent.
	Promote(ctx context.Context, req image.PromoteRequest) (image.PromoteResult, error)
}

// EnvRepo changes the environment repository.
type EnvRepo interface {
	// Pin creates branch relcap/<env>/<release>, pins the digest in the
	// configured file, commits and pushes when a remote is configured. If
	// that branch already pins the digest it returns it with Existing set.
	Pin(ctx context.Context, req PinRequest) (EnvChange, error)
	// Land merges the reviewed relcap branch into the environment branch
	// Argo CD follows and returns the commit it now points at. It is
	// idempotent: when the branch already pins the digest it returns its
	// tip with Existing set.
	Land(ctx context.Context, req PinRequest) (EnvChange, error)
	// Preview returns the diff Pin would commit, changing nothing, so the
	// captain sees the change before it is made.
	Preview(ctx context.Context, req PinRequest) (EnvChange, error)
	// Pinned reads which reference the target's file pins on its branch
	// now, for rollback and break-glass. repo is the repository the
	// environment pulls from.
	Pinned(ctx context.Context, t EnvRepoTarget, repo string) (image.Ref, error)
}

// Evidence: Argo CD converged.

// Convergence reads Argo CD applications.
type Convergence interface {
	// Get returns the application's current state.
	Get(ctx context.Context, app appstate.AppRef) (appstate.AppState, error)
	// Watch streams states after version until ctx ends. The adapter
	// reconnects dropped streams and re-reads state so no transition is
	// lost; the channel closes when ctx ends or with a final AppUpdate.Err.
	Watch(ctx context.Context, app appstate.AppRef, since string) (<-chan AppUpdate, error)
}

// ResourceTreeReader is the optional ability of a Convergence adapter to read
// the application's resource tree, down to Pods. On real Argo CD an image
// pull or readiness failure shows only on the Pod while the application
// stays Progressing until the Deployment's progress deadline (10 minutes by
// default), so the watch reads the tree to name it within seconds.
type ResourceTreeReader interface {
	ResourceTree(ctx context.Context, app appstate.AppRef) ([]appstate.AppResource, error)
}

// Refresher is the optional ability of a Convergence adapter to ask Argo
// CD's application controller to reconcile an application now and wait, up
// to within, until it has; ErrNotReconciled means it did not. The watch
// asks when an application has shown no change for a while, to tell a
// quiet rollout from a controller that stopped.
type Refresher interface {
	Refresh(ctx context.Context, app appstate.AppRef, within time.Duration) error
}

// OperationTerminator is the optional ability of a Convergence adapter to
// end an application's running operation. Argo CD starts no sync while an
// operation runs, and retries a failed automated sync with its revision
// (five times over minutes by default), so a rollback ends the retries of
// the bad revision before it waits for its own.
type OperationTerminator interface {
	TerminateOperation(ctx context.Context, app appstate.AppRef) error
}

// SyncWindows is the optional ability of a Convergence adapter to keep
// sync windows on an application's Argo CD project. Break-glass pauses an
// application with a deny window that Argo CD itself lifts when it closes,
// so reconciliation resumes at the end of the time box even if nobody runs
// relcap again.
type SyncWindows interface {
	// DenySync adds w to the project of app (w.Project, or the project the
	// application is in when empty) unless an identical window is there
	// already, and returns it as Argo CD keeps it: with its project, and
	// with Description empty when the server has no such field. It
	// returns only once Argo CD reports the window active for app; an
	// error means the pause may not hold, and the caller removes w.
	DenySync(ctx context.Context, app appstate.AppRef, w SyncWindow) (SyncWindow, error)
	// RemoveWindow removes every window of the project identical to w
	// (SyncWindow.Same) and no other; removed is false when there was
	// none (it was removed by hand, or never made).
	RemoveWindow(ctx context.Context, app appstate.AppRef, w SyncWindow) (removed bool, err error)
	// ListWindows returns the windows of the application's project that
	// apply to app, each with Active as Argo CD judges it now.
	ListWindows(ctx context.Context, app appstate.AppRef) ([]SyncWindow, error)
}

// The record: journal and ledger.

// Signer signs statements with the acting person's own SSH key, the way
// git signs commits: through ssh-agent or a key file the person names,
// never a private key in relcap's configuration.
type Signer interface {
	// Sign signs message in namespace as principal. It fails, saying why
	// and what to do, when no key the people file gives principal is
	// available to this process.
	Sign(ctx context.Context, principal, namespace string, message []byte) (approval.Signature, error)
}

// SignatureVerifier checks signatures against the people file (git's
// allowed-signers format) as it reads when asked: a key removed from it
// no longer verifies what it signed.
type SignatureVerifier interface {
	// Verify checks that sig is principal's signature of message in
	// namespace, made with a key the people file gives principal for that
	// namespace at time at. The error says why not.
	Verify(ctx context.Context, principal, namespace string, message []byte, sig approval.Signature, at time.Time) error
}

// PeopleFile is the optional ability of a SignatureVerifier that knows
// where the people file that counts comes from: the protected branch of
// the repository that holds it, fetched from its origin, rather than the
// working copy any captain can edit alone. Verify then checks against the
// revision that counts now.
type PeopleFile interface {
	// PeopleState says which revision of the people file counts now,
	// whether anything protects it, and how the working copy differs.
	PeopleState(ctx context.Context) (PeopleState, error)
	// VerifyIn is Verify against the people file of an earlier revision
	// (a PeopleState.Revision): what journal verify re-checks an approval
	// against. The revision must still be in the protected branch's
	// history; a revision nothing protected can be checked only while the
	// working copy still has it.
	VerifyIn(ctx context.Context, revision, principal, namespace string, message []byte, sig approval.Signature, at time.Time) error
}

// PeopleState is the people file that counts, where it comes from, and
// how the working copy on this machine differs from it.
type PeopleState struct {
	// File is the people file's path on this machine.
	File string
	// Revision names the content that counts, recorded with every
	// signature verified against it ("git:<commit>:<blob>", or
	// "file:sha256:<hex>" for a working copy nothing protects).
	Revision string
	// Protected says the content is the protected branch's, as its
	// origin says; Where names it (branch and commit) or, when nothing
	// protects the file, says why.
	Protected bool
	Where     string
	// Differs lists the principals whose lines differ in the working
	// copy; empty when it is the protected content.
	Differs []string
}

// Journal appends to the current session's tamper-evident journal. Append
// returns only when the entry is durable. When it returns an error the entry
// may still have been written; the ledger's head then lags until the next
// successful Append.
type Journal interface {
	Append(ctx context.Context, rec journal.Record) (journal.Entry, error)
	SessionID() string
}

// ReleaseStore persists releases. SaveRelease is durable when it returns.
type ReleaseStore interface {
	SaveRelease(ctx context.Context, r *Release) error
	// LoadRelease returns ErrNotFound for an unknown ID.
	LoadRelease(ctx context.Context, id string) (*Release, error)
	ListReleases(ctx context.Context, f ReleaseFilter) ([]*Release, error)
	// RecordConvergence remembers that digest converged in env, the
	// evidence the next environment's promotion policy asks for.
	RecordConvergence(ctx context.Context, c ConvergenceRecord) error
	HasConverged(ctx context.Context, app, env string, d image.Digest) (bool, error)
}

// ReleaseFilter selects releases by CreatedAt, newest first; From is
// inclusive, To exclusive, Limit keeps the newest N; zero fields select all.
type ReleaseFilter struct {
	App   string
	Env   string
	From  time.Time
	To    time.Time
	Limit int
}

// ConvergenceRecord is the moment a release converged.
type ConvergenceRecord struct {
	ReleaseID string       `json:"release_id"`
	App       string       `json:"app"`
	Env       string       `json:"env"`
	Digest    image.Digest `json:"digest"`
	Revision  string       `json:"revision"`
	At        time.Time    `json:"at"`
}

// PlanStore keeps reviewed plans by fingerprint, so approve and apply can
// find what was reviewed.
type PlanStore interface {
	SavePlan(ctx context.Context, p tfplan.Summary) error
	// LoadPlan returns ErrNotFound for an unknown fingerprint.
	LoadPlan(ctx context.Context, fingerprint string) (tfplan.Summary, error)
	MarkPlanApplied(ctx context.Context, fingerprint string, at time.Time) error
}

// SharedPlanStore is the optional ability of a Ledger to keep encrypted
// plan files for a team (the PostgreSQL store; SQLite has the table too,
// unused). It stores what it is given: encryption and expiry are the
// PlanVault's.
type SharedPlanStore interface {
	// PutSharedPlan inserts or replaces the shared plan with p.Fingerprint.
	PutSharedPlan(ctx context.Context, p tfplan.SharedPlan) error
	// SharedPlan returns ErrNotFound for a fingerprint not shared (or
	// deleted).
	SharedPlan(ctx context.Context, fingerprint string) (tfplan.SharedPlan, error)
	// DeleteSharedPlan deletes it; deleting one that is not there is not
	// an error.
	DeleteSharedPlan(ctx context.Context, fingerprint string) error
	// DeleteExpiredSharedPlans deletes those whose ExpiresAt is before now
	// and returns their fingerprints.
	DeleteExpiredSharedPlans(ctx context.Context, now time.Time) ([]string, error)
}

// PlanVault shares saved plan files through the team store, encrypted to
// the people allowed to apply them, so an applier on another machine
// applies exactly the reviewed plan. It is wired only for a team store.
type PlanVault interface {
	// Share encrypts the plan file to every usable key of the appliers
	// and stores it until req.ExpiresAt. Keys it cannot encrypt to are
	// skipped and listed; no usable key at all is an error naming whose
	// keys and why.
	Share(ctx context.Context, req tfplan.ShareRequest) (tfplan.Share, error)
	// LocalPlanFile is where this machine's plan store keeps the plan
	// file of fingerprint, and whether it is there.
	LocalPlanFile(fingerprint string) (path string, present bool)
	// Fetch reads the shared plan, refuses it when expired (ErrStalePlan,
	// and deletes it), decrypts it with principal's own private key file,
	// checks its SHA-256 against p.PlanHash (a mismatch wraps
	// ErrTampered) and writes it, mode 0600, to LocalPlanFile. A key the
	// plan is not encrypted to is refused with ErrBlocked; a plan not
	// shared is ErrNotFound.
	Fetch(ctx context.Context, p tfplan.Summary, principal string) (tfplan.FetchedPlan, error)
	// Delete deletes the shared copy of an applied plan.
	Delete(ctx context.Context, fingerprint string) error
	// Purge deletes the expired shared plans and returns their
	// fingerprints.
	Purge(ctx context.Context) ([]string, error)
	// Where names the team store in messages and the journal, without
	// credentials.
	Where() string
}

// ApprovalStore keeps approvals.
type ApprovalStore interface {
	RecordApproval(ctx context.Context, a approval.Approval) error
	Approvals(ctx context.Context, kind approval.Kind, subject string) ([]approval.Approval, error)
}

// EffortStore keeps effort entries.
type EffortStore interface {
	RecordEffort(ctx context.Context, entries []effort.Entry) error
	Effort(ctx context.Context, releaseID string) ([]effort.Entry, error)
}

// ArtifactStore remembers when a reference was first seen at a digest, so
// a moved tag is noticed.
type ArtifactStore interface {
	// RecordSighting stores ref → digest at time at and returns the first
	// sighting of ref (which equals this one the first time).
	RecordSighting(ctx context.Context, ref string, d image.Digest, at time.Time) (Sighting, error)
}

// Sighting is a reference seen at a digest.
type Sighting struct {
	Reference string       `json:"reference"`
	Digest    image.Digest `json:"digest"`
	At        time.Time    `json:"at"`
}

// FindingStore keeps open findings with their first-seen time, so drift age
// and ownership conflicts can be reported over time.
type FindingStore interface {
	// RecordFindings replaces the open findings of scope (e.g.
	// "ownership/staging"): new ones are opened at at, missing ones are
	// resolved at at.
	RecordFindings(ctx context.Context, scope string, at time.Time, fs []finding.Finding) error
}

// SessionStore keeps sessions, their journal heads and a copy of their
// journals. Reading the copy back and sealing heads are journal
// verification's (workflow/audit's Ledger).
type SessionStore interface {
	OpenSession(ctx context.Context, s Session) error
	CloseSession(ctx context.Context, id string, at time.Time) error
	// LinkSession records that the session works on releaseID, when it
	// was opened before the release existed (relcap release starts one).
	LinkSession(ctx context.Context, id, releaseID string) error
	// AppendJournal keeps lines, just written to the session's journal
	// file (each one sealed entry, exactly as written, without the
	// newline), in the ledger's copy of the journal and moves the head to
	// the last, in one transaction: the copy and the head never disagree,
	// so a teammate on another machine can verify the session from the
	// ledger alone. The head only moves forward: the lines must continue
	// the copy (the first at the head's sequence + 1, linked to its hash),
	// and a line already held is accepted only identical (a retry after an
	// unknown outcome); a lower sequence, a gap, a broken link or another
	// entry at a sequence already held is refused, since each would let a
	// rewritten journal pass verification. An unknown session is
	// ErrNotFound.
	AppendJournal(ctx context.Context, sessionID string, lines []journal.Line) error
	// JournalHead returns ErrNotFound for an unknown session.
	JournalHead(ctx context.Context, sessionID string) (journal.Head, error)
	Sessions(ctx context.Context) ([]Session, error)
	// LedgerIdentity is the ledger's own name: random, given once, never
	// changed, and not copied by a migration into another ledger. Sessions
	// opened (SessionOpened) and heads sealed (workflow/audit) name it.
	LedgerIdentity(ctx context.Context) (string, error)
}

// Session is one state-changing command (or one cockpit run) and its journal.
type Session struct {
	ID        string    `json:"id"`
	Actor     string    `json:"actor"`
	Command   string    `json:"command"`
	ReleaseID string    `json:"release_id,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	Entries   int64     `json:"entries"`
}

// ChangeFeed is the optional ability of a Ledger to say when it changed,
// from this process or another (a teammate's relcap approve): the cockpit
// re-reads what it shows then. The channel carries at most one pending
// signal and closes when ctx ends.
type ChangeFeed interface {
	Changes(ctx context.Context) <-chan struct{}
}

// OperationLocks is the optional ability of a Ledger to serialize one kind
// of operation on one scope across every relcap process that shares it,
// on any machine: a team's PostgreSQL ledger holds an advisory lock for
// the operation, released when the holder unlocks or its connection drops
// (the holder's process killed with SIGKILL included); an SQLite ledger
// holds a flock(2) on a file beside it, gone with its holder's process. The Service takes
// the apply lock of a Terraform state around the apply, and the promotion
// lock of an environment around copying the digest, pinning and landing.
type OperationLocks interface {
	// TryLock takes the lock of scope for holder, or refuses at once with
	// a *LockedError (wrapping ErrLocked and ErrBlocked) naming who holds
	// it, for what and since when: it never waits and never breaks a held
	// lock. unlock releases it; it is safe to call more than once.
	TryLock(ctx context.Context, scope oplock.Scope, holder oplock.Holder) (unlock func(), err error)
}

// Ledger is everything relcap persists besides the journal files: SQLite by
// default, PostgreSQL for a team.
type Ledger interface {
	ReleaseStore
	PlanStore
	ApprovalStore
	EffortStore
	ArtifactStore
	FindingStore
	SessionStore
	Close() error
}
