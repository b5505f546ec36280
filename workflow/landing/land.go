// Package landing lands a promotion's pinned change through a pull
// request on the team's forge (envrepo.review.via: pull_request). It is
// the core's workflow.Lander, wired by the command.
//
// The step never waits on the forge itself: each run reads the pull
// request and its reviews once and either lands the change or returns
// Blocked with ErrAwaitingForge ("waiting for review", "waiting for a
// merge"). A review on the forge changes nothing relcap can watch, so the
// cockpit re-runs the step every ForgePollInterval while it waits
// (Service.ForgeMoved, which asks Moved), and headless promotions stop
// (exit 3) with the pull request's address for `relcap resume` to
// re-check later. Every run is idempotent: the pull request is opened once
// per branch, and a merge made by hand is picked up.
package landing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/forge"
)

// PullRequests is the workflow.Lander that lands changes through the
// forge's pull requests.
type PullRequests struct{}

var _ workflow.Lander = PullRequests{}

// landingRun is one Land call: the core's promotion step and what it lands.
type landingRun struct {
	l   *workflow.Landing
	r   *workflow.Release // the live release: checkpoints change it
	env workflow.Environment
}

// Land is the landing of a pinned change through the forge: open the pull
// request once, count its reviews, merge it (or wait for a person to), and
// take the merge commit as EnvCommit.
func (PullRequests) Land(ctx context.Context, l *workflow.Landing, res workflow.StepResult) (workflow.StepResult, error) {
	run := landingRun{l: l, r: l.Release(), env: l.Env()}
	review := run.env.EnvRepo.Review
	c := run.r.Checkpoints
	if c.EnvBranch == run.env.EnvRepo.Branch {
		// The environment branch pins the digest already (Pin committed
		// nothing): there is no change to review, and its tip is the
		// revision Argo CD must sync.
		if err := l.Checkpoint(ctx, func(c *workflow.Checkpoints) { c.EnvCommit = c.EnvPinned }); err != nil {
			return workflow.StepResult{}, err
		}
		res.Evidence = append(res.Evidence, evidence.New(c.EnvPinned, evidence.EnvLanded{Branch: c.EnvBranch, Pushed: true}))
		res.Status = workflow.Succeeded
		res.Message = fmt.Sprintf("%s is pinned on %s already at %s: no pull request needed", c.Digest.Short(), c.EnvBranch, workflow.ShortHash(c.EnvPinned))
		return res, nil
	}
	fg, err := l.OpenForge(ctx)
	if err != nil {
		return workflow.StepResult{}, fmt.Errorf("open the forge for %s (envrepo.review): %w", run.env.Name, err)
	}
	var pr forge.PullRequest
	if c.PullRequest == nil {
		sum, err := promotionSummary(ctx, l)
		if err != nil {
			return workflow.StepResult{}, err
		}
		l.Progress("opening a pull request of " + c.EnvBranch + " into " + run.env.EnvRepo.Branch + " on " + fg.Where())
		pr, err = workflow.MachineWait(l, func() (forge.PullRequest, error) {
			return fg.OpenPullRequest(ctx, forge.OpenPullRequestRequest{Head: c.EnvBranch, Base: run.env.EnvRepo.Branch, Title: PullRequestTitle(sum), Body: PullRequestBody(sum)})
		})
		if err != nil {
			return workflow.StepResult{Findings: res.Findings}, fmt.Errorf("open a pull request of %s on %s: %w", c.EnvBranch, fg.Where(), err)
		}
		rec := &forge.PullRequestRecord{Forge: review.Forge, Number: pr.Number, URL: pr.URL, Head: c.EnvBranch, Base: run.env.EnvRepo.Branch, HeadSHA: pr.HeadSHA, State: pr.State}
		if err := l.Checkpoint(ctx, func(c *workflow.Checkpoints) { c.PullRequest = rec }); err != nil {
			return workflow.StepResult{}, err
		}
		if err := l.Journal(ctx, PromotionPROpened{Release: run.r.ID, Env: run.env.Name, Forge: review.Forge, Number: pr.Number, URL: pr.URL,
			Head: c.EnvBranch, Base: run.env.EnvRepo.Branch, Commit: c.EnvPinned}); err != nil {
			return workflow.StepResult{}, err
		}
		res.Evidence = append(res.Evidence, evidence.New(pr.URL, evidence.PullRequestOpened{Number: pr.Number, Forge: review.Forge, Head: c.EnvBranch, Base: run.env.EnvRepo.Branch, Commit: c.EnvPinned}))
	} else {
		pr, err = workflow.MachineWait(l, func() (forge.PullRequest, error) { return fg.PullRequest(ctx, c.PullRequest.Number) })
		if err != nil {
			return workflow.StepResult{Findings: res.Findings}, fmt.Errorf("read pull request #%d on %s: %w", c.PullRequest.Number, fg.Where(), err)
		}
	}
	rec := *run.r.Checkpoints.PullRequest
	rec.HeadSHA, rec.State = pr.HeadSHA, pr.State
	ref := fmt.Sprintf("pull request #%d (%s)", pr.Number, pr.URL)

	if pr.State == forge.PullRequestMerged {
		// Merged on the forge: who reviewed it is read now, for the
		// ledger and journal, as the step did not see the last reviews.
		if reviews, err := fg.Reviews(ctx, pr.Number); err == nil {
			rec.Reviews = CountForgeReviews(run.env, run.r.Captain, pr, reviews)
		}
		return run.merged(ctx, res, rec, pr, false)
	}
	if pr.State == forge.PullRequestClosed {
		return run.prBlocked(ctx, res, rec, fault.ErrBlocked, fmt.Sprintf("%s was closed without merge", ref),
			fmt.Sprintf("reopen pull request #%d on the forge and run relcap resume %s, or roll back / start a new release", pr.Number, run.r.ID))
	}

	reviews, err := workflow.MachineWait(l, func() ([]forge.Review, error) { return fg.Reviews(ctx, pr.Number) })
	if err != nil {
		return workflow.StepResult{Findings: res.Findings}, fmt.Errorf("read the reviews of pull request #%d on %s: %w", pr.Number, fg.Where(), err)
	}
	verdicts := CountForgeReviews(run.env, run.r.Captain, pr, reviews)
	required := RequiredForgeReviews(run.env)
	got := len(counted(verdicts))
	if !slices.Equal(verdicts, run.r.Checkpoints.PullRequest.Reviews) || rec.HeadSHA != run.r.Checkpoints.PullRequest.HeadSHA {
		rec.Reviews = verdicts
		if err := l.Checkpoint(ctx, func(c *workflow.Checkpoints) { c.PullRequest = &rec }); err != nil {
			return workflow.StepResult{}, err
		}
		if len(verdicts) > 0 {
			if err := l.Journal(ctx, PromotionPRReviewed{Release: run.r.ID, Number: pr.Number, Commit: pr.HeadSHA, Reviews: verdicts, Counted: got, Required: required}); err != nil {
				return workflow.StepResult{}, err
			}
		}
	}
	rec.Reviews = verdicts
	pinned := run.r.Checkpoints.EnvPinned
	moved := pr.HeadSHA != pinned
	if moved {
		res.Findings = appendOnce(res.Findings, finding.Finding{Severity: finding.Warning, Code: "promotion.pr-head-moved", Subject: pr.URL,
			Message:    fmt.Sprintf("pull request #%d's head moved from %s, the commit relcap pinned, to %s", pr.Number, workflow.ShortHash(pinned), workflow.ShortHash(pr.HeadSHA)),
			NextAction: "check what was pushed to " + rec.Head + "; approvals must be renewed on the new commit"})
	}
	if got < required {
		msg := fmt.Sprintf("%s waits for %d more approving review(s) of commit %s on the forge (%d/%d)%s", ref, required-got, workflow.ShortHash(pr.HeadSHA), got, required, verdictNote(verdicts))
		if moved && hasApprovalOf(verdicts, pinned) {
			msg = fmt.Sprintf("%s was approved on commit %s, but its head moved to %s after approval: not merged; the approvals must be renewed on the new commit %s on the forge (%d/%d)%s",
				ref, workflow.ShortHash(pinned), workflow.ShortHash(pr.HeadSHA), workflow.ShortHash(pr.HeadSHA), got, required, verdictNote(verdicts))
			if err := run.journalPRBlocked(ctx, pr.Number, msg, "renew the approvals on "+workflow.ShortHash(pr.HeadSHA)+" on the forge, or push "+workflow.ShortHash(pinned)+" back to "+rec.Head); err != nil {
				return workflow.StepResult{}, err
			}
		}
		return awaiting(res, msg), nil
	}
	if review.Approvals == forge.ApprovalsFromBoth {
		if rule := run.env.Approvals.Rule(approval.Promotion); rule.Required > 0 {
			// The signed approvals are of the commit the pull request
			// would merge: a moved head needs them renewed too.
			check, err := l.PromotionApprovals(ctx, pr.HeadSHA)
			if errors.Is(err, workflow.ErrAuthorUnverified) {
				b := workflow.BlockedResult(workflow.ErrAuthorUnverified, workflow.MessageWithout(err, workflow.ErrAuthorUnverified), res.Findings)
				b.Evidence = res.Evidence
				return b, nil
			} else if err != nil {
				return workflow.StepResult{}, err
			}
			if !check.Satisfied() {
				msg := fmt.Sprintf("%s is approved on the forge; it also needs %d more signed relcap approval(s) of commit %s (envrepo.review.approvals: both): relcap approve --release %s%s",
					ref, check.Missing(), workflow.ShortHash(pr.HeadSHA), run.r.ID, check.NotCountedNote())
				b := workflow.BlockedResult(fault.ErrApprovalRequired, msg, res.Findings)
				b.Evidence = res.Evidence
				return b, nil
			}
		}
	}
	if review.Merge == forge.MergeByPerson {
		return awaiting(res, fmt.Sprintf("%s is approved (%s): waiting for a person to merge it on the forge (envrepo.review.merge: person)", ref, strings.Join(reviewers(verdicts), ", "))), nil
	}
	if !pr.Mergeable {
		why := pr.Blocker
		if why == "" {
			why = "the forge does not say why (required checks, conflicts or branch protection)"
		}
		return awaiting(res, fmt.Sprintf("%s is approved, but the forge does not let it merge yet: %s", ref, why)), nil
	}
	l.Progress(fmt.Sprintf("merging pull request #%d at %s on %s", pr.Number, workflow.ShortHash(pr.HeadSHA), fg.Where()))
	msg := fmt.Sprintf("%s\n\nReviewed-on: %s\nReviewed-by: %s\nRelcap-Release: %s\n", run.title(), workflow.ShortHash(pr.HeadSHA), strings.Join(reviewers(verdicts), ", "), run.r.ID)
	mc, err := workflow.MachineWait(l, func() (string, error) { return fg.Merge(ctx, pr.Number, pr.HeadSHA, msg) })
	if errors.Is(err, fault.ErrForgeNotReady) {
		reason := strings.TrimPrefix(err.Error(), fault.ErrForgeNotReady.Error()+": ")
		rec.NotReady, rec.NotReadyAt = reason, l.Now()
		if err := l.Checkpoint(ctx, func(c *workflow.Checkpoints) { c.PullRequest = &rec }); err != nil {
			return workflow.StepResult{}, err
		}
		count := fmt.Sprintf("relcap counts %d of the %d approving review(s) it needs", got, required)
		if required == 0 {
			count = "relcap itself needs no review here"
		}
		return awaiting(res, fmt.Sprintf("the forge's branch protection does not let pull request #%d merge yet: %s (%s; %s)", pr.Number, reason, count, pr.URL)), nil
	}
	if errors.Is(err, fault.ErrBlocked) {
		return run.prBlocked(ctx, res, rec, fault.ErrBlocked, fmt.Sprintf("the forge refused to merge %s: %s", ref, strings.TrimPrefix(err.Error(), fault.ErrBlocked.Error()+": ")),
			fmt.Sprintf("act on the forge's reason (branch protection, required checks, a moved head), then relcap resume %s", run.r.ID))
	}
	if err != nil {
		return workflow.StepResult{Findings: res.Findings}, fmt.Errorf("merge pull request #%d on %s: %w", pr.Number, fg.Where(), err)
	}
	pr.MergeCommit, pr.State = mc, forge.PullRequestMerged
	return run.merged(ctx, res, rec, pr, true)
}

// title is the run's pull request title, for merge messages.
func (run landingRun) title() string {
	r := run.r
	return PullRequestTitle(PromotionSummary{App: r.App, Env: r.Env, ReleaseID: r.ID, Kind: r.Kind, RollbackOf: r.RollbackOf, Digest: r.Checkpoints.Digest})
}

// merged lands a merged pull request: its merge commit is the revision
// Argo CD must sync.
func (run landingRun) merged(ctx context.Context, res workflow.StepResult, rec forge.PullRequestRecord, pr forge.PullRequest, byRelcap bool) (workflow.StepResult, error) {
	if pr.MergeCommit == "" {
		return workflow.StepResult{Findings: res.Findings}, fmt.Errorf("pull request #%d is merged but the forge names no merge commit; relcap resume %s reads it again", pr.Number, run.r.ID)
	}
	rec.State, rec.MergeCommit, rec.MergedBy, rec.ByRelcap = forge.PullRequestMerged, pr.MergeCommit, pr.MergedBy, byRelcap
	if pinned := run.r.Checkpoints.EnvPinned; !byRelcap && pr.HeadSHA != "" && pr.HeadSHA != pinned {
		res.Findings = appendOnce(res.Findings, finding.Finding{Severity: finding.Warning, Code: "promotion.pr-merged-other-commit", Subject: pr.URL,
			Message:    fmt.Sprintf("pull request #%d was merged by hand at head %s, not %s, the commit relcap pinned", pr.Number, workflow.ShortHash(pr.HeadSHA), workflow.ShortHash(pinned)),
			NextAction: "check the merged change; convergence waits for its merge commit " + workflow.ShortHash(pr.MergeCommit)})
	}
	if err := run.l.Checkpoint(ctx, func(c *workflow.Checkpoints) { c.PullRequest, c.EnvCommit = &rec, pr.MergeCommit }); err != nil {
		return workflow.StepResult{}, err
	}
	if err := run.l.Journal(ctx, PromotionPRMerged{Release: run.r.ID, Number: pr.Number, URL: rec.URL, Reviewed: pr.HeadSHA, MergeCommit: pr.MergeCommit,
		MergedBy: pr.MergedBy, ByRelcap: byRelcap, Reviewers: counted(rec.Reviews)}); err != nil {
		return workflow.StepResult{}, err
	}
	res.Evidence = append(res.Evidence,
		evidence.New(pr.MergeCommit, evidence.PullRequestLanded{Number: pr.Number, URL: rec.URL, Reviewed: pr.HeadSHA, MergedBy: pr.MergedBy, ByRelcap: byRelcap, Reviewers: reviewers(rec.Reviews)}),
		evidence.New(pr.MergeCommit, evidence.EnvLanded{Branch: run.env.EnvRepo.Branch, Pushed: true}))
	res.Status = workflow.Succeeded
	by := "merged by relcap"
	if !byRelcap {
		by = "merged on the forge"
		if pr.MergedBy != "" {
			by += " by " + pr.MergedBy
		}
	}
	res.Message = fmt.Sprintf("%s in %s, pull request #%d %s at %s", run.r.Checkpoints.Digest.Short(), run.env.Registry.Repository, pr.Number, by, workflow.ShortHash(pr.MergeCommit))
	return res, nil
}

// awaiting is the step waiting on the forge.
func awaiting(res workflow.StepResult, msg string) workflow.StepResult {
	b := workflow.BlockedResult(fault.ErrAwaitingForge, msg, res.Findings)
	b.Evidence = res.Evidence
	return b
}

// prBlocked stops the promotion on what the pull request became, saying
// what to do next, and journals it.
func (run landingRun) prBlocked(ctx context.Context, res workflow.StepResult, rec forge.PullRequestRecord, sentinel error, reason, next string) (workflow.StepResult, error) {
	if err := run.l.Checkpoint(ctx, func(c *workflow.Checkpoints) { c.PullRequest = &rec }); err != nil {
		return workflow.StepResult{}, err
	}
	if err := run.journalPRBlocked(ctx, rec.Number, reason, next); err != nil {
		return workflow.StepResult{}, err
	}
	b := workflow.BlockedResult(sentinel, reason+": "+next, res.Findings)
	b.Evidence = res.Evidence
	return b, nil
}

func (run landingRun) journalPRBlocked(ctx context.Context, number int, reason, next string) error {
	return run.l.Journal(ctx, PromotionPRBlocked{Release: run.r.ID, Number: number, Reason: reason, NextAction: next})
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
