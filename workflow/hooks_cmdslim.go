package workflow

import (
	"context"
	"fmt"
)

// ReleaseUnderReview is the release whose plan review shows the plan with
// fingerprint: none holds it (a plan outside a release, approved with
// relcap approve --plan) is a usage error, and a release that has moved
// on to another plan is blocked, naming the plan to review instead.
func ReleaseUnderReview(ctx context.Context, q *Records, fingerprint string) (*Release, error) {
	r, err := q.ReleaseOfPlan(ctx, fingerprint)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("%w: no release holds plan %s: relcap approve --plan %s approves a plan outside a release", ErrUsage, fingerprint, fingerprint)
	}
	if r.Checkpoints.Fingerprint != fingerprint {
		return nil, fmt.Errorf("%w: release %s has moved on to plan %s; review that one", ErrBlocked, r.ID, ShortHash(r.Checkpoints.Fingerprint))
	}
	return r, nil
}
