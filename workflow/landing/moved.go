package landing

import (
	"context"
	"slices"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/forge"
)

// ForgeRetryInterval is how long after a forge's ErrForgeNotReady the
// cockpit tries the merge again when nothing else moved.
const ForgeRetryInterval = time.Minute

// Moved reports whether the pull request r waits on changed on the forge
// in a way that lets its promotion step move on: merged or closed, a new
// head, different reviews, or approved and now mergeable for relcap to
// merge (a merge the forge was not ready for is tried again after
// ForgeRetryInterval). It reads the forge and changes nothing.
func (PullRequests) Moved(ctx context.Context, r *workflow.Release, env workflow.Environment, fg forge.Forge, now time.Time) (bool, error) {
	rec := r.Checkpoints.PullRequest
	if rec == nil {
		return false, nil
	}
	pr, err := fg.PullRequest(ctx, rec.Number)
	if err != nil {
		return false, err
	}
	if pr.State != rec.State || pr.HeadSHA != rec.HeadSHA {
		return true, nil
	}
	reviews, err := fg.Reviews(ctx, pr.Number)
	if err != nil {
		return false, err
	}
	verdicts := CountForgeReviews(env, r.Captain, pr, reviews)
	if !slices.Equal(verdicts, rec.Reviews) {
		return true, nil
	}
	approved := len(counted(verdicts)) >= RequiredForgeReviews(env)
	if rec.NotReady != "" && now.Sub(rec.NotReadyAt) < ForgeRetryInterval {
		return false, nil
	}
	return approved && pr.Mergeable && env.EnvRepo.Review.Merge != forge.MergeByPerson, nil
}
