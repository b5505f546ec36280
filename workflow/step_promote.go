package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/oplock"
)

// The decision stage: one immutable digest, the same bytes that passed the
// previous environment, copied with its signatures and pinned by a reviewed
// change of the environment repository. Each side effect (resolve, copy,
// pin, land) is checkpointed before the next.

func (run *releaseRun) promote(ctx context.Context) (StepResult, error) {
	d := run.svc.d
	if d.Registry == nil || d.EnvRepo == nil {
		return StepResult{}, missingPort("registry or environment-repo")
	}
	var res StepResult
	if run.r.Checkpoints.Digest.IsZero() && run.r.Image == "" {
		return StepResult{}, &TerminalError{Err: fmt.Errorf("%w: release %s has no image to promote yet: relcap promote --env %s --release %s --image REF",
			fault.ErrUsage, run.r.ID, run.env.Name, run.r.ID)}
	}
	if run.r.Checkpoints.Digest.IsZero() {
		art, err := wait(run, StepPromotion, func() (image.Artifact, error) { return d.Registry.Resolve(ctx, run.r.Image) })
		if err != nil {
			return StepResult{}, fmt.Errorf("resolve %s: %w", run.r.Image, err)
		}
		first, err := d.Ledger.RecordSighting(ctx, run.r.Image, art.Digest, d.Clock.Now())
		if err != nil {
			return StepResult{}, fmt.Errorf("record sighting: %w", err)
		}
		if first.Digest != art.Digest {
			res.Findings = append(res.Findings, finding.Finding{Severity: finding.Warning, Code: "promotion.tag-moved", Subject: run.r.Image,
				Message:    fmt.Sprintf("the reference pointed to %s when first seen at %s; it now points to %s", first.Digest.Short(), first.At.UTC().Format(time.RFC3339), art.Digest.Short()),
				NextAction: "promote by digest to be sure which bytes you release"})
		}
		res.Evidence = append(res.Evidence, evidence.New(art.Digest.String(), evidence.DigestResolved{
			Reference: run.r.Image, Repository: art.Repository, MediaType: art.MediaType, Platforms: art.Platforms,
			Size: art.Size, Created: art.Created.UTC(), Signed: art.Signed(), Referrers: len(art.Referrers), FirstSeen: first.At.UTC()}))
		if err := run.checkpoint(ctx, func(c *Checkpoints) { c.Digest, c.DigestRepository = art.Digest, art.Repository }); err != nil {
			return StepResult{}, err
		}
	}
	digest := run.r.Checkpoints.Digest
	from := run.r.Checkpoints.DigestRepository
	if prev, ok := d.Project.Previous(run.env.Name); ok && run.r.Kind != KindRollback {
		// A rollback restores bytes that already converged here; the order
		// of environments constrains new digests only.
		converged, err := d.Ledger.HasConverged(ctx, run.r.App, prev.Name, digest)
		if err != nil {
			return StepResult{}, fmt.Errorf("read convergence record: %w", err)
		}
		reason := run.r.Checkpoints.ForceUnverified
		switch {
		case !converged && reason == "":
			msg := fmt.Sprintf("%s has not converged in %s; promote it there first (or pass --force-unverified REASON)", digest.Short(), prev.Name)
			return blocked(fault.ErrNotPromotable, msg, res.Findings), nil
		case !converged:
			res.Findings = append(res.Findings, finding.Finding{Severity: finding.Warning, Code: "promotion.force-unverified", Subject: digest.String(),
				Message:    fmt.Sprintf("promoted without convergence in %s: %s", prev.Name, reason),
				NextAction: "watch this environment closely; the digest was not proven in " + prev.Name})
			if err := run.svc.journal(ctx, journal.PromotionForceUnverified{Release: run.r.ID, Digest: digest.String(), Previous: prev.Name, Reason: reason}); err != nil {
				return StepResult{}, err
			}
		}
		// A drill's build never ran there: its bytes are where it resolved.
		from = run.r.Checkpoints.PromotionHook.source(prev.Registry.Repository, run.r.Checkpoints.DigestRepository, converged)
	}
	if !run.r.Checkpoints.Landed() {
		// One promotion per environment across captains, from the copy
		// to the landing: refused at once, naming its holder.
		unlock, err := run.svc.lockOperation(ctx, oplock.Scope{Kind: oplock.Promote, Key: PromotionBoundary(d.Project, run.env)}, run.r.ID,
			fmt.Sprintf("promote %s to %s (release %s)", digest.Short(), run.env.Name, run.r.ID))
		if b, ok := lockBlocked(err); ok {
			b.Findings, b.Evidence = res.Findings, res.Evidence
			return b, nil
		} else if err != nil {
			return StepResult{Findings: res.Findings}, err
		}
		defer unlock()
	}
	if err := run.skipCopy(ctx, digest, &res); err != nil { // the unavailable-image drill
		return StepResult{}, err
	}
	if run.r.Checkpoints.CopiedTo == "" {
		run.progress(StepPromotion, fmt.Sprintf("copying %s from %s to %s", digest.Short(), from, run.env.Registry.Repository))
		pr, err := wait(run, StepPromotion, func() (image.PromoteResult, error) {
			return d.Registry.Promote(ctx, image.PromoteRequest{Digest: digest, From: from, To: run.env.Registry.Repository})
		})
		if err != nil {
			return StepResult{Findings: res.Findings}, fmt.Errorf("copy %s: %w", digest.Short(), err)
		}
		if pr.Target.Digest != digest {
			return StepResult{}, &TerminalError{Err: fmt.Errorf("%w: copied %s, target has %s", fault.ErrDigestMismatch, digest, pr.Target.Digest)}
		}
		if run.env.Registry.RequireSignature && !pr.Target.Signed() {
			msg := fmt.Sprintf("%s has no signature and %s requires one (registry.require_signature)", digest.Short(), run.env.Name)
			return blocked(fault.ErrNotPromotable, msg, res.Findings), nil
		}
		var carried []string
		for _, ref := range pr.Target.Referrers {
			carried = append(carried, ref.Kind)
		}
		res.Evidence = append(res.Evidence, evidence.New(digest.String(), evidence.DigestVerified{
			Repository: run.env.Registry.Repository, Signed: pr.Target.Signed(), Referrers: len(pr.Target.Referrers), BlobsUploaded: pr.BlobsUploaded, Carried: carried}))
		if err := run.checkpoint(ctx, func(c *Checkpoints) { c.CopiedTo = run.env.Registry.Repository }); err != nil {
			return StepResult{}, err
		}
	}
	pin := run.pinRequest(digest, from)
	if run.r.Checkpoints.EnvPinned == "" {
		run.progress(StepPromotion, "pinning "+digest.Short()+" on a relcap branch of the environment repo")
		ch, err := wait(run, StepPromotion, func() (EnvChange, error) { return d.EnvRepo.Pin(ctx, pin) })
		if err != nil {
			return StepResult{}, fmt.Errorf("pin %s in the environment repo: %w", digest.Short(), err)
		}
		if err := run.checkpoint(ctx, func(c *Checkpoints) { c.EnvBranch, c.EnvDiff, c.EnvPinned = ch.Branch, ch.Diff, ch.Commit }); err != nil {
			return StepResult{}, err
		}
		res.Evidence = append(res.Evidence, evidence.New(ch.Commit, evidence.EnvPinned{Branch: ch.Branch, Pushed: ch.Pushed}))
	}
	if run.env.EnvRepo.Review.PullRequests() && !run.r.Checkpoints.Landed() {
		// The forge reviews and merges the change (envrepo.review).
		return run.landByReview(ctx, res)
	}
	if rule := run.env.Approvals.Rule(approval.Promotion); rule.Required > 0 && !run.env.EnvRepo.Review.PullRequests() {
		// Approvers review the pinned change itself, so the check comes
		// after the branch exists and before it lands.
		check, err := run.promotionApprovals(ctx, run.r.Checkpoints.EnvPinned)
		if errors.Is(err, ErrAuthorUnverified) {
			b := blocked(ErrAuthorUnverified, withoutSentinel(err, ErrAuthorUnverified), res.Findings)
			b.Evidence = res.Evidence
			return b, nil
		} else if err != nil {
			return StepResult{}, err
		}
		if !check.Satisfied() {
			msg := fmt.Sprintf("the pin of %s on %s (commit %s) needs %d more approval(s) before it lands in %s: relcap approve --release %s%s",
				digest.Short(), run.r.Checkpoints.EnvBranch, ShortHash(run.r.Checkpoints.EnvPinned), check.Missing(), run.env.Name, run.r.ID, check.NotCountedNote())
			b := blocked(fault.ErrApprovalRequired, msg, res.Findings)
			b.Evidence = res.Evidence
			return b, nil
		}
	}
	if !run.r.Checkpoints.Landed() {
		run.progress(StepPromotion, "landing "+run.r.Checkpoints.EnvBranch+" on "+run.env.EnvRepo.Branch)
		pin.Reviewed = run.r.Checkpoints.EnvPinned
		ch, err := wait(run, StepPromotion, func() (EnvChange, error) { return d.EnvRepo.Land(ctx, pin) })
		if err != nil {
			return StepResult{}, fmt.Errorf("land %s: %w", run.r.Checkpoints.EnvBranch, err)
		}
		if err := run.checkpoint(ctx, func(c *Checkpoints) { c.EnvCommit = ch.Commit }); err != nil {
			return StepResult{}, err
		}
		res.Evidence = append(res.Evidence, evidence.New(ch.Commit, evidence.EnvLanded{Branch: ch.Branch, Pushed: ch.Pushed}))
	}
	res.Status = Succeeded
	res.Message = fmt.Sprintf("%s in %s, pinned at %s", digest.Short(), run.env.Registry.Repository, revOrNone(run.r.Checkpoints.EnvCommit))
	return res, nil
}

// promotionApprovals counts the signed relcap approvals of the release's
// promotion as of commit (the pinned change a push lands, or the one a
// pull request would merge) against approvals.promotion: one count for
// both ways a promotion lands. An error wrapping ErrAuthorUnverified says
// the rule needs a verified captain and no signature proves one.
func (run *releaseRun) promotionApprovals(ctx context.Context, commit string) (approval.Check, error) {
	d := run.svc.d
	rule := run.env.Approvals.Rule(approval.Promotion)
	approvals, err := d.Ledger.Approvals(ctx, approval.Promotion, run.r.ID)
	if err != nil {
		return approval.Check{}, fmt.Errorf("read approvals: %w", err)
	}
	target := PromotionTarget(run.r)
	target.Commit = commit
	captain, err := promotionCaptain(ctx, d.Verifier, run.env, rule, run.r)
	if err != nil {
		return approval.Check{}, err
	}
	return rule.Count(target, captain, approvals, verifyWith(ctx, d.Verifier)), nil
}

// pinRequest is the change that pins digest in the environment repo; a
// rollback's restores the environment file as the release it returns to
// converged with it, and says so in its commit message.
func (run *releaseRun) pinRequest(digest image.Digest, from string) PinRequest {
	pin := PinRequest{Env: run.env.Name, ReleaseID: run.r.ID, Target: run.env.EnvRepo, Image: run.env.Registry.Repository, Digest: digest, Source: from}
	if run.r.Kind != KindRollback {
		return pin
	}
	pin.RestoreFrom = run.r.Checkpoints.RestoreFrom
	what := fmt.Sprintf("Restore %s@%s, the digest release %s ran,", run.env.Registry.Repository, digest, run.r.RollbackOf)
	if pin.RestoreFrom != "" {
		what = fmt.Sprintf("Restore %s as release %s converged with it (at %s):\nthe digest it ran, %s@%s, and its manifests,",
			run.env.EnvRepo.File, run.r.RollbackOf, ShortHash(pin.RestoreFrom), run.env.Registry.Repository, digest)
	}
	pin.Message = fmt.Sprintf("relcap: roll back %s to release %s (%s)\n\n%s\nas a new change (never Argo CD's history rollback).\n\nRelcap-Release: %s\nRelcap-Environment: %s\nRelcap-Digest: %s\nRelcap-Rollback-Of: %s\n",
		run.env.Name, run.r.RollbackOf, digest.Short(), what, run.r.ID, run.env.Name, digest, run.r.RollbackOf)
	return pin
}
