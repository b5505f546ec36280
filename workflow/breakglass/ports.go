package breakglass

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
)

// The ports only break-glass uses; the adapters that have these abilities
// implement them beside the core's (the Argo CD adapter's SyncWindows,
// which the core's convergence watch reads too, stays in workflow).

// ReconcileControl is the optional ability of a Convergence adapter to
// pause and restore reconciliation of one application, and read its drift:
// what break-glass needs from Argo CD.
type ReconcileControl interface {
	SyncPolicy(ctx context.Context, app appstate.AppRef) (workflow.SyncPolicy, error)
	SetSyncPolicy(ctx context.Context, app appstate.AppRef, p workflow.SyncPolicy) error
	Drift(ctx context.Context, app appstate.AppRef) ([]Drift, error)
}

// Drift is a managed resource whose live state differs from Git.
type Drift struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Desired and Live are the object as Git renders it and as it runs.
	Desired string `json:"desired,omitempty"`
	Live    string `json:"live,omitempty"`
}

// Capturer is the optional ability of an EnvRepo to record arbitrary files
// on a relcap branch for review (a break-glass hotfix as it runs).
type Capturer interface {
	Capture(ctx context.Context, req CaptureRequest) (workflow.EnvChange, error)
}

// CaptureRequest asks the environment repository to record files on a
// relcap branch for review (the live state of a break-glass hotfix).
type CaptureRequest struct {
	Env     string
	ID      string // branch relcap/<env>/<id>
	Target  workflow.EnvRepoTarget
	Path    string // file to write, relative to the repository root
	Content []byte
	Message string
}

// DenyWindow is the deny window that pauses automated sync and self-heal
// of the application named app from now for ttl, and the moment Argo CD
// closes it. Argo CD schedules windows with cron, to the minute, so the
// window opens at the start of now's minute (in UTC: a schedule of that
// minute, hour, day and month) and lasts whole minutes, up to the first
// whole minute at or after now+ttl: it never closes before the time box
// ends, and at most a minute after. manualSync stays on so a person can
// still sync by hand during the pause. app may be "namespace/name": Argo CD
// matches windows against the bare name.
func DenyWindow(app string, now time.Time, ttl time.Duration) (workflow.SyncWindow, time.Time) {
	if _, name, ok := strings.Cut(app, "/"); ok {
		app = name
	}
	start := now.UTC().Truncate(time.Minute)
	end := now.UTC().Add(ttl)
	if whole := end.Truncate(time.Minute); !whole.Equal(end) {
		end = whole.Add(time.Minute)
	}
	return workflow.SyncWindow{
		Kind: workflow.SyncWindowDeny, Applications: []string{app}, Schedule: cronAt(start), Duration: end.Sub(start),
		TimeZone: "UTC", ManualSync: true,
	}, end
}

// cronAt is the cron schedule of t's minute of the year (t in UTC).
func cronAt(t time.Time) string {
	return fmt.Sprintf("%d %d %d %d *", t.Minute(), t.Hour(), t.Day(), int(t.Month()))
}
