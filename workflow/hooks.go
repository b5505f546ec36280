package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/oplock"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// The hooks the features beside the core (workflow/audit, breakglass,
// landing, owners, rehearsal, sharedplan, unlock) take from it, in one place so
// that what the core exposes for them stays explicit and few. Each
// section says which feature it serves and why the core keeps it.

// Deps are the ports this Service was wired with, for a feature package
// that acts through the same adapters, ledger, journal and clock as the
// core it works beside (breakglass.New(svc.Deps())).
func (s *Service) Deps() Deps { return s.d }

// Journal appends rec to this session's journal.
func (s *Service) Journal(ctx context.Context, rec journal.Record) error { return s.journal(ctx, rec) }

// ToolOutput is ctx for one operation of a feature outside a release run
// (relcap unlock, workflow/unlock): what tools print goes to
// Deps.ToolOutput as it comes, masked, and done journals it as step's
// output, joined to the operation's error.
func (s *Service) ToolOutput(ctx context.Context, step StepKind) (context.Context, func(error) error) {
	return s.withToolOutput(ctx, "", step)
}

// JournalFailure returns cause joined with any failure to journal rec, its
// record, so a lost record is never silent.
func (s *Service) JournalFailure(ctx context.Context, cause error, rec journal.Record) error {
	return s.journalFailure(ctx, cause, rec)
}

// ReadOwnership reads env's ownership sources for a check outside a
// release (workflow/owners): Argo CD is asked whenever there is one.
func (s *Service) ReadOwnership(ctx context.Context, env Environment) (ownership.Sources, error) {
	if len(s.d.Ownership) == 0 {
		return ownership.Sources{}, missingPort("ownership source")
	}
	return s.readOwnership(ctx, env, clusterAlways, func(f func() ([]ownership.ManagedObject, error)) ([]ownership.ManagedObject, error) { return f() })
}

// OwnershipScope is where an environment's ownership findings are kept.
func OwnershipScope(env string) string { return ownershipScope(env) }

// MissingPort is the error of a query whose adapter name is not wired
// for this command: terminal, since retrying cannot help.
func MissingPort(name string) error { return missingPort(name) }

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
	Moved(ctx context.Context, r *Release, env Environment, forge forge.Forge, now time.Time) (bool, error)
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
func (l *Landing) Journal(ctx context.Context, rec journal.Record) error {
	return l.run.svc.journal(ctx, rec)
}

// Progress tells the UIs what the promotion step is doing now.
func (l *Landing) Progress(msg string) { l.run.progress(StepPromotion, msg) }

// OpenForge opens the forge of the environment's review, with everything
// sent to it masked.
func (l *Landing) OpenForge(ctx context.Context) (forge.Forge, error) {
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
// approvals.promotion, as the push path counts them. An error wrapping
// ErrAuthorUnverified says the rule needs a verified captain and no
// signature proves one.
func (l *Landing) PromotionApprovals(ctx context.Context, commit string) (approval.Check, error) {
	return l.run.promotionApprovals(ctx, commit)
}

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

// openForge opens the forge of r with everything relcap sends it masked:
// a pull request's title and body (a break-glass reason, captured live
// state, evidence) and a merge's message are text that leaves relcap for
// people and systems it does not control, so they pass through the
// process's secrets like everything relcap prints. The one place forges
// are opened from.
func (s *Service) openForge(ctx context.Context, r forge.EnvRepoReview) (forge.Forge, error) {
	if s.d.Forges == nil {
		return nil, missingPort("forge")
	}
	f, err := s.d.Forges.OpenForge(ctx, r)
	if err != nil {
		return nil, err
	}
	return maskingForge{Forge: f, secrets: s.d.Secrets}, nil
}

// maskingForge masks the process's secrets in what it sends to a forge.
type maskingForge struct {
	forge.Forge
	secrets *secret.Set
}

func (m maskingForge) OpenPullRequest(ctx context.Context, req forge.OpenPullRequestRequest) (forge.PullRequest, error) {
	req.Title, req.Body = m.secrets.Scrub(req.Title), m.secrets.Scrub(req.Body)
	return m.Forge.OpenPullRequest(ctx, req)
}

func (m maskingForge) Merge(ctx context.Context, number int, headSHA, message string) (string, error) {
	return m.Forge.Merge(ctx, number, headSHA, m.secrets.Scrub(message))
}

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

// pinnedDigest is the digest of an unavailable-image drill's Image (ref),
// taken as it is.
func (h PromotionHook) pinnedDigest(ref string) (image.Digest, string, error) {
	at := strings.LastIndexByte(ref, '@')
	if at < 0 {
		return image.Digest{}, "", fmt.Errorf("rehearsal %s: %s is not a digest reference", h.Rehearsal, ref)
	}
	d, err := image.ParseDigest(ref[at+1:])
	if err != nil {
		return image.Digest{}, "", fmt.Errorf("rehearsal %s: %s is not a digest reference", h.Rehearsal, ref)
	}
	return d, ref[:at], nil
}

// skipCopy checkpoints the copy of an unavailable-image drill's digest as
// done without copying it: there are no bytes to copy, and pinning them
// anyway is the drill. Any other release is left to the copy.
func (run *releaseRun) skipCopy(ctx context.Context, digest image.Digest, res *StepResult) error {
	h := run.r.Checkpoints.PromotionHook
	if run.r.Checkpoints.CopiedTo != "" || !h.Unavailable {
		return nil
	}
	run.progress(StepPromotion, fmt.Sprintf("rehearsal %s: not copying %s, which exists in no registry on purpose", h.Rehearsal, digest.Short()))
	res.Evidence = append(res.Evidence, evidence.New(digest.String(), evidence.DrillCopySkipped{Rehearsal: h.Rehearsal, Repository: run.env.Registry.Repository}))
	return run.checkpoint(ctx, func(c *Checkpoints) { c.CopiedTo = run.env.Registry.Repository })
}

// LockPromotion takes env's promotion lock for what, as a promotion
// holds it from the copy to the landing: refused at once, naming its
// holder, while another captain holds it.
func (s *Service) LockPromotion(ctx context.Context, env Environment, what string) (unlock func(), err error) {
	return s.lockOperation(ctx, oplock.Scope{Kind: oplock.Promote, Key: PromotionBoundary(s.d.Project, env)}, "", what)
}

// PlanRoot plans env's Terraform root (an environment's, or a drill's
// scratch copy of one) and keeps the plan as every plan relcap makes is
// kept: drift reviewed, signed, saved and journaled, with what Terraform
// printed going where ToolOutput sends it.
func (s *Service) PlanRoot(ctx context.Context, env Environment) (tfplan.Summary, error) {
	if s.d.Planner == nil {
		return tfplan.Summary{}, missingPort("terraform planner")
	}
	tctx, done := s.withToolOutput(ctx, "", StepPlanReview)
	facts, err := s.d.Planner.Plan(tctx, env, s.d.Actor)
	if err = done(err); err != nil {
		return tfplan.Summary{}, err
	}
	return s.keepPlan(ctx, env, facts, "", nil)
}

// NextAfterFailedApply is the next safe action relcap shows after a
// failed apply in env.
func (s *Service) NextAfterFailedApply(ctx context.Context, env Environment) string {
	return s.nextAfterFailedApply(ctx, env)
}

// RevOrNone names a revision, or says there is none.
func RevOrNone(rev string) string { return revOrNone(rev) }

// Answer is one of the four answers a recovery drill records (intended
// revision, actual artifact, controller status, next safe action): its
// value and the exact line relcap showed the captain, as the journal's
// rehearsal.detected record keeps them.
type Answer struct {
	Value string `json:"value"`
	Shown string `json:"shown"`
}

// The hooks of break-glass (workflow/breakglass), and what the core
// itself keeps of it: its release kind (KindBreakGlass, BreakGlassPause)
// and its approval (ApproveBreakGlass). Its journal records are its own
// (breakglass/records.go).

// VerifyWith is the approval verifier over v (nil without a people file),
// as every approval count of the core uses it.
func VerifyWith(ctx context.Context, v SignatureVerifier) approval.VerifyFunc {
	return verifyWith(ctx, v)
}

// MaxBreakGlassTTL bounds how long reconciliation may stay paused; an
// approval of a break-glass (ApproveBreakGlass) is for at most as long.
const MaxBreakGlassTTL = 24 * time.Hour

// BreakGlassSubject is what a break-glass approval in env is of: the
// environment and its application, e.g. "prod/web-prod".
func BreakGlassSubject(env Environment) string { return env.Name + "/" + env.ArgoCD.App }

// The hook of shared plans (workflow/sharedplan): the plan and apply steps
// ask it, where plans are shared, and the core keeps nothing else of it.

// PlanSharing keeps a saved plan beyond this machine, through the team
// store (workflow/sharedplan over the PlanVault port): the plan step
// shares each new plan, the apply step and ApplyPlan ask which file to
// apply and forget the shared copy once applied. nil keeps plans on this
// machine: nothing is shared and the ledger's plan file is applied.
type PlanSharing interface {
	// Share shares a newly saved plan of env with who may apply it and
	// journals it; progress hears what it did.
	Share(ctx context.Context, env Environment, p tfplan.Summary, progress func(string)) error
	// FileToApply is the plan file this machine applies, fetched from
	// the team store when this machine lacks it; an expired or
	// undecryptable plan is refused before Terraform runs.
	FileToApply(ctx context.Context, env Environment, p tfplan.Summary) (string, error)
	// Forget deletes the team store's copy of an applied plan.
	Forget(ctx context.Context, fingerprint string) error
}

// sharePlan shares a newly saved plan, where plans are shared.
func (s *Service) sharePlan(ctx context.Context, env Environment, p tfplan.Summary, progress func(string)) error {
	if s.d.SharedPlans == nil {
		return nil
	}
	return s.d.SharedPlans.Share(ctx, env, p, progress)
}

// planFileToApply is the plan file this machine applies: the ledger's
// path where plans are not shared.
func (s *Service) planFileToApply(ctx context.Context, env Environment, p tfplan.Summary) (string, error) {
	if s.d.SharedPlans == nil {
		return p.PlanFile, nil
	}
	return s.d.SharedPlans.FileToApply(ctx, env, p)
}

// forgetSharedPlan deletes the shared copy of an applied plan, where plans
// are shared.
func (s *Service) forgetSharedPlan(ctx context.Context, fp string) error {
	if s.d.SharedPlans == nil {
		return nil
	}
	return s.d.SharedPlans.Forget(ctx, fp)
}

// The hooks journal verification (workflow/audit) needs of the core: how
// a recorded approval's signature is checked. The core itself never verifies journals nor seals heads: relcap
// seals a session's head after the Service is done with it.

// VerifyApproval checks a's signature with v at a.SignatureTime(), as
// counting approvals does, against the people file v reads now.
func VerifyApproval(ctx context.Context, v SignatureVerifier, a approval.Approval) error {
	if v == nil {
		return errors.New("workflow: verifying an approval needs a signature verifier")
	}
	return verifyWith(ctx, v)(a, a.SignatureTime())
}
