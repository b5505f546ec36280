package report

import (
	"context"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/rehearsal"
)

// Source reads everything the effort and measures reports need for a
// period in bulk: one read per table, never one per release, so a ledger of
// 100,000 releases reports in well under a second (issue 9). It is a port
// of its own rather than a method on Ledger so that existing ledgers and
// fakes need not change.
type Source interface {
	// Data returns the records q selects. It blocks until they are
	// read; an empty period is an empty ReportData, not an error.
	ReportData(ctx context.Context, q Query) (Data, error)
}

// Query selects the records of a report.
//
// Releases are selected as ReleaseFilter does: by CreatedAt, From
// inclusive, To exclusive, zero bounds open; App and Env narrow them when
// set. Effort comes with the releases it was recorded against (whenever it
// was recorded), so a release's month carries all of its effort. Plans,
// convergences, sightings and findings are the ones that can matter for
// measures in the period; see each field of ReportData.
type Query struct {
	App  string
	Env  string
	From time.Time
	To   time.Time
	// Person, when set, keeps only that person's effort entries (machine
	// wait has no person and is dropped), for the per-person view.
	Person string
	// EffortOnly reads releases and their effort alone, which is all the
	// effort report uses; plans, convergences, sightings and findings (the
	// measures' material) are left empty.
	EffortOnly bool
}

// Data is the raw material of the reports.
type Data struct {
	// Releases created in the period (break-glass records included; the
	// report leaves them out, so the rule lives in one place).
	Releases []ReleaseFact
	// Effort recorded against those releases. A source may return it
	// summed by release, person, role, step and kind (the SQLite ledger
	// does), leaving At and Note empty: reports only add durations up and
	// never read when an entry was recorded or its note.
	Effort []effort.Entry
	// Plans created or applied in the period.
	Plans []PlanFact
	// Convergences recorded from the start of the period onward (later
	// ones too, so recovery after the period's end is seen).
	Convergences []workflow.ConvergenceRecord
	// Sightings: the first time each digest was seen under any reference,
	// for digests that converged in the returned convergences.
	Sightings []workflow.Sighting
	// Findings opened before the period's end and not resolved before its
	// start.
	Findings []FindingFact
	// Approvals given in the period.
	Approvals []ApprovalFact
	// Rehearsals started before the period's end (earlier ones too, for
	// when each drill last passed).
	Rehearsals []rehearsal.Rehearsal
	// SandboxReleases is how many sandbox releases (relcap demo's) were
	// created in the period, which a source may leave out of Releases:
	// reports say they left them out.
	SandboxReleases int
}

// ApprovalFact is one approval as reports need it: what, by whom, when,
// and the fingerprint of the key that signed it ("" when unsigned).
type ApprovalFact struct {
	Kind     approval.Kind `json:"kind"`
	Subject  string        `json:"subject"`
	Env      string        `json:"env"`
	Approver string        `json:"approver"`
	At       time.Time     `json:"at"`
	Key      string        `json:"key,omitempty"`
}

// ReleaseFact is what reports need of a release: no bodies, no evidence.
type ReleaseFact struct {
	ID         string                 `json:"id"`
	App        string                 `json:"app"`
	Env        string                 `json:"env"`
	Kind       workflow.ReleaseKind   `json:"kind"`
	Captain    string                 `json:"captain"`
	Status     workflow.ReleaseStatus `json:"status"`
	RollbackOf string                 `json:"rollback_of,omitempty"`
	// Sandbox: a practice release (relcap demo), never counted.
	Sandbox   bool      `json:"sandbox,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Steps may be left empty for converged, ended and rolled-back
	// releases, and may hold only the failed and blocked steps of the
	// others: reports read step times only to find when a failure was
	// detected (FailureDetectedAt).
	Steps []StepTime `json:"steps,omitempty"`
}

// StepTime is a step's status and times.
type StepTime struct {
	Kind      workflow.StepKind   `json:"kind"`
	Status    workflow.StepStatus `json:"status"`
	StartedAt time.Time           `json:"started_at,omitzero"`
	EndedAt   time.Time           `json:"ended_at,omitzero"`
}

// FactOf reduces a release to what reports read.
func FactOf(r *workflow.Release) ReleaseFact {
	f := ReleaseFact{ID: r.ID, App: r.App, Env: r.Env, Kind: r.Kind, Captain: r.Captain, Status: r.Status,
		RollbackOf: r.RollbackOf, Sandbox: r.Sandbox, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, EndedAt: r.EndedAt}
	for _, s := range r.Steps {
		f.Steps = append(f.Steps, StepTime{Kind: s.Kind, Status: s.Status, StartedAt: s.StartedAt, EndedAt: s.EndedAt})
	}
	return f
}

// PlanFact is a reviewed plan's life: created, and applied or not.
type PlanFact struct {
	Fingerprint string    `json:"fingerprint"`
	Env         string    `json:"env"`
	CreatedAt   time.Time `json:"created_at"`
	AppliedAt   time.Time `json:"applied_at,omitzero"`
}

// FindingFact is one finding's life in the findings history: opened at
// FirstSeen, resolved at ResolvedAt (zero while open). Scope is
// "ownership/<env>" and the like.
type FindingFact struct {
	Scope      string    `json:"scope"`
	Code       string    `json:"code"`
	Subject    string    `json:"subject"`
	FirstSeen  time.Time `json:"first_seen"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
}
