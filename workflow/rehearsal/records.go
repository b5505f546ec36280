package rehearsal

import (
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/journal"
)

// The journal records of recovery drills (relcap rehearse). They live
// with the drills that write them; workflow/journal/records.go keeps
// the catalogue of the release's own records. Kinds and field names are
// stored, so they never change.

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
	Rehearsal        string               `json:"rehearsal"`
	Verdict          appstate.VerdictKind `json:"verdict"`
	Expected         appstate.VerdictKind `json:"expected"`
	IntendedRevision workflow.Answer      `json:"intended_revision"`
	ActualArtifact   workflow.Answer      `json:"actual_artifact"`
	ControllerStatus workflow.Answer      `json:"controller_status"`
	NextSafeAction   workflow.Answer      `json:"next_safe_action"`
	DetectSeconds    float64              `json:"detect_seconds"`
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

// The journal kinds, one per record type above.
const (
	KindRehearsalStarted            journal.Kind = "rehearsal.started"
	KindRehearsalProductionOverride journal.Kind = "rehearsal.production_override"
	KindRehearsalInjected           journal.Kind = "rehearsal.injected"
	KindRehearsalDetected           journal.Kind = "rehearsal.detected"
	KindRehearsalRecovered          journal.Kind = "rehearsal.recovered"
	KindRehearsalPassed             journal.Kind = "rehearsal.passed"
	KindRehearsalFailed             journal.Kind = "rehearsal.failed"
	KindRehearsalAbandoned          journal.Kind = "rehearsal.abandoned"
)

// The kinds, by the name each record is stored under.
func (RehearsalStarted) JournalKind() journal.Kind            { return KindRehearsalStarted }
func (RehearsalProductionOverride) JournalKind() journal.Kind { return KindRehearsalProductionOverride }
func (RehearsalInjected) JournalKind() journal.Kind           { return KindRehearsalInjected }
func (RehearsalDetected) JournalKind() journal.Kind           { return KindRehearsalDetected }
func (RehearsalRecovered) JournalKind() journal.Kind          { return KindRehearsalRecovered }
func (RehearsalPassed) JournalKind() journal.Kind             { return KindRehearsalPassed }
func (RehearsalFailed) JournalKind() journal.Kind             { return KindRehearsalFailed }
func (RehearsalAbandoned) JournalKind() journal.Kind          { return KindRehearsalAbandoned }
