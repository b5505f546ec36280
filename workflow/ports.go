package workflow

import (
	"context"
	"time"
)

// Clock is where the domain reads the time, so effort and journal times are
// deterministic under a fake.
type Clock interface {
	Now() time.Time
}

// SystemClock reads the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// OwnershipSource lists what one manager writes in an environment:
// Terraform resources from state and the current plan, or Argo CD
// applications' managed resources. It blocks until the source is read.
type OwnershipSource interface {
	ManagedObjects(ctx context.Context, env Environment) ([]ManagedObject, error)
}

// Planner makes a saved, reviewed Terraform plan and reads the inputs a plan
// depends on (to refuse stale plans).
type Planner interface {
	// Plan runs init and plan -out into the private plan store and returns
	// its review and fingerprint. author is recorded on the plan.
	Plan(ctx context.Context, env Environment, author string) (PlanSummary, error)
	// Inputs reads the current revision, lock file, var files, workspace and
	// state lineage/serial, without planning.
	Inputs(ctx context.Context, env Environment) (PlanInputs, error)
}

// Applier applies exactly one saved plan. It never bypasses state locking;
// a held lock is reported as ErrLocked with its holder. On context
// cancellation it interrupts Terraform gracefully and waits for it.
type Applier interface {
	Apply(ctx context.Context, req ApplyRequest) (ApplyResult, error)
}

// Registry resolves references and copies digests between repositories.
type Registry interface {
	// Resolve turns a tag or digest reference into one digest, once.
	Resolve(ctx context.Context, ref string) (Artifact, error)
	// Promote copies the digest and its referrers (signatures,
	// attestations) from req.From to req.To, skipping blobs already
	// present, and verifies the target digest. It is idempotent.
	Promote(ctx context.Context, req PromoteRequest) (PromoteResult, error)
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
	Pinned(ctx context.Context, t EnvRepoTarget, repo string) (ImageRef, error)
}

// Convergence reads Argo CD applications.
type Convergence interface {
	// Get returns the application's current state.
	Get(ctx context.Context, app AppRef) (AppState, error)
	// Watch streams states after version until ctx ends. The adapter
	// reconnects dropped streams and re-reads state so no transition is
	// lost; the channel closes when ctx ends or with a final AppUpdate.Err.
	Watch(ctx context.Context, app AppRef, since string) (<-chan AppUpdate, error)
}

// Journal appends to the current session's tamper-evident journal. Append
// returns only when the entry is durable. When it returns an error the entry
// may still have been written; the ledger's head then lags until the next
// successful Append.
type Journal interface {
	Append(ctx context.Context, kind string, data any) (JournalEntry, error)
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
	HasConverged(ctx context.Context, app, env string, d Digest) (bool, error)
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
	ReleaseID string    `json:"release_id"`
	App       string    `json:"app"`
	Env       string    `json:"env"`
	Digest    Digest    `json:"digest"`
	Revision  string    `json:"revision"`
	At        time.Time `json:"at"`
}

// PlanStore keeps reviewed plans by fingerprint, so approve and apply can
// find what was reviewed.
type PlanStore interface {
	SavePlan(ctx context.Context, p PlanSummary) error
	// LoadPlan returns ErrNotFound for an unknown fingerprint.
	LoadPlan(ctx context.Context, fingerprint string) (PlanSummary, error)
	MarkPlanApplied(ctx context.Context, fingerprint string, at time.Time) error
}

// ApprovalStore keeps approvals.
type ApprovalStore interface {
	RecordApproval(ctx context.Context, a Approval) error
	Approvals(ctx context.Context, kind, subject string) ([]Approval, error)
}

// EffortStore keeps effort entries.
type EffortStore interface {
	RecordEffort(ctx context.Context, entries []EffortEntry) error
	Effort(ctx context.Context, releaseID string) ([]EffortEntry, error)
}

// ArtifactStore remembers when a reference was first seen at a digest, so
// a moved tag is noticed.
type ArtifactStore interface {
	// RecordSighting stores ref → digest at time at and returns the first
	// sighting of ref (which equals this one the first time).
	RecordSighting(ctx context.Context, ref string, d Digest, at time.Time) (Sighting, error)
}

// Sighting is a reference seen at a digest.
type Sighting struct {
	Reference string    `json:"reference"`
	Digest    Digest    `json:"digest"`
	At        time.Time `json:"at"`
}

// FindingStore keeps open findings with their first-seen time, so drift age
// and ownership conflicts can be reported over time.
type FindingStore interface {
	// RecordFindings replaces the open findings of scope (e.g.
	// "ownership/staging"): new ones are opened at at, missing ones are
	// resolved at at.
	RecordFindings(ctx context.Context, scope string, at time.Time, fs []Finding) error
}

// SessionStore keeps sessions and their journal heads.
type SessionStore interface {
	OpenSession(ctx context.Context, s Session) error
	CloseSession(ctx context.Context, id string, at time.Time) error
	// SetJournalHead only moves the head forward: a lower sequence or a
	// changed hash for the current head is refused, since either would let
	// a rewritten journal pass verification.
	SetJournalHead(ctx context.Context, h JournalHead) error
	// JournalHead returns ErrNotFound for an unknown session.
	JournalHead(ctx context.Context, sessionID string) (JournalHead, error)
	Sessions(ctx context.Context) ([]Session, error)
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
