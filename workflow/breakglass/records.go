package breakglass

import (
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/journal"
)

// The journal records of break-glass (relcap break-glass). They live with
// the feature that writes them; workflow/journal/records.go keeps the
// catalogue of the release's own records. Kinds and field names are
// stored, so they never change.

// BreakGlassStarted: automated sync and self-heal of App are paused until
// ExpiresAt by Window, a deny window Argo CD lifts by itself, under the
// signed Approval in production. Sessions before sync windows recorded
// SavedPolicy instead: the policy turned off, to restore at end.
type BreakGlassStarted struct {
	ID          string               `json:"id"`
	Env         string               `json:"env"`
	App         string               `json:"app"`
	Reason      string               `json:"reason"`
	Approver    string               `json:"approver"`
	ExpiresAt   time.Time            `json:"expires_at"`
	Window      *workflow.SyncWindow `json:"window,omitempty"`
	Approval    *approval.Approval   `json:"approval,omitempty"`
	SavedPolicy *workflow.SyncPolicy `json:"saved_policy,omitempty"`
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
	ID      string              `json:"id"`
	Window  workflow.SyncWindow `json:"window"`
	Expired bool                `json:"expired"`
	Removed bool                `json:"removed"`
}

// BreakGlassEnded: the pause is over. For a window-held pause the window
// is gone (WindowRemoved); a pause from before sync windows had its saved
// sync policy restored (RestoredPolicy).
type BreakGlassEnded struct {
	ID             string               `json:"id"`
	WindowRemoved  bool                 `json:"window_removed,omitempty"`
	RestoredPolicy *workflow.SyncPolicy `json:"restored_policy,omitempty"`
	Capture        string               `json:"capture"`
	Expired        bool                 `json:"expired"`
}

// The journal kinds, one per record type above.
const (
	KindBreakGlassStarted       journal.Kind = "breakglass.started"
	KindBreakGlassRefused       journal.Kind = "breakglass.refused"
	KindBreakGlassFailed        journal.Kind = "breakglass.failed"
	KindBreakGlassCaptured      journal.Kind = "breakglass.captured"
	KindBreakGlassWindowRemoved journal.Kind = "breakglass.window-removed"
	KindBreakGlassEnded         journal.Kind = "breakglass.ended"
)

// The kinds, by the name each record is stored under.
func (BreakGlassStarted) JournalKind() journal.Kind       { return KindBreakGlassStarted }
func (BreakGlassRefused) JournalKind() journal.Kind       { return KindBreakGlassRefused }
func (BreakGlassFailed) JournalKind() journal.Kind        { return KindBreakGlassFailed }
func (BreakGlassCaptured) JournalKind() journal.Kind      { return KindBreakGlassCaptured }
func (BreakGlassWindowRemoved) JournalKind() journal.Kind { return KindBreakGlassWindowRemoved }
func (BreakGlassEnded) JournalKind() journal.Kind         { return KindBreakGlassEnded }
