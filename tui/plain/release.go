package plain

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// PrintReleaseOutcome says where a headless run left the release and what
// to do next: converged, stopped at a stage, waiting for a person (on
// errw), or interrupted (on errw).
func PrintReleaseOutcome(out, errw io.Writer, final *workflow.Release, err error) {
	switch {
	case err == nil && final.Status == workflow.ReleaseConverged:
		fmt.Fprintf(out, "\nrelease %s converged in %s: %s running %s\n", final.ID, final.Env, workflow.ShortHash(final.Checkpoints.EnvCommit), final.Checkpoints.Digest)
	case err == nil && final.Status == workflow.ReleaseSucceeded:
		fmt.Fprintf(out, "\nrelease %s succeeded in %s (%s): %s\n", final.ID, final.Env, final.Shape, evidenceMessage(final))
	case err == nil:
		fmt.Fprintf(out, "\nrelease %s: %s; continue with relcap converge --env %s (or relcap resume %s)\n", final.ID, final.Status, final.Env, final.ID)
	case errors.Is(err, fault.ErrBlocked):
		fmt.Fprintf(errw, "\nrelease %s is waiting (%s): %s\nwhen that is done: relcap resume %s\n", final.ID, final.Status, stepMessage(final), final.ID)
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(errw, "\nrelease %s interrupted; nothing completed is lost: relcap resume %s\n", final.ID, final.ID)
	}
}

func stepMessage(r *workflow.Release) string {
	if k, ok := r.Current(); ok {
		return r.Step(k).Message
	}
	return ""
}

// PrintPlanOutcome says, after the plan's review, whether the release can
// apply it and what comes next; refused is true when it cannot.
func PrintPlanOutcome(w io.Writer, out workflow.PlanOutcome) (refused bool) {
	switch {
	case out.Refused != "":
		fmt.Fprintf(w, "\nRelease %s cannot apply this plan: %s\n", out.Release.ID, out.Refused)
		return true
	case out.Waiting != "":
		fmt.Fprintf(w, "\nRelease %s waits: %s\nThen: relcap apply --plan %s\n", out.Release.ID, out.Waiting, out.Plan.Fingerprint)
	case out.Plan.HasChanges():
		fmt.Fprintf(w, "\nNext: relcap apply --plan %s\n", out.Plan.Fingerprint)
	}
	return false
}
