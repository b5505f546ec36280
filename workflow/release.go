package workflow

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// ReleaseStatus is where a whole release stands.
type ReleaseStatus string

// Release statuses. A release left InProgress or Blocked and never resumed
// counts as failed in reports (abandoned).
const (
	ReleaseInProgress ReleaseStatus = "in-progress"
	ReleaseBlocked    ReleaseStatus = "blocked"
	ReleaseFailed     ReleaseStatus = "failed"
	ReleaseConverged  ReleaseStatus = "converged"
	ReleaseRolledBack ReleaseStatus = "rolled-back"
)

// Done reports whether the release will not run again.
func (s ReleaseStatus) Done() bool {
	return s == ReleaseConverged || s == ReleaseRolledBack || s == ReleaseEnded
}

// Release is one environment's release of one image: the unit a captain
// drives through the four stages, resumes after an interruption and reports
// effort against.
type Release struct {
	ID      string        `json:"id"`
	App     string        `json:"app"`
	Env     string        `json:"env"`
	Image   string        `json:"image"` // the reference as given
	Captain string        `json:"captain"`
	Status  ReleaseStatus `json:"status"`
	// Kind is "release" or "rollback".
	Kind          string        `json:"kind"`
	RollbackOf    string        `json:"rollback_of,omitempty"`
	Compatibility Compatibility `json:"compatibility,omitzero"`
	Steps         []StepRecord  `json:"steps"`
	CreatedAt     time.Time     `json:"created_at"`
	UpdatedAt     time.Time     `json:"updated_at"`
	EndedAt       time.Time     `json:"ended_at,omitzero"`
	// Outputs are checkpoints across steps: the fingerprint, the digest, the
	// env-repo commit. A step consults them before repeating a side effect.
	Outputs map[string]string `json:"outputs,omitempty"`
}

// Release kinds.
const (
	KindRelease   = "release"
	KindRollback  = "rollback"
	KindPromotion = "promotion" // relcap promote: the decision step alone
)

// Well-known release outputs.
const (
	OutFingerprint = "plan.fingerprint"
	OutApplied     = "apply.done"
	OutDigest      = "digest"
	OutCopied      = "promotion.copied"
	OutEnvPinned   = "envrepo.pinned" // the reviewed commit on the relcap branch
	OutEnvBranch   = "envrepo.branch"
	OutEnvCommit   = "envrepo.commit" // the environment branch after landing: the intended revision
	OutConvergedAt = "converged.at"
	// OutRestoreFrom is, for a rollback, the revision whose environment
	// file it restores: where the release it returns to converged.
	OutRestoreFrom = "rollback.restore-from"
	// OutForceUnverified holds the journaled reason for promoting a digest
	// that has not converged in the previous environment.
	OutForceUnverified = "promotion.force-unverified"
)

// StepRecord is the persisted state of one step.
type StepRecord struct {
	Kind      StepKind   `json:"kind"`
	Status    StepStatus `json:"status"`
	Message   string     `json:"message,omitempty"`
	Findings  []Finding  `json:"findings,omitempty"`
	Evidence  []Evidence `json:"evidence,omitempty"`
	Attempts  int        `json:"attempts,omitempty"`
	StartedAt time.Time  `json:"started_at,omitzero"`
	EndedAt   time.Time  `json:"ended_at,omitzero"`
}

// NewRelease makes a release with every step pending.
func NewRelease(id, app, env, image, captain string, now time.Time) *Release {
	r := &Release{
		ID: id, App: app, Env: env, Image: image, Captain: captain,
		Status: ReleaseInProgress, Kind: KindRelease,
		CreatedAt: now, UpdatedAt: now,
		Outputs: map[string]string{},
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

// Current is the first step that has not succeeded, or false when all have.
func (r *Release) Current() (StepKind, bool) {
	for _, k := range StepKinds {
		if !r.Step(k).Status.Done() {
			return k, true
		}
	}
	return 0, false
}

// Output returns a checkpoint value.
func (r *Release) Output(key string) (string, bool) {
	v, ok := r.Outputs[key]
	return v, ok
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
		s.Findings = append([]Finding(nil), s.Findings...)
		s.Evidence = append([]Evidence(nil), s.Evidence...)
		c.Steps[i] = s
	}
	c.Outputs = make(map[string]string, len(r.Outputs))
	for k, v := range r.Outputs {
		c.Outputs[k] = v
	}
	return &c
}
