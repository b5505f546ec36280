package rehearsal

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
)

// Recovery rehearsal (relcap rehearse): a failure injected on purpose
// through relcap's own paths, detected by the convergence watch, and
// recovered by a rollback, with the four answers a captain needs and the
// time each took, kept in the ledger and signed into the journal.

// Drill names one kind of rehearsed failure.
type Drill string

// The drills, in the order --all runs them.
const (
	DrillFailedApply       Drill = "failed-apply"
	DrillUnavailableImage  Drill = "unavailable-image"
	DrillFailedReadiness   Drill = "failed-readiness"
	DrillInterruptedReconc Drill = "interrupted-reconciliation"
	DrillStateRestore      Drill = "state-restore"
)

// AllDrills is every drill, in the order --all runs them.
var AllDrills = []Drill{DrillFailedApply, DrillStateRestore, DrillUnavailableImage, DrillFailedReadiness, DrillInterruptedReconc}

// OnScratchCopy reports whether the drill runs on a scratch copy of the
// environment's Terraform root (seeded with its state, which it only
// reads) rather than through Argo CD: its baseline is the state, not a
// converged release.
func (d Drill) OnScratchCopy() bool { return d == DrillFailedApply || d == DrillStateRestore }

// ParseDrill reads a drill's name; an unknown one is a usage error listing
// the valid ones.
func ParseDrill(s string) (Drill, error) {
	if d := Drill(s); slices.Contains(AllDrills, d) {
		return d, nil
	}
	names := make([]string, len(AllDrills))
	for i, d := range AllDrills {
		names[i] = string(d)
	}
	return "", fmt.Errorf("%w: unknown drill %q; want one of %s", fault.ErrUsage, s, strings.Join(names, ", "))
}

// VerdictApplyFailed is the failed-apply drill's detection: Terraform's
// apply failed, naming the drill's local-exec provisioner. It is no
// convergence verdict: the drill never reaches Argo CD.
const VerdictApplyFailed appstate.VerdictKind = "apply-failed"

// Expected is what relcap must name for the drill: the convergence
// watch's verdict, or for failed-apply the apply's failure.
func (d Drill) Expected() appstate.VerdictKind {
	switch d {
	case DrillFailedApply:
		return VerdictApplyFailed
	case DrillUnavailableImage:
		return appstate.VerdictImagePullFailed
	case DrillFailedReadiness:
		return appstate.VerdictReadinessFailed
	case DrillInterruptedReconc:
		return appstate.VerdictReconcileStalled
	case DrillStateRestore:
		return VerdictStateRestored
	}
	return ""
}

// State is where a rehearsal ended, or that it runs.
type State string

// Rehearsal states.
const (
	StateRunning   State = "running"
	StatePassed    State = "passed"
	StateFailed    State = "failed"
	StateAbandoned State = "abandoned"
)

// Done reports whether the rehearsal is over.
func (s State) Done() bool { return s != StateRunning && s != "" }

// Phase is how far a running rehearsal got, so a resumed one
// continues from there.
type Phase string

// Rehearsal phases, in order.
const (
	PhaseBaseline   Phase = "baseline"
	PhaseInjected   Phase = "injected"
	PhaseDetected   Phase = "detected"
	PhaseRecovering Phase = "recovering"
	PhaseRecovered  Phase = "recovered"
)

// Baseline is the release the environment had converged on
// before the drill, and the one recovery must return to.
type Baseline struct {
	ReleaseID string       `json:"release_id"`
	Digest    image.Digest `json:"digest"`
	EnvCommit string       `json:"env_commit"`
	// For failed-apply, which has no release: the Terraform root's
	// revision and the resources of the real state as seeded into the
	// scratch copy, which recovery must return to.
	Revision  string                   `json:"revision,omitempty"`
	Resources []workflow.StateResource `json:"resources,omitempty"`
}

// Rehearsal is one drill's record.
type Rehearsal struct {
	ID              string   `json:"id"`
	App             string   `json:"app"`
	Env             string   `json:"env"`
	Drill           Drill    `json:"drill"`
	Captain         string   `json:"captain"`
	State           State    `json:"state"`
	Phase           Phase    `json:"phase"`
	Baseline        Baseline `json:"baseline"`
	DrillRelease    string   `json:"drill_release,omitempty"`
	RecoveryRelease string   `json:"recovery_release,omitempty"`
	// For failed-apply: the scratch copy of the Terraform root the drill
	// plans and applies in (never the real one), and its two plans.
	ScratchDir   string               `json:"scratch_dir,omitempty"`
	DrillPlan    string               `json:"drill_plan,omitempty"`
	RecoveryPlan string               `json:"recovery_plan,omitempty"`
	Expected     appstate.VerdictKind `json:"expected"`
	Detected     appstate.VerdictKind `json:"detected,omitempty"`
	// The four answers, from what the convergence watch last showed.
	IntendedRevision workflow.Answer `json:"intended_revision"`
	ActualArtifact   workflow.Answer `json:"actual_artifact"`
	ControllerStatus workflow.Answer `json:"controller_status"`
	NextSafeAction   workflow.Answer `json:"next_safe_action"`

	StartedAt   time.Time `json:"started_at"`
	InjectedAt  time.Time `json:"injected_at,omitzero"`
	DetectedAt  time.Time `json:"detected_at,omitzero"`
	RecoveredAt time.Time `json:"recovered_at,omitzero"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	// Failure is why the drill failed (not detected, misnamed, not
	// recovered), or why it was abandoned.
	Failure string `json:"failure,omitempty"`
	// ProductionOverride is the --i-know reason a drill ran in
	// production.
	ProductionOverride string `json:"production_override,omitempty"`
	// PhaseTimeout bounds each phase (detect, recover), kept so a resumed
	// drill keeps the bound it started with.
	PhaseTimeout time.Duration `json:"phase_timeout,omitempty"`
	// Restore is what the state-restore drill measured and proved.
	Restore *RestoreProof `json:"restore,omitempty"`
}

// TimeToDetect is DetectedAt − InjectedAt; ok is false until both are set.
func (r *Rehearsal) TimeToDetect() (time.Duration, bool) {
	if r.Drill == DrillStateRestore || r.InjectedAt.IsZero() || r.DetectedAt.IsZero() {
		return 0, false
	}
	return r.DetectedAt.Sub(r.InjectedAt), true
}

// TimeToRecover is RecoveredAt − DetectedAt; ok is false until both are set.
func (r *Rehearsal) TimeToRecover() (time.Duration, bool) {
	if r.Drill == DrillStateRestore || r.DetectedAt.IsZero() || r.RecoveredAt.IsZero() {
		return 0, false
	}
	return r.RecoveredAt.Sub(r.DetectedAt), true
}

// Clone is a deep copy.
func (r *Rehearsal) Clone() *Rehearsal {
	c := *r
	c.Baseline.Resources = append([]workflow.StateResource(nil), r.Baseline.Resources...)
	if r.Restore != nil {
		p := *r.Restore
		c.Restore = &p
	}
	return &c
}

// Filter selects rehearsals by StartedAt, newest first; zero
// fields select all.
type Filter struct {
	App   string
	Env   string
	Drill Drill
	Limit int
}

// NewID is an ID like a release's: app, env, day and a random tail.
func NewID(app, env string, now time.Time) string {
	return "rh-" + workflow.NewReleaseID(app, env, now)
}
