package workflow

import (
	"fmt"

	"github.com/relcap/relcap/workflow/fault"
)

// What a step needs from a person before it can run, checked before it
// runs: a release that cannot go on says what is missing and stays as it
// was (not failed), so giving the missing input and resuming continues
// it.

// MissingInput is an error wrapping fault.ErrUsage when step k of r cannot run
// for want of something only a person can give (an image to promote),
// naming the command that gives it; nil when k can run.
func (r *Release) MissingInput(k StepKind) error {
	// Only a release that ships an image can miss one: without a plan
	// stage its image is all it carries. A release whose plan was
	// reviewed and that has no image is infrastructure-only (DecideShape),
	// and its promotion is skipped, not waiting.
	if k == StepPromotion && r.Image == "" && r.Checkpoints.Digest.IsZero() && r.Step(StepPlanReview).Status == Skipped {
		return fmt.Errorf("%w: release %s has no image to promote yet: give it with relcap promote --env %s --release %s --image REF; the release is unchanged",
			fault.ErrUsage, r.ID, r.Env, r.ID)
	}
	return nil
}
