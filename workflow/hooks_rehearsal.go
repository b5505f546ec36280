package workflow

import (
	"context"
	"fmt"
	"strings"
)

// The hooks the recovery drills (workflow/rehearsal) take from the core:
// one promotion hook for the releases a drill starts on purpose, and the
// few operations a drill runs as the core runs them (the promotion lock,
// the journal, a plan kept and applied as every plan is).

// PromotionHook marks a release a recovery drill started on purpose and
// shapes its promotion. It travels in StartRequest and is kept in the
// release's Checkpoints (embedded, under the JSON names releases have
// always been written with), so a drill's release resumed by another
// process is promoted the same way. The zero value is an ordinary release.
type PromotionHook struct {
	// Rehearsal is the rehearsal (relcap rehearse) this release is a
	// drill or recovery of. Such a release is never joined by a later
	// relcap promote (OpenRelease), and its build, which never ran in the
	// previous environment, is copied from where it resolved.
	Rehearsal string `json:"rehearsal,omitempty"`
	// Unavailable marks the drill release of an unavailable-image
	// rehearsal: its Image is a digest reference that exists in no
	// registry, on purpose, so Start takes the digest as it is (nothing to
	// resolve) and the promotion pins it without copying.
	Unavailable bool `json:"rehearsal.unavailable,omitempty"`
}

// source is the repository the promotion copies the digest from: the
// previous environment's (verified), unless this is a drill's build that
// never converged there and resolved in resolvedIn.
func (h PromotionHook) source(verified, resolvedIn string, converged bool) string {
	if !converged && h.Rehearsal != "" && resolvedIn != "" {
		return resolvedIn
	}
	return verified
}

// pinnedDigest is the digest of an unavailable-image drill's Image, taken
// as it is.
func (h PromotionHook) pinnedDigest(image string) (Digest, string, error) {
	at := strings.LastIndexByte(image, '@')
	if at < 0 {
		return Digest{}, "", fmt.Errorf("rehearsal %s: %s is not a digest reference", h.Rehearsal, image)
	}
	d, err := ParseDigest(image[at+1:])
	if err != nil {
		return Digest{}, "", fmt.Errorf("rehearsal %s: %s is not a digest reference", h.Rehearsal, image)
	}
	return d, image[:at], nil
}

// skipCopy checkpoints the copy of an unavailable-image drill's digest as
// done without copying it: there are no bytes to copy, and pinning them
// anyway is the drill. Any other release is left to the copy.
func (run *releaseRun) skipCopy(ctx context.Context, digest Digest, res *StepResult) error {
	h := run.r.Checkpoints.PromotionHook
	if run.r.Checkpoints.CopiedTo != "" || !h.Unavailable {
		return nil
	}
	run.progress(StepPromotion, fmt.Sprintf("rehearsal %s: not copying %s, which exists in no registry on purpose", h.Rehearsal, digest.Short()))
	res.Evidence = append(res.Evidence, NewEvidence(digest.String(), DrillCopySkipped{Rehearsal: h.Rehearsal, Repository: run.env.Registry.Repository}))
	return run.checkpoint(ctx, func(c *Checkpoints) { c.CopiedTo = run.env.Registry.Repository })
}

// Deps are the ports this Service was wired with, for the feature
// packages beside the core that drive releases through it.
func (s *Service) Deps() Deps { return s.d }

// LockPromotion takes env's promotion lock for what, as a promotion
// holds it from the copy to the landing: refused at once, naming its
// holder, while another captain holds it.
func (s *Service) LockPromotion(ctx context.Context, env Environment, what string) (unlock func(), err error) {
	return s.lockOperation(ctx, LockScope{Kind: LockPromote, Key: PromotionBoundary(s.d.Project, env)}, "", what)
}

// Journal appends rec to this session's journal.
func (s *Service) Journal(ctx context.Context, rec JournalRecord) error { return s.journal(ctx, rec) }

// PlanRoot plans env's Terraform root (an environment's, or a drill's
// scratch copy of one) and keeps the plan as every plan relcap makes is
// kept: drift reviewed, signed, saved and journaled, with what Terraform
// printed going where ToolOutput sends it.
func (s *Service) PlanRoot(ctx context.Context, env Environment) (PlanSummary, error) {
	if s.d.Planner == nil {
		return PlanSummary{}, missingPort("terraform planner")
	}
	tctx, done := s.withToolOutput(ctx, "", StepPlanReview)
	p, err := s.d.Planner.Plan(tctx, env, s.d.Actor)
	if err = done(err); err != nil {
		return p, err
	}
	return s.keepPlan(ctx, env, p)
}

// IgnoredNote says which approvals a check did not count, and why; ""
// when it counted them all.
func IgnoredNote(c ApprovalCheck) string { return ignoredNote(c) }

// NextAfterFailedApply is the next safe action relcap shows after a
// failed apply in env.
func (s *Service) NextAfterFailedApply(ctx context.Context, env Environment) string {
	return s.nextAfterFailedApply(ctx, env)
}

// RevOrNone names a revision, or says there is none.
func RevOrNone(rev string) string { return revOrNone(rev) }

// RunsDigest reports whether one of images runs digest d.
func RunsDigest(images []string, d Digest) bool { return runsDigest(images, d) }

// Answer is one of the four answers a recovery drill records (intended
// revision, actual artifact, controller status, next safe action): its
// value and the exact line relcap showed the captain, as the journal's
// rehearsal.detected record keeps them.
type Answer struct {
	Value string `json:"value"`
	Shown string `json:"shown"`
}
