package workflow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/oplock"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// Deps are the ports a Service drives. Ledger, Journal and Clock are always
// needed; the stage ports are needed by the steps that use them, and a
// missing one fails that step with a clear message rather than at start-up,
// so commands that use one stage can run with only its adapter wired.
type Deps struct {
	Project   *Project
	Ledger    Ledger
	Journal   Journal
	Clock     Clock
	Ownership []OwnershipSource
	Desired   DesiredSource // the ownership check without Argo CD; nil leaves it to the live one
	Planner   Planner
	Applier   Applier
	// Custody reads where each environment's state lives, for the custody
	// check at plan time (workflow/custody); nil leaves it unchecked.
	Custody     custody.Reader
	Registry    Registry
	EnvRepo     EnvRepo
	Convergence Convergence
	// Forges opens the forge of an environment whose changes go through
	// pull requests (envrepo.review.via: pull_request); nil where none
	// does.
	Forges forge.Opener
	// Lander lands a promotion's pinned change through the forge's pull
	// request (workflow/landing); nil where no environment's does.
	Lander Lander
	// PlanVault shares saved plans through the team store; nil (SQLite)
	// keeps them on this machine alone.
	PlanVault PlanVault
	// SharedPlans shares saved plans through PlanVault
	// (workflow/sharedplan); nil keeps them on this machine alone.
	SharedPlans PlanSharing
	// ToolOutput receives what tools print (Terraform's progress) during
	// operations outside a release run, line by line; nil discards it
	// (it is journaled either way). Release runs send it as events.
	ToolOutput io.Writer
	// Secrets are the secrets this process knows, masked in tool output
	// and everything the Service reports; adapters add what they learn.
	// nil masks nothing.
	Secrets *secret.Set
	// Signer signs the actor's approvals with their own key; Verifier checks signatures against the people file. Both are
	// nil where the project names no people file.
	Signer   Signer
	Verifier SignatureVerifier
	// Actor is the person running this process (--actor or $USER).
	Actor string
	// ConvergeTimeout bounds the convergence watch; 0 means 10 minutes.
	ConvergeTimeout time.Duration
	// Wait are the timings of the convergence watch; zero means
	// DefaultWaitOptions.
	Wait WaitOptions
}

// Service runs releases step by step. It persists the release after every
// step and at every checkpoint inside a step, so a process killed at any
// point resumes without repeating a completed side effect. Its read-only
// queries are Records' (Service.Records), kept apart so the Service's own
// methods are the release's actions.
type Service struct {
	records *Records
	d       Deps

	mu      sync.Mutex
	tracker *effort.Tracker       // the UIs' effort clocks
	linked  map[string]bool       // releases this session's journal links
	held    map[oplock.Scope]bool // operation locks this Service holds
	subs    map[int]chan Event
	nextID  int
}

// Records are the Service's read-only queries over its ledger.
func (s *Service) Records() *Records { return s.records }

// NewService checks the always-needed ports.
func NewService(d Deps) (*Service, error) {
	switch {
	case d.Journal == nil:
		return nil, errors.New("workflow: no journal")
	case d.Actor == "":
		return nil, fmt.Errorf("%w: no actor: pass --actor or set $USER", fault.ErrUsage)
	}
	rec, err := NewRecords(d)
	if err != nil {
		return nil, err
	}
	if d.ConvergeTimeout <= 0 {
		d.ConvergeTimeout = 10 * time.Minute
	}
	if d.Wait == (WaitOptions{}) {
		d.Wait = DefaultWaitOptions
	}
	return &Service{records: rec, d: d, tracker: effort.NewTracker(d.Clock, d.Project.Effort.IdleThreshold, d.Actor)}, nil
}

// Actor is who this Service acts as.
func (s *Service) Actor() string { return s.d.Actor }

// EventKind says what an Event reports.
type EventKind string

// Event kinds.
const (
	EventStepStarted     EventKind = "step-started"
	EventStepProgress    EventKind = "step-progress"
	EventStepOutput      EventKind = "step-output" // one line a tool printed (Output)
	EventStepFinished    EventKind = "step-finished"
	EventAppState        EventKind = "app-state"
	EventReleaseFinished EventKind = "release-finished"
)

// Event is what UIs see of a running release. Release is a snapshot the
// receiver may keep.
type Event struct {
	Time      time.Time          `json:"time"`
	Kind      EventKind          `json:"kind"`
	ReleaseID string             `json:"release_id"`
	Step      StepKind           `json:"step"`
	Status    StepStatus         `json:"status"`
	Message   string             `json:"message,omitempty"`
	Output    string             `json:"output,omitempty"`
	Findings  []finding.Finding  `json:"findings,omitempty"`
	App       *appstate.AppState `json:"app,omitempty"`
	Release   *Release           `json:"-"`
}

// EventSink receives events synchronously; it must not block for long.
type EventSink func(Event)

// Subscribe returns the events of every release this Service runs from now
// on, until ctx ends, when the channel closes. A subscriber that falls more
// than a few events behind misses events rather than slowing the run: the
// release in the ledger is the truth, events only say when to look.
func (s *Service) Subscribe(ctx context.Context) <-chan Event {
	ch := make(chan Event, 64)
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[int]chan Event{}
	}
	id := s.nextID
	s.nextID++
	s.subs[id] = ch
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		delete(s.subs, id)
		s.mu.Unlock()
		close(ch)
	}()
	return ch
}

// publish hands e to the subscribers without waiting for any.
func (s *Service) publish(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.subs {
		select {
		case ch <- e:
		default:
		}
	}
}

// journal appends rec to the session's journal.
func (s *Service) journal(ctx context.Context, rec journal.Record) error {
	if _, err := s.d.Journal.Append(ctx, rec); err != nil {
		return fmt.Errorf("journal %s: %w", rec.JournalKind(), err)
	}
	return nil
}

// journalFailure journals rec, which records why the operation failed with
// cause, and returns cause joined with any failure to journal it, so a lost
// record is never silent: the command fails naming both.
func (s *Service) journalFailure(ctx context.Context, cause error, rec journal.Record) error {
	return errors.Join(cause, journalFailed(s.journal(context.WithoutCancel(ctx), rec)))
}

// journalFailed says that the record of a failure could not be kept, or is
// nil when it was.
func journalFailed(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("and the session journal could not record it: %w", err)
}

// linkSession links this session's journal to a release once, in the
// journal and in the ledger, so journal list and audits find the session
// of every release it worked on.
func (s *Service) linkSession(ctx context.Context, releaseID string) error {
	s.mu.Lock()
	done := s.linked[releaseID]
	s.mu.Unlock()
	if done {
		return nil
	}
	if err := s.journal(ctx, journal.SessionRelease{Release: releaseID}); err != nil {
		return err
	}
	if id := s.d.Journal.SessionID(); id != "" {
		if err := s.d.Ledger.LinkSession(ctx, id, releaseID); err != nil {
			return fmt.Errorf("link session %s to release %s: %w", id, releaseID, err)
		}
	}
	s.mu.Lock()
	if s.linked == nil {
		s.linked = map[string]bool{}
	}
	s.linked[releaseID] = true
	s.mu.Unlock()
	return nil
}

func missingPort(name string) error {
	return &TerminalError{Err: fmt.Errorf("no %s adapter is wired for this command", name)}
}

// Records answers questions about what the ledger holds, changing nothing
// and journaling nothing: the queries commands ask before (or instead of)
// acting, and the screens' reads. It needs the project, the ledger and the
// clock. A Service embeds one. Journal verification is workflow/audit's.
type Records struct {
	project  *Project
	ledger   Ledger
	clock    Clock
	verifier SignatureVerifier
}

// NewRecords checks the ports a query needs: Project, Ledger and Clock.
func NewRecords(d Deps) (*Records, error) {
	switch {
	case d.Project == nil:
		return nil, errors.New("workflow: no project configuration")
	case d.Ledger == nil:
		return nil, errors.New("workflow: no ledger")
	case d.Clock == nil:
		return nil, errors.New("workflow: no clock")
	}
	return &Records{project: d.Project, ledger: d.Ledger, clock: d.Clock, verifier: d.Verifier}, nil
}

// Project is the loaded configuration.
func (q *Records) Project() *Project { return q.project }

// Release returns a stored release; UIs read releases through here.
func (q *Records) Release(ctx context.Context, id string) (*Release, error) {
	return q.ledger.LoadRelease(ctx, id)
}

// Plan returns a reviewed plan by fingerprint.
func (q *Records) Plan(ctx context.Context, fingerprint string) (tfplan.Summary, error) {
	return q.ledger.LoadPlan(ctx, fingerprint)
}

// PlanApprovals counts the approvals of a plan against its environment's
// rule, as apply will.
func (q *Records) PlanApprovals(ctx context.Context, p tfplan.Summary) (approval.Check, error) {
	env, err := q.project.Env(p.Env)
	if err != nil {
		return approval.Check{}, err
	}
	all, err := q.ledger.Approvals(ctx, approval.Plan, p.Fingerprint)
	if err != nil {
		return approval.Check{}, err
	}
	return countPlanApprovals(ctx, q.verifier, env, p, all)
}

// Effort returns the effort recorded against a release.
func (q *Records) Effort(ctx context.Context, releaseID string) ([]effort.Entry, error) {
	return q.ledger.Effort(ctx, releaseID)
}

// InProgress returns the newest release of the project that is not done
// (break-glass records aside), or ErrNotFound: what plain `relcap` opens the
// cockpit on.
func (q *Records) InProgress(ctx context.Context) (*Release, error) {
	releases, err := q.ledger.ListReleases(ctx, ReleaseFilter{App: q.project.App, Limit: 50})
	if err != nil {
		return nil, err
	}
	for _, r := range releases {
		if r.Kind != KindBreakGlass && !r.Status.Done() {
			return r, nil
		}
	}
	return nil, fmt.Errorf("no release of %s is in progress: %w", q.project.App, fault.ErrNotFound)
}

// AwaitingConvergence returns the latest release of env whose promotion
// landed and that has not converged, or an infrastructure-only release
// past its apply: what relcap converge --env watches.
func (q *Records) AwaitingConvergence(ctx context.Context, env string) (*Release, error) {
	if _, err := q.project.Env(env); err != nil {
		return nil, err
	}
	releases, err := q.ledger.ListReleases(ctx, ReleaseFilter{Env: env, Limit: 20})
	if err != nil {
		return nil, err
	}
	for _, r := range releases {
		if (r.Checkpoints.Landed() && !r.Status.Done()) || awaitsInfraEnd(r) {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w: no promotion into %s is waiting to converge: promote first, or pass --release ID or --revision SHA", fault.ErrUsage, env)
}

// EnvRecorded is whether the ledger holds a release of environment env,
// of this project's application or any other.
func (q *Records) EnvRecorded(ctx context.Context, env string) (bool, error) {
	releases, err := q.ledger.ListReleases(ctx, ReleaseFilter{Env: env, Limit: 1})
	return len(releases) > 0, err
}

// Sessions lists the sessions, oldest first.
func (q *Records) Sessions(ctx context.Context) ([]Session, error) {
	return q.ledger.Sessions(ctx)
}

// Changes signals each time the ledger changes, from this process or
// another, until ctx ends; nil when the ledger cannot tell (the cockpit
// then offers r to re-check by hand).
func (q *Records) Changes(ctx context.Context) <-chan struct{} {
	if f, ok := q.ledger.(ChangeFeed); ok {
		return f.Changes(ctx)
	}
	return nil
}

// AwaitedApprovals is the count of approvals the release's current step
// waits for: the plan's at plan review and apply, the release's at
// promotion. ok is false when the current step waits for no approval.
func (q *Records) AwaitedApprovals(ctx context.Context, r *Release) (check approval.Check, ok bool, err error) {
	cur, unfinished := r.Current()
	if !unfinished {
		return approval.Check{}, false, nil
	}
	env, err := q.project.Env(r.Env)
	if err != nil {
		return approval.Check{}, false, err
	}
	switch cur {
	case StepPlanReview, StepApply:
		fp := r.Checkpoints.Fingerprint
		if fp == "" {
			return approval.Check{}, false, nil
		}
		p, err := q.ledger.LoadPlan(ctx, fp)
		if err != nil {
			return approval.Check{}, false, err
		}
		if !p.HasChanges() {
			return approval.Check{}, false, nil
		}
		check, err := q.PlanApprovals(ctx, p)
		return check, err == nil, err
	case StepPromotion:
		rule := env.Approvals.Rule(approval.Promotion)
		review := env.EnvRepo.Review
		if rule.Required == 0 || (review.PullRequests() && review.Approvals != forge.ApprovalsFromBoth) {
			// Approvals given on the forge reach no ledger: the cockpit
			// polls the forge instead (fault.ErrAwaitingForge).
			return approval.Check{}, false, nil
		}
		all, err := q.ledger.Approvals(ctx, approval.Promotion, r.ID)
		if err != nil {
			return approval.Check{}, false, err
		}
		return rule.Count(PromotionTarget(r), r.Captain, all, verifyWith(ctx, q.verifier)), true, nil
	}
	return approval.Check{}, false, nil
}

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
		return nil, fmt.Errorf("%w: no release holds plan %s: relcap approve --plan %s approves a plan outside a release", fault.ErrUsage, fingerprint, fingerprint)
	}
	if r.Checkpoints.Fingerprint != fingerprint {
		return nil, fmt.Errorf("%w: release %s has moved on to plan %s; review that one", fault.ErrBlocked, r.ID, ShortHash(r.Checkpoints.Fingerprint))
	}
	return r, nil
}
