package plain

import (
	"fmt"
	"io"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/breakglass"
)

// PrintBreakGlassStarted says what was paused, until when, and how it ends.
func PrintBreakGlassStarted(w io.Writer, b breakglass.Record) {
	fmt.Fprintf(w, "break-glass %s: reconciliation of %s paused until %s by a %s\n", b.ID, b.App, b.ExpiresAt.UTC().Format(time.RFC3339), b.Window)
	if b.Approver != "" {
		fmt.Fprintf(w, "approved by %s\n", b.Approver)
	}
	fmt.Fprintf(w, "argo cd resumes automated sync and self-heal by itself then (self-heal puts Git's state back);\nend it sooner, capturing the drift for review, with: relcap breakglass end --env %s\n", b.Env)
}

// PrintBreakGlassStatus prints the time left, what holds the pause and the
// live drift.
func PrintBreakGlassStatus(w io.Writer, st breakglass.Status) {
	left := "EXPIRED " + (-st.Left).Round(time.Second).String() + " ago"
	if st.Left > 0 {
		left = st.Left.Round(time.Second).String() + " left"
	}
	fmt.Fprintf(w, "break-glass %s on %s by %s: %s\nreason: %s\n", st.ID, st.App, st.Actor, left, st.Reason)
	fmt.Fprintln(w, pauseLine(st))
	if len(st.Drift) == 0 {
		fmt.Fprintln(w, "no drift: the live state matches Git")
	}
	for _, d := range st.Drift {
		fmt.Fprintf(w, "drifted: %s/%s %s/%s\n", d.Group, d.Kind, d.Namespace, d.Name)
	}
}

// PrintBreakGlassEnded says what was captured and how reconciliation
// resumed.
func PrintBreakGlassEnded(w io.Writer, st breakglass.Status, change workflow.EnvChange) {
	if change.Branch != "" {
		fmt.Fprintf(w, "captured %d drifted resource(s) on branch %s (%s) for review\n", len(st.Drift), change.Branch, workflow.ShortHash(change.Commit))
	} else {
		fmt.Fprintln(w, "no drift to capture")
	}
	if st.Window != nil {
		fmt.Fprintf(w, "break-glass %s ended: its sync window is removed and argo cd reconciles %s again\n", st.ID, st.App)
	} else {
		fmt.Fprintf(w, "break-glass %s ended: %s sync policy restored to %s\n", st.ID, st.App, st.SavedPolicy)
	}
}

// WarnExpiredBreakGlass makes each expired break-glass loud until it is
// ended.
func WarnExpiredBreakGlass(w io.Writer, expired []breakglass.Record, now time.Time) {
	for _, b := range expired {
		ago := now.Sub(b.ExpiresAt).Round(time.Second)
		if b.SelfEnding() {
			fmt.Fprintf(w, "WARNING: break-glass %s in %s expired %s ago: argo cd resumed reconciling %s when its window closed; capture what drift is left and close the record with: relcap breakglass end --env %s\n",
				b.ID, b.Env, ago, b.App, b.Env)
			continue
		}
		fmt.Fprintf(w, "WARNING: break-glass %s in %s expired %s ago and %s is still not reconciling: relcap breakglass end --env %s\n",
			b.ID, b.Env, ago, b.App, b.Env)
	}
}

// pauseLine says what holds a break-glass's pause now.
func pauseLine(st breakglass.Status) string {
	switch {
	case st.Window == nil:
		return fmt.Sprintf("paused: automated sync is off until end restores %s", st.SavedPolicy)
	case st.WindowRemoved:
		return "not paused: the sync window closed and relcap removed it; argo cd reconciles again"
	case st.Held == nil:
		return fmt.Sprintf("NOT PAUSED: the %s is gone from the project (removed by hand?); argo cd reconciles again", st.Window)
	case st.Held.Active:
		return fmt.Sprintf("paused by the %s, active", st.Held)
	}
	return fmt.Sprintf("not paused: the %s has closed; argo cd reconciles again", st.Held)
}
