package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/relcap/relcap/workflow/finding"
)

// The hooks of pull-request landing (workflow/landing): the promotion step
// pins a change, and where the environment's changes are reviewed on a
// forge (envrepo.review.via: pull_request) it hands the change to the
// Lander, whose result is the step's. The core keeps what every landing
// shares (checkpoints, the journal, machine-wait timing, signed approvals)
// and the Lander decides what a pull request's state means.

// Lander lands a pinned environment-repository change through a review
// outside relcap, a pull request on the team's forge.
type Lander interface {
	// Land lands l's pinned change, or returns Blocked with
	// ErrAwaitingForge while the forge's review goes on. res is what the
	// step established before (its evidence and findings), which the
	// result carries on. Every call is idempotent: it resumes from the
	// release's checkpoints.
	Land(ctx context.Context, l *Landing, res StepResult) (StepResult, error)
	// Moved reports whether the pull request r waits on changed on forge
	// in a way that gives its promotion step something to do. It reads
	// and changes nothing; now is the Service's clock.
	Moved(ctx context.Context, r *Release, env Environment, forge Forge, now time.Time) (bool, error)
}

// Landing is the promotion step of one release as its Lander sees it.
type Landing struct{ run *releaseRun }

// Release is the release as it stands; it changes through Checkpoint
// only.
func (l *Landing) Release() *Release { return l.run.r }

// Env is the environment the release promotes to.
func (l *Landing) Env() Environment { return l.run.env }

// Now is the Service's clock.
func (l *Landing) Now() time.Time { return l.run.svc.d.Clock.Now() }

// Checkpoint records a side effect as done, durably, before anything else
// happens.
func (l *Landing) Checkpoint(ctx context.Context, set func(*Checkpoints)) error {
	return l.run.checkpoint(ctx, set)
}

// Journal appends rec to the session's journal.
func (l *Landing) Journal(ctx context.Context, rec JournalRecord) error {
	return l.run.svc.journal(ctx, rec)
}

// Progress tells the UIs what the promotion step is doing now.
func (l *Landing) Progress(msg string) { l.run.progress(StepPromotion, msg) }

// OpenForge opens the forge of the environment's review, with everything
// sent to it masked.
func (l *Landing) OpenForge(ctx context.Context) (Forge, error) {
	return l.run.svc.openForge(ctx, l.run.env.EnvRepo.Review)
}

// MachineWait times f, work the forge does, as machine wait on the
// promotion step.
func MachineWait[T any](l *Landing, f func() (T, error)) (T, error) {
	return wait(l.run, StepPromotion, f)
}

// Upstream is the previous environment (empty for the first one and for a
// rollback, which restores bytes that already converged here) and its
// convergence of the release's digest, nil when none is on record.
func (l *Landing) Upstream(ctx context.Context) (string, *ConvergenceRecord, error) {
	r, d := l.run.r, l.run.svc.d
	prev, ok := d.Project.Previous(r.Env)
	if !ok || r.Kind == KindRollback {
		return "", nil, nil
	}
	rs, err := d.Ledger.ListReleases(ctx, ReleaseFilter{App: r.App, Env: prev.Name})
	if err != nil {
		return prev.Name, nil, fmt.Errorf("read %s's releases: %w", prev.Name, err)
	}
	digest := r.Checkpoints.Digest
	for _, u := range rs {
		if u.Checkpoints.Digest == digest && u.Checkpoints.Converged() {
			return prev.Name, &ConvergenceRecord{ReleaseID: u.ID, App: u.App, Env: u.Env, Digest: digest, Revision: u.Checkpoints.EnvCommit, At: u.Checkpoints.ConvergedAt}, nil
		}
	}
	return prev.Name, nil, nil
}

// PromotionApprovals counts the signed relcap approvals of the promotion
// as of commit (the one a pull request would merge) against
// approvals.promotion. An error wrapping ErrAuthorUnverified says the rule
// needs a verified captain and no signature proves one.
func (l *Landing) PromotionApprovals(ctx context.Context, commit string) (ApprovalCheck, error) {
	run, d := l.run, l.run.svc.d
	rule := run.env.Approvals.Rule(ApprovePromotion)
	approvals, err := d.Ledger.Approvals(ctx, ApprovePromotion, run.r.ID)
	if err != nil {
		return ApprovalCheck{}, fmt.Errorf("read approvals: %w", err)
	}
	target := PromotionTarget(run.r)
	target.Commit = commit
	captain, err := promotionCaptain(ctx, d.Verifier, run.env, rule, run.r)
	if err != nil {
		return ApprovalCheck{}, err
	}
	return rule.Count(target, captain, approvals, verifyWith(ctx, d.Verifier)), nil
}

// NotCountedNote says, for a refusal's message, which approvals did not
// count and why; "" when none were ignored.
func (c ApprovalCheck) NotCountedNote() string { return ignoredNote(c) }

// BlockedResult is a Blocked step result saying msg, whose Err wraps
// sentinel.
func BlockedResult(sentinel error, msg string, findings []finding.Finding) StepResult {
	return blocked(sentinel, msg, findings)
}

// MessageWithout is err's message without sentinel's text in front, for a
// blocked result that names the sentinel itself.
func MessageWithout(err, sentinel error) string { return withoutSentinel(err, sentinel) }

// landByReview hands the pinned change to the Lander.
func (run *releaseRun) landByReview(ctx context.Context, res StepResult) (StepResult, error) {
	if run.svc.d.Lander == nil {
		return StepResult{}, missingPort("pull-request landing")
	}
	return run.svc.d.Lander.Land(ctx, &Landing{run: run}, res)
}

// ForgeMoved reports whether the pull request a release waits on changed
// on the forge in a way that lets its promotion step move on (the
// Lander's Moved). It reads the forge and changes nothing, so the cockpit
// can ask every ForgePollInterval and re-run the step (which journals)
// only when there is something to do. A release not waiting on a pull
// request has not moved.
func (s *Service) ForgeMoved(ctx context.Context, releaseID string) (bool, error) {
	r, err := s.d.Ledger.LoadRelease(ctx, releaseID)
	if err != nil {
		return false, err
	}
	if r.Checkpoints.PullRequest == nil || r.Checkpoints.Landed() {
		return false, nil
	}
	if s.d.Lander == nil {
		return false, missingPort("pull-request landing")
	}
	env, err := s.d.Project.Env(r.Env)
	if err != nil {
		return false, err
	}
	forge, err := s.openForge(ctx, env.EnvRepo.Review)
	if err != nil {
		return false, err
	}
	return s.d.Lander.Moved(ctx, r, env, forge, s.d.Clock.Now())
}
