package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The command-line path is one release too: relcap plan, apply, promote and
// converge each take the release up to their own step, joining the
// environment's open release (or the one named with --release), or
// starting one, so a scripted release leaves the same record, step history
// and journal links as one driven in the cockpit.

// OpenRequest names the release a command works on.
type OpenRequest struct {
	Env string
	// ReleaseID names the release (--release); empty joins the
	// environment's open release, or starts one.
	ReleaseID string
	// Image is the image the command promotes, when it knows it (relcap
	// promote); a release started by relcap plan learns it at promote.
	Image string
	// PromoteOnly starts, when no release is open, a promotion: the
	// problem and boundary stages are skipped (relcap promote alone).
	PromoteOnly bool
	// ForceUnverified is the journaled reason to promote a digest that
	// has not converged in the previous environment.
	ForceUnverified string
}

// Opened is the release a command works on and how it came to be.
type Opened struct {
	Release *Release
	// Started is true when the command started it, false when it joined
	// an open one.
	Started bool
}

// Describe says which release a command works on, for the captain.
func (o Opened) Describe() string {
	r := o.Release
	if o.Started {
		return fmt.Sprintf("started release %s in %s", r.ID, r.Env)
	}
	return fmt.Sprintf("joined release %s in %s (started by %s at %s, %s)", r.ID, r.Env, r.Captain, r.CreatedAt.UTC().Format(time.RFC3339), r.Status)
}

// open reports whether a release is one a command joins: not done, and
// not ended by a failure someone has to look at first. A rehearsal's
// drill is never joined: relcap rehearse --resume or --cleanup ends it.
func open(r *Release) bool {
	return (r.Kind == KindRelease || r.Kind == KindPromotion) && (r.Status == ReleaseInProgress || r.Status == ReleaseBlocked || r.AwaitsReplan()) &&
		r.Checkpoints.Rehearsal == ""
}

// OpenRelease returns the release req names, or the environment's open
// release, or a new one, and links this session to it. A release that has
// no image yet (started by relcap plan) takes req.Image; one promoting
// another image is not joined: the captain names it or finishes it first.
func (s *Service) OpenRelease(ctx context.Context, req OpenRequest) (Opened, error) {
	d := s.d
	env, err := d.Project.Env(req.Env)
	if err != nil {
		return Opened{}, err
	}
	var r *Release
	if req.ReleaseID != "" {
		r, err = d.Ledger.LoadRelease(ctx, req.ReleaseID)
		switch {
		case errors.Is(err, ErrNotFound):
			return Opened{}, fmt.Errorf("%w: no release %s in the ledger", ErrUsage, req.ReleaseID)
		case err != nil:
			return Opened{}, err
		case r.Env != env.Name:
			return Opened{}, fmt.Errorf("%w: release %s is a release to %s, not %s", ErrUsage, r.ID, r.Env, env.Name)
		case r.Status.Done():
			return Opened{}, fmt.Errorf("%w: release %s is %s; start a new one (leave out --release)", ErrUsage, r.ID, r.Status)
		}
	} else if r, err = s.openIn(ctx, env.Name); err != nil {
		return Opened{}, err
	}
	if r == nil {
		r, err = s.Start(ctx, StartRequest{Env: env.Name, Image: req.Image, PromoteOnly: req.PromoteOnly, ForceUnverified: req.ForceUnverified, allowNoImage: true})
		if err != nil {
			return Opened{}, err
		}
		return Opened{Release: r, Started: true}, nil
	}
	switch {
	case req.Image != "" && r.Image != "" && !sameImage(r, req.Image):
		if req.ReleaseID != "" {
			// Asked for this very release: the image is what is wrong.
			return Opened{}, fmt.Errorf("%w: release %s promotes %s, not %s: give --image %s (or its digest, %s), or relcap resume %s",
				ErrUsage, r.ID, r.Image, req.Image, r.Image, imageAtDigest(r), r.ID)
		}
		return Opened{}, fmt.Errorf("%w: release %s is open in %s for %s, not %s: continue it with --release %s (or relcap resume %s), or finish it first",
			ErrUsage, r.ID, env.Name, r.Image, req.Image, r.ID, r.ID)
	case req.Image != "" && r.Image == "":
		r.Image = req.Image
		if req.ForceUnverified != "" {
			r.Checkpoints.ForceUnverified = req.ForceUnverified
		}
		r.UpdatedAt = d.Clock.Now()
		if err := d.Ledger.SaveRelease(ctx, r); err != nil {
			return Opened{}, fmt.Errorf("save release %s: %w", r.ID, err)
		}
		if err := s.journal(ctx, ReleaseImageSet{Release: r.ID, Image: r.Image, ForceUnverified: req.ForceUnverified}); err != nil {
			return Opened{}, err
		}
	}
	return Opened{Release: r}, s.linkSession(ctx, r.ID)
}

// sameImage reports whether image names what r promotes: the reference
// it was opened with, or the digest that reference resolved to, in the
// same repository (a captain who resumes by digest, as relcap prints it).
func sameImage(r *Release, image string) bool {
	if image == r.Image {
		return true
	}
	return !r.Checkpoints.Digest.IsZero() && image == imageAtDigest(r)
}

// imageAtDigest is r's image repository at the digest it resolved to, or
// its reference as given before it resolved.
func imageAtDigest(r *Release) string {
	if r.Checkpoints.Digest.IsZero() {
		return r.Image
	}
	repo := r.Image
	if at := strings.IndexByte(repo, '@'); at >= 0 {
		repo = repo[:at]
	}
	// A tag follows the last colon after the last slash (a registry's
	// port comes before a slash).
	if colon := strings.LastIndexByte(repo, ':'); colon > strings.LastIndexByte(repo, '/') {
		repo = repo[:colon]
	}
	return repo + "@" + r.Checkpoints.Digest.String()
}

// openIn is the newest open release of env, or nil.
func (s *Service) openIn(ctx context.Context, env string) (*Release, error) {
	releases, err := s.d.Ledger.ListReleases(ctx, ReleaseFilter{App: s.d.Project.App, Env: env, Limit: 50})
	if err != nil {
		return nil, err
	}
	for _, r := range releases {
		if open(r) {
			return r, nil
		}
	}
	return nil, nil
}

// ReleaseOfPlan is the open release whose current plan is fingerprint, or
// nil when none is (a plan made outside a release, or replaced since).
func (q *Records) ReleaseOfPlan(ctx context.Context, fingerprint string) (*Release, error) {
	releases, err := q.ledger.ListReleases(ctx, ReleaseFilter{App: q.project.App, Limit: 200})
	if err != nil {
		return nil, err
	}
	for _, r := range releases {
		if r.Checkpoints.Fingerprint == fingerprint {
			return r, nil
		}
	}
	return nil, nil
}

// PlanOutcome is where relcap plan left its release.
type PlanOutcome struct {
	Opened
	Plan PlanSummary
	// Waiting is why the release waits after plan review (approvals), or
	// "" when it may apply.
	Waiting string
	// Refused is why no approval makes the plan applicable (errored,
	// incomplete, failing checks, drift on another owner's fields);
	// PlanRelease then also returns ErrPlanRefused.
	Refused string
}

// PlanRelease takes the release req opens up to plan review (relcap plan):
// the ownership check first if it has not run, then the saved plan and its
// review. Waiting for approvals is the outcome, not an error; any other
// stop (an ownership conflict) is.
func (s *Service) PlanRelease(ctx context.Context, req OpenRequest, sink EventSink) (PlanOutcome, error) {
	if s.d.Planner == nil {
		return PlanOutcome{}, missingPort("planner")
	}
	opened, err := s.OpenRelease(ctx, req)
	if err != nil {
		return PlanOutcome{}, err
	}
	if err := s.replanIfReviewed(ctx, opened.Release); err != nil {
		return PlanOutcome{}, err
	}
	out := PlanOutcome{Opened: opened}
	r, err := s.RunUntil(ctx, opened.Release.ID, sink, StepPlanReview)
	if r != nil {
		out.Release = r
	}
	var step *StepError
	reviewed := errors.As(err, &step) && step.Step == StepPlanReview
	switch {
	case reviewed && errors.Is(err, ErrApprovalRequired):
		out.Waiting, err = out.Release.Step(StepPlanReview).Message, nil
	case reviewed && errors.Is(err, ErrPlanRefused):
		// The review is the point: it is returned with the refusal.
		out.Refused = out.Release.Step(StepPlanReview).Message
	case err != nil:
		return out, err
	}
	fp := out.Release.Checkpoints.Fingerprint
	if fp == "" {
		return out, errors.Join(err, fmt.Errorf("release %s has no plan after plan review", out.Release.ID))
	}
	plan, lerr := s.d.Ledger.LoadPlan(ctx, fp)
	out.Plan = plan
	return out, errors.Join(err, lerr)
}

// replanIfReviewed prepares a joined release for relcap plan. Plan review
// that already succeeded is reviewed again: its step reuses the saved plan
// while nothing moved and plans again when something did (a var file
// edited since), so plan never hands back a plan apply would refuse as
// stale. A release past apply, or one that promotes only, has no plan to
// make: the captain finishes it first.
func (s *Service) replanIfReviewed(ctx context.Context, r *Release) error {
	review, apply := r.Step(StepPlanReview), r.Step(StepApply)
	switch {
	case review.Status == Skipped:
		return fmt.Errorf("%w: release %s in %s promotes only (no infrastructure change); finish it (relcap promote, relcap converge) before planning the next one", ErrUsage, r.ID, r.Env)
	case apply.Status == Succeeded:
		return fmt.Errorf("%w: release %s in %s already applied plan %s; finish it (relcap promote --env %s --image REF, then relcap converge) before planning the next release", ErrUsage, r.ID, r.Env, ShortHash(r.Checkpoints.Fingerprint), r.Env)
	case review.Status != Succeeded:
		return nil
	}
	review.Status = Pending
	r.UpdatedAt = s.d.Clock.Now()
	if err := s.d.Ledger.SaveRelease(ctx, r); err != nil {
		return fmt.Errorf("save release %s: %w", r.ID, err)
	}
	return nil
}
