package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/relcap/relcap/workflow/finding"
)

// Promotion through a pull request (envrepo.review.via: pull_request).
//
// The step never waits on the forge itself: each run reads the pull
// request and its reviews once and either lands the change or returns
// Blocked with ErrAwaitingForge ("waiting for review", "waiting for a
// merge"). A review on the forge changes nothing relcap can watch, so the
// cockpit re-runs the step every ForgePollInterval while it waits, and
// headless promotions stop (exit 3) with the pull request's address for
// `relcap resume` to re-check later. Every run is idempotent: the pull
// request is opened once per branch, and a merge made by hand is picked up.

// ForgePollInterval is how often the cockpit re-reads a pull request that
// waits for review or merge on the forge.
const ForgePollInterval = 5 * time.Second

// PullRequestRecord is what a release keeps of its pull request.
type PullRequestRecord struct {
	Forge  ForgeKind `json:"forge"`
	Number int       `json:"number"`
	URL    string    `json:"url"`
	Head   string    `json:"head"` // the relcap branch
	Base   string    `json:"base"` // the environment branch
	// HeadSHA is the head commit as last read; Reviews the reviews as last
	// counted against it.
	HeadSHA string           `json:"head_sha,omitempty"`
	State   PullRequestState `json:"state,omitempty"`
	Reviews []ReviewVerdict  `json:"reviews,omitempty"`
	// MergeCommit, MergedBy and ByRelcap, once merged.
	MergeCommit string `json:"merge_commit,omitempty"`
	MergedBy    string `json:"merged_by,omitempty"`
	ByRelcap    bool   `json:"by_relcap,omitempty"`
	// NotReady is the forge's last reason for not merging (ErrForgeNotReady)
	// and NotReadyAt when it said so: ForgeMoved asks again after
	// ForgeRetryInterval, as a required check may pass without anything
	// relcap reads changing.
	NotReady   string    `json:"not_ready,omitempty"`
	NotReadyAt time.Time `json:"not_ready_at,omitzero"`
}

// ForgeRetryInterval is how long after a forge's ErrForgeNotReady the
// cockpit tries the merge again when nothing else moved.
const ForgeRetryInterval = time.Minute

// ReviewVerdict is one forge account's latest review and whether it
// counts as a promotion approval, and why not.
type ReviewVerdict struct {
	Login     string      `json:"login"`
	Principal string      `json:"principal"`
	State     ReviewState `json:"state"`
	Commit    string      `json:"commit"`
	Counted   bool        `json:"counted"`
	Why       string      `json:"why,omitempty"`
	// Comment is the first line of what the reviewer wrote, clipped: the
	// captain sees why changes were requested without leaving relcap.
	Comment string `json:"comment,omitempty"`
}

// reviewComment is a review body as a ReviewVerdict keeps it: its first
// non-empty line, control characters dropped (it is the forge user's
// text, shown in a terminal), at most 160 characters.
func reviewComment(body string) string {
	for _, l := range strings.Split(body, "\n") {
		l = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return -1
			}
			return r
		}, strings.TrimSpace(l))
		if l == "" {
			continue
		}
		if r := []rune(l); len(r) > 160 {
			l = string(r[:159]) + "…"
		}
		return l
	}
	return ""
}

// Counted are the verdicts that count.
func counted(vs []ReviewVerdict) []ReviewVerdict {
	var out []ReviewVerdict
	for _, v := range vs {
		if v.Counted {
			out = append(out, v)
		}
	}
	return out
}

// reviewers names counted reviews as login → principal.
func reviewers(vs []ReviewVerdict) []string {
	var out []string
	for _, v := range counted(vs) {
		out = append(out, reviewerName(v))
	}
	return out
}

func reviewerName(v ReviewVerdict) string {
	if v.Principal == v.Login {
		return v.Login
	}
	return v.Login + " → " + v.Principal
}

// RequiredForgeReviews is how many approving forge reviews a promotion
// needs: approvals.promotion, and at least one in production, where a
// pull request nobody reviewed must not land on relcap's word.
func RequiredForgeReviews(env Environment) int {
	n := env.Approvals.Promotion
	if env.Production && n < 1 {
		n = 1
	}
	return n
}

// CountForgeReviews judges each forge account's latest review of a pull
// request: it counts when it approves head (a review of an older commit
// approves what the branch was, not what it is), by someone other than the
// pull request's author and the captain where the environment wants
// approvals distinct from the author, and by one of approvers.promotion
// when that is set. Forge accounts are people through review.PrincipalOf.
func CountForgeReviews(env Environment, captain string, pr PullRequest, reviews []ForgeReview) []ReviewVerdict {
	review := env.EnvRepo.Review
	rule := env.Approvals.Rule(ApprovePromotion)
	latest := map[string]int{}
	var out []ReviewVerdict
	for _, r := range reviews {
		// A comment leaves an earlier verdict standing; a later approval,
		// request for changes or dismissal replaces it.
		if r.State == ReviewCommented || r.State == ReviewPending {
			if _, seen := latest[r.Login]; seen {
				continue
			}
		}
		v := ReviewVerdict{Login: r.Login, Principal: review.PrincipalOf(r.Login), State: r.State, Commit: r.CommitSHA, Comment: reviewComment(r.Body)}
		if i, seen := latest[r.Login]; seen {
			out[i] = v
			continue
		}
		latest[r.Login] = len(out)
		out = append(out, v)
	}
	for i := range out {
		v := &out[i]
		switch {
		case v.State != ReviewApproved:
			v.Why = "did not approve (" + string(v.State) + ")"
		case v.Commit != pr.HeadSHA:
			v.Why = fmt.Sprintf("approved commit %s, but the pull request is now at %s: approvals must be renewed on the new commit", ShortHash(v.Commit), ShortHash(pr.HeadSHA))
		case rule.DistinctFromAuthor && (v.Login == pr.Author || v.Principal == captain):
			v.Why = fmt.Sprintf("%s opened or captains this promotion and %s requires approval by someone else (approvals.distinct_from_author)", v.Principal, env.Name)
		case len(rule.Approvers) > 0 && !slices.Contains(rule.Approvers, v.Principal):
			v.Why = fmt.Sprintf("%s is not in approvers.promotion (%s)", v.Principal, strings.Join(rule.Approvers, ", "))
		default:
			v.Counted = true
		}
	}
	return out
}

// PullRequestTitle is the title of a promotion's pull request.
func PullRequestTitle(s PromotionSummary) string {
	if s.Kind == KindRollback {
		return fmt.Sprintf("relcap: roll back %s to release %s in %s (%s, release %s)", s.App, s.RollbackOf, s.Env, s.Digest.Short(), s.ReleaseID)
	}
	return fmt.Sprintf("relcap: promote %s %s to %s (release %s)", s.App, s.Digest.Short(), s.Env, s.ReleaseID)
}

// PromotionSummary is the release's evidence a pull request carries, so
// reviewers on the forge see what relcap vouches for.
type PromotionSummary struct {
	App, Env, ReleaseID string
	Kind                ReleaseKind
	RollbackOf          string
	Captain             string

	Digest     Digest
	Reference  string // the image reference as given
	Repository string // the environment's repository, where it was copied
	Platforms  Platforms
	Signed     bool
	// Carried are the referrers' kinds on the target (signature,
	// attestation, sbom…).
	Carried ReferrerKinds

	// Upstream is the previous environment's convergence of the digest;
	// nil for the first environment (UpstreamEnv empty) or when forced
	// past it (ForceUnverified).
	UpstreamEnv     string
	Upstream        *ConvergenceRecord
	ForceUnverified string

	// Plan is the release's applied plan (empty when it had none).
	Plan PlanEvidence
	// Ownership is the ownership check's result, nil when skipped.
	Ownership *OwnershipChecked

	Branch, Base, Commit string
	Diff                 string
}

// PlanEvidence is the applied plan a promotion carries.
type PlanEvidence struct {
	Fingerprint string
	Applied     Applied
}

// PullRequestBody is the Markdown description of a promotion's pull
// request: the digest and its provenance, the upstream convergence, the
// applied plan, the ownership result and the diff, ending with the
// relcap-release footer that ties the pull request to the ledger.
func PullRequestBody(s PromotionSummary) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	if s.Kind == KindRollback {
		w("relcap rolls **%s** in **%s** back to release `%s`, captained by %s.\n\n", s.App, s.Env, s.RollbackOf, s.Captain)
	} else {
		w("relcap promotes **%s** to **%s**, captained by %s.\n\n", s.App, s.Env, s.Captain)
	}
	w("### Digest\n\n")
	w("- digest: `%s`\n", s.Digest)
	if s.Reference != "" {
		w("- reference: `%s`\n", s.Reference)
	}
	w("- repository: `%s`\n", s.Repository)
	platforms := "none declared by the image"
	if len(s.Platforms) > 0 {
		platforms = strings.Join(s.Platforms, ", ")
	}
	w("- platforms: %s\n", platforms)
	carried := "none"
	if len(s.Carried) > 0 {
		carried = strings.Join(s.Carried, ", ")
	}
	signed := "unsigned"
	if s.Signed {
		signed = "signed"
	}
	w("- provenance: %s; carried: %s\n\n", signed, carried)

	w("### Upstream convergence\n\n")
	switch {
	case s.UpstreamEnv == "":
		w("%s is the first environment: nothing upstream.\n\n", s.Env)
	case s.Upstream != nil:
		w("Converged in %s in release `%s` at %s, revision `%s`.\n\n", s.UpstreamEnv, s.Upstream.ReleaseID, s.Upstream.At.UTC().Format(time.RFC3339), ShortHash(s.Upstream.Revision))
	case s.ForceUnverified != "":
		w("**Not converged in %s**: promoted with --force-unverified: %s\n\n", s.UpstreamEnv, s.ForceUnverified)
	default:
		w("No convergence in %s on record.\n\n", s.UpstreamEnv)
	}

	w("### Plan\n\n")
	switch {
	case s.Plan.Fingerprint == "":
		w("No Terraform plan in this release.\n\n")
	case s.Plan.Applied.NoChanges:
		w("Plan `%s` reviewed: no changes to apply.\n\n", s.Plan.Fingerprint)
	case s.Plan.Applied.Done:
		w("Plan `%s` applied (state serial %d).\n\n", s.Plan.Fingerprint, s.Plan.Applied.StateSerial)
	default:
		w("Plan `%s` reviewed, not applied.\n\n", s.Plan.Fingerprint)
	}

	w("### Ownership\n\n")
	if s.Ownership == nil {
		w("Not checked in this release.\n\n")
	} else {
		w("%d managed object(s) checked, %d finding(s).\n\n", s.Ownership.Objects, s.Ownership.Findings)
	}

	w("### Change\n\n")
	w("`%s` at `%s` into `%s`:\n\n", s.Branch, ShortHash(s.Commit), s.Base)
	fence := "```"
	for strings.Contains(s.Diff, fence) {
		fence += "`"
	}
	w("%sdiff\n%s\n%s\n\n", fence, strings.TrimRight(s.Diff, "\n"), fence)
	w("---\nrelcap-release: %s\n", s.ReleaseID)
	return b.String()
}

// promotionSummary gathers the release's evidence for its pull request.
func (run *releaseRun) promotionSummary(ctx context.Context) (PromotionSummary, error) {
	r, c := run.r, run.r.Checkpoints
	s := PromotionSummary{App: r.App, Env: r.Env, ReleaseID: r.ID, Kind: r.Kind, RollbackOf: r.RollbackOf, Captain: r.Captain,
		Digest: c.Digest, Reference: r.Image, Repository: run.env.Registry.Repository, ForceUnverified: c.ForceUnverified,
		Branch: c.EnvBranch, Base: run.env.EnvRepo.Branch, Commit: c.EnvPinned, Diff: c.EnvDiff,
		Plan: PlanEvidence{Fingerprint: c.Fingerprint, Applied: c.Applied}}
	ev := r.Step(StepPromotion).Evidence
	if d, _, ok := EvidenceOf[DigestResolved](ev); ok {
		s.Platforms, s.Signed = d.Platforms, d.Signed
	}
	if d, _, ok := EvidenceOf[DigestVerified](ev); ok {
		s.Signed, s.Carried = d.Signed, d.Carried
	}
	if d, _, ok := EvidenceOf[OwnershipChecked](r.Step(StepOwnership).Evidence); ok {
		s.Ownership = &d
	}
	if prev, ok := run.svc.d.Project.Previous(r.Env); ok && r.Kind != KindRollback {
		s.UpstreamEnv = prev.Name
		rs, err := run.svc.d.Ledger.ListReleases(ctx, ReleaseFilter{App: r.App, Env: prev.Name})
		if err != nil {
			return s, fmt.Errorf("read %s's releases: %w", prev.Name, err)
		}
		for _, u := range rs {
			if u.Checkpoints.Digest == c.Digest && u.Checkpoints.Converged() {
				s.Upstream = &ConvergenceRecord{ReleaseID: u.ID, App: u.App, Env: u.Env, Digest: c.Digest, Revision: u.Checkpoints.EnvCommit, At: u.Checkpoints.ConvergedAt}
				break
			}
		}
	}
	return s, nil
}

// landByPullRequest is the landing of a pinned change through the forge:
// open the pull request once, count its reviews, merge it (or wait for a
// person to), and take the merge commit as EnvCommit.
func (run *releaseRun) landByPullRequest(ctx context.Context, res StepResult) (StepResult, error) {
	d := run.svc.d
	review := run.env.EnvRepo.Review
	c := run.r.Checkpoints
	if c.EnvBranch == run.env.EnvRepo.Branch {
		// The environment branch pins the digest already (Pin committed
		// nothing): there is no change to review, and its tip is the
		// revision Argo CD must sync.
		if err := run.checkpoint(ctx, func(c *Checkpoints) { c.EnvCommit = c.EnvPinned }); err != nil {
			return StepResult{}, err
		}
		res.Evidence = append(res.Evidence, NewEvidence(c.EnvPinned, EnvLanded{Branch: c.EnvBranch, Pushed: true}))
		res.Status = Succeeded
		res.Message = fmt.Sprintf("%s is pinned on %s already at %s: no pull request needed", c.Digest.Short(), c.EnvBranch, ShortHash(c.EnvPinned))
		return res, nil
	}
	forge, err := run.svc.openForge(ctx, review)
	if err != nil {
		return StepResult{}, fmt.Errorf("open the forge for %s (envrepo.review): %w", run.env.Name, err)
	}
	var pr PullRequest
	if c.PullRequest == nil {
		sum, err := run.promotionSummary(ctx)
		if err != nil {
			return StepResult{}, err
		}
		run.progress(StepPromotion, "opening a pull request of "+c.EnvBranch+" into "+run.env.EnvRepo.Branch+" on "+forge.Where())
		pr, err = wait(run, StepPromotion, func() (PullRequest, error) {
			return forge.OpenPullRequest(ctx, OpenPullRequestRequest{Head: c.EnvBranch, Base: run.env.EnvRepo.Branch, Title: PullRequestTitle(sum), Body: PullRequestBody(sum)})
		})
		if err != nil {
			return StepResult{Findings: res.Findings}, fmt.Errorf("open a pull request of %s on %s: %w", c.EnvBranch, forge.Where(), err)
		}
		rec := &PullRequestRecord{Forge: review.Forge, Number: pr.Number, URL: pr.URL, Head: c.EnvBranch, Base: run.env.EnvRepo.Branch, HeadSHA: pr.HeadSHA, State: pr.State}
		if err := run.checkpoint(ctx, func(c *Checkpoints) { c.PullRequest = rec }); err != nil {
			return StepResult{}, err
		}
		if err := run.svc.journal(ctx, PromotionPROpened{Release: run.r.ID, Env: run.env.Name, Forge: review.Forge, Number: pr.Number, URL: pr.URL,
			Head: c.EnvBranch, Base: run.env.EnvRepo.Branch, Commit: c.EnvPinned}); err != nil {
			return StepResult{}, err
		}
		res.Evidence = append(res.Evidence, NewEvidence(pr.URL, PullRequestOpened{Number: pr.Number, Forge: review.Forge, Head: c.EnvBranch, Base: run.env.EnvRepo.Branch, Commit: c.EnvPinned}))
	} else {
		pr, err = wait(run, StepPromotion, func() (PullRequest, error) { return forge.PullRequest(ctx, c.PullRequest.Number) })
		if err != nil {
			return StepResult{Findings: res.Findings}, fmt.Errorf("read pull request #%d on %s: %w", c.PullRequest.Number, forge.Where(), err)
		}
	}
	rec := *run.r.Checkpoints.PullRequest
	rec.HeadSHA, rec.State = pr.HeadSHA, pr.State
	ref := fmt.Sprintf("pull request #%d (%s)", pr.Number, pr.URL)

	if pr.State == PullRequestMerged {
		// Merged on the forge: who reviewed it is read now, for the
		// ledger and journal, as the step did not see the last reviews.
		if reviews, err := forge.Reviews(ctx, pr.Number); err == nil {
			rec.Reviews = CountForgeReviews(run.env, run.r.Captain, pr, reviews)
		}
		return run.merged(ctx, res, rec, pr, false)
	}
	if pr.State == PullRequestClosed {
		return run.prBlocked(ctx, res, rec, ErrBlocked, fmt.Sprintf("%s was closed without merge", ref),
			fmt.Sprintf("reopen pull request #%d on the forge and run relcap resume %s, or roll back / start a new release", pr.Number, run.r.ID))
	}

	reviews, err := wait(run, StepPromotion, func() ([]ForgeReview, error) { return forge.Reviews(ctx, pr.Number) })
	if err != nil {
		return StepResult{Findings: res.Findings}, fmt.Errorf("read the reviews of pull request #%d on %s: %w", pr.Number, forge.Where(), err)
	}
	verdicts := CountForgeReviews(run.env, run.r.Captain, pr, reviews)
	required := RequiredForgeReviews(run.env)
	got := len(counted(verdicts))
	if !slices.Equal(verdicts, run.r.Checkpoints.PullRequest.Reviews) || rec.HeadSHA != run.r.Checkpoints.PullRequest.HeadSHA {
		rec.Reviews = verdicts
		if err := run.checkpoint(ctx, func(c *Checkpoints) { c.PullRequest = &rec }); err != nil {
			return StepResult{}, err
		}
		if len(verdicts) > 0 {
			if err := run.svc.journal(ctx, PromotionPRReviewed{Release: run.r.ID, Number: pr.Number, Commit: pr.HeadSHA, Reviews: verdicts, Counted: got, Required: required}); err != nil {
				return StepResult{}, err
			}
		}
	}
	rec.Reviews = verdicts
	moved := pr.HeadSHA != run.r.Checkpoints.EnvPinned
	if moved {
		res.Findings = appendOnce(res.Findings, finding.Finding{Severity: finding.Warning, Code: "promotion.pr-head-moved", Subject: pr.URL,
			Message:    fmt.Sprintf("pull request #%d's head moved from %s, the commit relcap pinned, to %s", pr.Number, ShortHash(run.r.Checkpoints.EnvPinned), ShortHash(pr.HeadSHA)),
			NextAction: "check what was pushed to " + rec.Head + "; approvals must be renewed on the new commit"})
	}
	if got < required {
		msg := fmt.Sprintf("%s waits for %d more approving review(s) of commit %s on the forge (%d/%d)%s", ref, required-got, ShortHash(pr.HeadSHA), got, required, verdictNote(verdicts))
		if moved && hasApprovalOf(verdicts, run.r.Checkpoints.EnvPinned) {
			msg = fmt.Sprintf("%s was approved on commit %s, but its head moved to %s after approval: not merged; the approvals must be renewed on the new commit %s on the forge (%d/%d)%s",
				ref, ShortHash(run.r.Checkpoints.EnvPinned), ShortHash(pr.HeadSHA), ShortHash(pr.HeadSHA), got, required, verdictNote(verdicts))
			if err := run.journalPRBlocked(ctx, pr.Number, msg, "renew the approvals on "+ShortHash(pr.HeadSHA)+" on the forge, or push "+ShortHash(run.r.Checkpoints.EnvPinned)+" back to "+rec.Head); err != nil {
				return StepResult{}, err
			}
		}
		return run.awaiting(res, msg), nil
	}
	if review.Approvals == ApprovalsFromBoth {
		if rule := run.env.Approvals.Rule(ApprovePromotion); rule.Required > 0 {
			approvals, err := d.Ledger.Approvals(ctx, ApprovePromotion, run.r.ID)
			if err != nil {
				return StepResult{}, fmt.Errorf("read approvals: %w", err)
			}
			// The signed approvals are of the commit the pull request
			// would merge: a moved head needs them renewed too.
			target := PromotionTarget(run.r)
			target.Commit = pr.HeadSHA
			captain, err := promotionCaptain(ctx, d.Verifier, run.env, rule, run.r)
			if errors.Is(err, ErrAuthorUnverified) {
				b := blocked(ErrAuthorUnverified, withoutSentinel(err, ErrAuthorUnverified), res.Findings)
				b.Evidence = res.Evidence
				return b, nil
			} else if err != nil {
				return StepResult{}, err
			}
			if check := rule.Count(target, captain, approvals, verifyWith(ctx, d.Verifier)); !check.Satisfied() {
				msg := fmt.Sprintf("%s is approved on the forge; it also needs %d more signed relcap approval(s) of commit %s (envrepo.review.approvals: both): relcap approve --release %s%s",
					ref, check.Missing(), ShortHash(pr.HeadSHA), run.r.ID, ignoredNote(check))
				b := blocked(ErrApprovalRequired, msg, res.Findings)
				b.Evidence = res.Evidence
				return b, nil
			}
		}
	}
	if review.Merge == MergeByPerson {
		return run.awaiting(res, fmt.Sprintf("%s is approved (%s): waiting for a person to merge it on the forge (envrepo.review.merge: person)", ref, strings.Join(reviewers(verdicts), ", "))), nil
	}
	if !pr.Mergeable {
		why := pr.Blocker
		if why == "" {
			why = "the forge does not say why (required checks, conflicts or branch protection)"
		}
		return run.awaiting(res, fmt.Sprintf("%s is approved, but the forge does not let it merge yet: %s", ref, why)), nil
	}
	run.progress(StepPromotion, fmt.Sprintf("merging pull request #%d at %s on %s", pr.Number, ShortHash(pr.HeadSHA), forge.Where()))
	msg := fmt.Sprintf("%s\n\nReviewed-on: %s\nReviewed-by: %s\nRelcap-Release: %s\n", run.title(), ShortHash(pr.HeadSHA), strings.Join(reviewers(verdicts), ", "), run.r.ID)
	mc, err := wait(run, StepPromotion, func() (string, error) { return forge.Merge(ctx, pr.Number, pr.HeadSHA, msg) })
	if errors.Is(err, ErrForgeNotReady) {
		reason := strings.TrimPrefix(err.Error(), ErrForgeNotReady.Error()+": ")
		rec.NotReady, rec.NotReadyAt = reason, d.Clock.Now()
		if err := run.checkpoint(ctx, func(c *Checkpoints) { c.PullRequest = &rec }); err != nil {
			return StepResult{}, err
		}
		count := fmt.Sprintf("relcap counts %d of the %d approving review(s) it needs", got, required)
		if required == 0 {
			count = "relcap itself needs no review here"
		}
		return run.awaiting(res, fmt.Sprintf("the forge's branch protection does not let pull request #%d merge yet: %s (%s; %s)", pr.Number, reason, count, pr.URL)), nil
	}
	if errors.Is(err, ErrBlocked) {
		return run.prBlocked(ctx, res, rec, ErrBlocked, fmt.Sprintf("the forge refused to merge %s: %s", ref, strings.TrimPrefix(err.Error(), ErrBlocked.Error()+": ")),
			fmt.Sprintf("act on the forge's reason (branch protection, required checks, a moved head), then relcap resume %s", run.r.ID))
	}
	if err != nil {
		return StepResult{Findings: res.Findings}, fmt.Errorf("merge pull request #%d on %s: %w", pr.Number, forge.Where(), err)
	}
	pr.MergeCommit, pr.State = mc, PullRequestMerged
	return run.merged(ctx, res, rec, pr, true)
}

// title is the run's pull request title, for merge messages.
func (run *releaseRun) title() string {
	return PullRequestTitle(PromotionSummary{App: run.r.App, Env: run.r.Env, ReleaseID: run.r.ID, Kind: run.r.Kind, RollbackOf: run.r.RollbackOf, Digest: run.r.Checkpoints.Digest})
}

// merged lands a merged pull request: its merge commit is the revision
// Argo CD must sync.
func (run *releaseRun) merged(ctx context.Context, res StepResult, rec PullRequestRecord, pr PullRequest, byRelcap bool) (StepResult, error) {
	if pr.MergeCommit == "" {
		return StepResult{Findings: res.Findings}, fmt.Errorf("pull request #%d is merged but the forge names no merge commit; relcap resume %s reads it again", pr.Number, run.r.ID)
	}
	rec.State, rec.MergeCommit, rec.MergedBy, rec.ByRelcap = PullRequestMerged, pr.MergeCommit, pr.MergedBy, byRelcap
	if !byRelcap && pr.HeadSHA != "" && pr.HeadSHA != run.r.Checkpoints.EnvPinned {
		res.Findings = appendOnce(res.Findings, finding.Finding{Severity: finding.Warning, Code: "promotion.pr-merged-other-commit", Subject: pr.URL,
			Message:    fmt.Sprintf("pull request #%d was merged by hand at head %s, not %s, the commit relcap pinned", pr.Number, ShortHash(pr.HeadSHA), ShortHash(run.r.Checkpoints.EnvPinned)),
			NextAction: "check the merged change; convergence waits for its merge commit " + ShortHash(pr.MergeCommit)})
	}
	if err := run.checkpoint(ctx, func(c *Checkpoints) { c.PullRequest, c.EnvCommit = &rec, pr.MergeCommit }); err != nil {
		return StepResult{}, err
	}
	if err := run.svc.journal(ctx, PromotionPRMerged{Release: run.r.ID, Number: pr.Number, URL: rec.URL, Reviewed: pr.HeadSHA, MergeCommit: pr.MergeCommit,
		MergedBy: pr.MergedBy, ByRelcap: byRelcap, Reviewers: counted(rec.Reviews)}); err != nil {
		return StepResult{}, err
	}
	res.Evidence = append(res.Evidence,
		NewEvidence(pr.MergeCommit, PullRequestLanded{Number: pr.Number, URL: rec.URL, Reviewed: pr.HeadSHA, MergedBy: pr.MergedBy, ByRelcap: byRelcap, Reviewers: reviewers(rec.Reviews)}),
		NewEvidence(pr.MergeCommit, EnvLanded{Branch: run.env.EnvRepo.Branch, Pushed: true}))
	res.Status = Succeeded
	by := "merged by relcap"
	if !byRelcap {
		by = "merged on the forge"
		if pr.MergedBy != "" {
			by += " by " + pr.MergedBy
		}
	}
	res.Message = fmt.Sprintf("%s in %s, pull request #%d %s at %s", run.r.Checkpoints.Digest.Short(), run.env.Registry.Repository, pr.Number, by, ShortHash(pr.MergeCommit))
	return res, nil
}

// awaiting is the step waiting on the forge.
func (run *releaseRun) awaiting(res StepResult, msg string) StepResult {
	b := blocked(ErrAwaitingForge, msg, res.Findings)
	b.Evidence = res.Evidence
	return b
}

// prBlocked stops the promotion on what the pull request became, saying
// what to do next, and journals it.
func (run *releaseRun) prBlocked(ctx context.Context, res StepResult, rec PullRequestRecord, sentinel error, reason, next string) (StepResult, error) {
	if err := run.checkpoint(ctx, func(c *Checkpoints) { c.PullRequest = &rec }); err != nil {
		return StepResult{}, err
	}
	if err := run.journalPRBlocked(ctx, rec.Number, reason, next); err != nil {
		return StepResult{}, err
	}
	b := blocked(sentinel, reason+": "+next, res.Findings)
	b.Evidence = res.Evidence
	return b, nil
}

func (run *releaseRun) journalPRBlocked(ctx context.Context, number int, reason, next string) error {
	return run.svc.journal(ctx, PromotionPRBlocked{Release: run.r.ID, Number: number, Reason: reason, NextAction: next})
}

// verdictNote lists the reviews that did not count, for a message.
func verdictNote(vs []ReviewVerdict) string {
	var parts []string
	for _, v := range vs {
		if !v.Counted {
			parts = append(parts, reviewerName(v)+": "+v.Why)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (not counted: " + strings.Join(parts, "; ") + ")"
}

// hasApprovalOf reports whether someone approved commit.
func hasApprovalOf(vs []ReviewVerdict, commit string) bool {
	for _, v := range vs {
		if v.State == ReviewApproved && v.Commit == commit {
			return true
		}
	}
	return false
}

// appendOnce adds f unless a finding with its code is there already.
func appendOnce(fs []finding.Finding, f finding.Finding) []finding.Finding {
	for _, g := range fs {
		if g.Code == f.Code && g.Subject == f.Subject {
			return fs
		}
	}
	return append(fs, f)
}

// ForgeMoved reports whether the pull request a release waits on changed
// on the forge in a way that lets its promotion step move on: merged or
// closed, a new head, different reviews, or approved and now mergeable
// for relcap to merge. It reads the forge and changes nothing, so the
// cockpit can ask every ForgePollInterval and re-run the step (which
// journals) only when there is something to do. A release not waiting on
// a pull request has not moved.
func (s *Service) ForgeMoved(ctx context.Context, releaseID string) (bool, error) {
	r, err := s.d.Ledger.LoadRelease(ctx, releaseID)
	if err != nil {
		return false, err
	}
	rec := r.Checkpoints.PullRequest
	if rec == nil || r.Checkpoints.Landed() {
		return false, nil
	}
	env, err := s.d.Project.Env(r.Env)
	if err != nil {
		return false, err
	}
	forge, err := s.openForge(ctx, env.EnvRepo.Review)
	if err != nil {
		return false, err
	}
	pr, err := forge.PullRequest(ctx, rec.Number)
	if err != nil {
		return false, err
	}
	if pr.State != rec.State || pr.HeadSHA != rec.HeadSHA {
		return true, nil
	}
	reviews, err := forge.Reviews(ctx, pr.Number)
	if err != nil {
		return false, err
	}
	verdicts := CountForgeReviews(env, r.Captain, pr, reviews)
	if !slices.Equal(verdicts, rec.Reviews) {
		return true, nil
	}
	approved := len(counted(verdicts)) >= RequiredForgeReviews(env)
	if rec.NotReady != "" && s.d.Clock.Now().Sub(rec.NotReadyAt) < ForgeRetryInterval {
		return false, nil
	}
	return approved && pr.Mergeable && env.EnvRepo.Review.Merge != MergeByPerson, nil
}
