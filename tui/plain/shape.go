package plain

import (
	"fmt"
	"io"
	"time"

	"github.com/relcap/relcap/workflow"
)

// evidenceMessage is what the last step of a finished release said: for an
// infrastructure-only release, what its evidence stage found.
func evidenceMessage(r *workflow.Release) string {
	return r.Step(workflow.StepConvergence).Message
}

// PrintAbandoned says that a release was abandoned, by whom and why, and
// which saved plan went with it.
func PrintAbandoned(w io.Writer, r *workflow.Release, planDeleted string) {
	a := r.Abandonment
	fmt.Fprintf(w, "release %s in %s abandoned by %s at %s: %s\n", r.ID, r.Env, a.By, a.At.UTC().Format(time.RFC3339), a.Reason)
	if planDeleted != "" {
		fmt.Fprintf(w, "its saved plan %s is deleted; it can no longer be applied\n", workflow.ShortHash(planDeleted))
	}
	fmt.Fprintln(w, "reports count it neither as a deployment nor as a change failure")
}
