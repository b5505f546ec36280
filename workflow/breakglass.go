package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// SyncPolicy is an Argo CD application's automated sync policy.
type SyncPolicy struct {
	Automated bool `json:"automated"`
	SelfHeal  bool `json:"self_heal"`
	Prune     bool `json:"prune"`
}

// UnmarshalJSON reads a policy object, or the JSON string holding one that
// break-glass records kept before checkpoints were typed.
func (p *SyncPolicy) UnmarshalJSON(b []byte) error {
	type plain SyncPolicy
	var s string
	if json.Unmarshal(b, &s) == nil {
		b = []byte(s)
	}
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("sync policy: %w", err)
	}
	*p = SyncPolicy(v)
	return nil
}

func (p SyncPolicy) String() string {
	if !p.Automated {
		return "manual"
	}
	return fmt.Sprintf("automated (self-heal %t, prune %t)", p.SelfHeal, p.Prune)
}

// Drift is a managed resource whose live state differs from Git.
type Drift struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Desired and Live are the object as Git renders it and as it runs.
	Desired string `json:"desired,omitempty"`
	Live    string `json:"live,omitempty"`
}

// CaptureRequest asks the environment repository to record files on a
// relcap branch for review (the live state of a break-glass hotfix).
type CaptureRequest struct {
	Env     string
	ID      string // branch relcap/<env>/<id>
	Target  EnvRepoTarget
	Path    string // file to write, relative to the repository root
	Content []byte
	Message string
}

// BreakGlass is an active or ended pause of one application's reconciliation.
type BreakGlass struct {
	ID        string    `json:"id"`
	Env       string    `json:"env"`
	App       string    `json:"app"`
	Actor     string    `json:"actor"`
	Approver  string    `json:"approver,omitempty"`
	Reason    string    `json:"reason"`
	StartedAt time.Time `json:"started_at"`
	// ExpiresAt is when the time box ends: for a pause held by Window,
	// when Argo CD closes the window and resumes reconciliation by itself.
	ExpiresAt time.Time `json:"expires_at"`
	// Window is the deny sync window that holds the pause; nil in a record
	// made before break-glass used windows, which has SavedPolicy instead.
	Window *SyncWindow `json:"window,omitempty"`
	// WindowRemoved says relcap has removed Window from its project.
	WindowRemoved bool `json:"window_removed,omitempty"`
	// SavedPolicy is the sync policy a record from before sync windows
	// restores at end.
	SavedPolicy *SyncPolicy `json:"saved_policy,omitempty"`
	Ended       bool        `json:"ended"`
	Capture     string      `json:"capture,omitempty"` // env-repo branch holding the captured drift
}

// Expired reports whether the break-glass outlived its time box at now.
func (b BreakGlass) Expired(now time.Time) bool { return !b.Ended && now.After(b.ExpiresAt) }

// SelfEnding reports whether Argo CD resumes reconciliation by itself when
// the time box ends (a sync window holds the pause), rather than only when
// relcap breakglass end restores a saved policy.
func (b BreakGlass) SelfEnding() bool { return b.Window != nil }

func breakGlassOf(r *Release) (BreakGlass, error) {
	p := r.Checkpoints.BreakGlassPause
	b := BreakGlass{ID: r.ID, Env: r.Env, Actor: r.Captain, StartedAt: r.CreatedAt, Reason: p.Reason,
		Approver: p.Approver, Ended: r.Status == ReleaseEnded, Capture: p.Capture, ExpiresAt: p.ExpiresAt,
		WindowRemoved: !p.WindowRemoved.IsZero()}
	switch {
	case p.Window == nil && p.SavedPolicy == nil:
		return b, fmt.Errorf("break-glass %s: the record has neither a sync window nor a saved sync policy", r.ID)
	case p.ExpiresAt.IsZero():
		return b, fmt.Errorf("break-glass %s: the record has no expiry", r.ID)
	}
	if p.Window != nil {
		w := *p.Window
		w.Applications = slices.Clone(w.Applications)
		b.Window = &w
	}
	if p.SavedPolicy != nil {
		saved := *p.SavedPolicy
		b.SavedPolicy = &saved
	}
	return b, nil
}

// BreakGlassRequest starts a break-glass.
type BreakGlassRequest struct {
	Env    string
	Reason string
	TTL    time.Duration
	// Approver is who approved it: in production, the person whose signed
	// break-glass approval (relcap approve --breakglass) is to count.
	Approver string
}

// MaxBreakGlassTTL bounds how long reconciliation may stay paused.
const MaxBreakGlassTTL = 24 * time.Hour

// BreakGlassApprovalValidity is how long after it was given a break-glass
// approval can still start a break-glass. An emergency approval is for the
// emergency at hand: one given this long ago was given for a situation
// that may no longer be the one the captain faces, so it is asked again.
const BreakGlassApprovalValidity = 30 * time.Minute

// BreakGlassSubject is what a break-glass approval in env is of: the
// environment and its application, e.g. "prod/web-prod".
func BreakGlassSubject(env Environment) string { return env.Name + "/" + env.ArgoCD.App }

func (s *Service) control() (ReconcileControl, error) {
	rc, ok := s.d.Convergence.(ReconcileControl)
	if !ok || s.d.Convergence == nil {
		return nil, missingPort("argo cd reconcile control")
	}
	return rc, nil
}

func (s *Service) syncWindows() (SyncWindows, error) {
	sw, ok := s.d.Convergence.(SyncWindows)
	if !ok || s.d.Convergence == nil {
		return nil, missingPort("argo cd sync windows")
	}
	return sw, nil
}

// StartBreakGlass pauses automated sync and self-heal of exactly the
// environment's one application for the time box, so a manual hotfix
// survives: it adds a deny sync window for that application alone to its
// Argo CD project, opening now and closing when the time box ends, when
// Argo CD resumes reconciliation by itself, whether or not anyone runs
// relcap again. Manual syncs stay allowed. In a production environment it
// needs a signed break-glass approval by req.Approver (breakGlassApproval).
func (s *Service) StartBreakGlass(ctx context.Context, req BreakGlassRequest) (BreakGlass, error) {
	d := s.d
	env, err := d.Project.Env(req.Env)
	if err != nil {
		return BreakGlass{}, err
	}
	switch {
	case strings.TrimSpace(req.Reason) == "":
		return BreakGlass{}, fmt.Errorf("%w: break-glass needs --reason: say what is broken", ErrUsage)
	case req.TTL <= 0 || req.TTL > MaxBreakGlassTTL:
		return BreakGlass{}, fmt.Errorf("%w: --ttl must be more than 0 and at most %s, got %s", ErrUsage, MaxBreakGlassTTL, req.TTL)
	}
	app := env.AppRef()
	now := d.Clock.Now()
	var approval *Approval
	if env.Production {
		a, err := s.breakGlassApproval(ctx, env, req, now)
		if err != nil {
			return BreakGlass{}, s.journalFailure(ctx, err, BreakGlassRefused{Env: env.Name, App: app.Name, Approver: req.Approver, Reason: err.Error()})
		}
		approval = &a
	}
	sw, err := s.syncWindows()
	if err != nil {
		return BreakGlass{}, err
	}
	if err := s.sweepBreakGlassWindows(ctx, sw); err != nil {
		return BreakGlass{}, err
	}
	if active, err := s.ActiveBreakGlass(ctx); err != nil {
		return BreakGlass{}, err
	} else {
		for _, b := range active {
			if b.Env != env.Name {
				continue
			}
			if b.Expired(now) {
				return BreakGlass{}, fmt.Errorf("%w: break-glass %s in %s expired at %s and is not ended: end it first (relcap breakglass end --env %s) to capture what is left of its drift", ErrBlocked, b.ID, env.Name, b.ExpiresAt.UTC().Format(time.RFC3339), env.Name)
			}
			return BreakGlass{}, fmt.Errorf("%w: break-glass %s is already active in %s (by %s, until %s)", ErrBlocked, b.ID, env.Name, b.Actor, b.ExpiresAt.UTC().Format(time.RFC3339))
		}
	}
	r := NewRelease(NewReleaseID(d.Project.App, env.Name, now)+"-bg", d.Project.App, env.Name, "", d.Actor, now)
	r.Kind = KindBreakGlass
	for i := range r.Steps {
		r.Steps[i].Status, r.Steps[i].Message = Skipped, "break-glass"
	}
	window, closes := DenyWindow(app.Name, now, req.TTL)
	window.Description = fmt.Sprintf("relcap break-glass %s by %s until %s; relcap breakglass end removes it", r.ID, d.Actor, closes.Format(time.RFC3339))
	r.Checkpoints.BreakGlassPause = BreakGlassPause{Window: &window, ExpiresAt: closes, Reason: req.Reason, Approver: req.Approver}
	if approval != nil {
		r.Checkpoints.ApprovedAt = approval.At
	}
	// Record first, then pause: a crash in between leaves a record that
	// status and end act on, never a window nobody knows about.
	if err := d.Ledger.SaveRelease(ctx, r); err != nil {
		return BreakGlass{}, fmt.Errorf("save break-glass: %w", err)
	}
	if err := s.journal(ctx, BreakGlassStarted{ID: r.ID, Env: env.Name, App: app.Name, Reason: req.Reason,
		Approver: req.Approver, ExpiresAt: closes, Window: &window, Approval: approval}); err != nil {
		return BreakGlass{}, err
	}
	got, err := sw.DenySync(ctx, app, window)
	if err != nil {
		// The window may be on the project without holding: take it off
		// and close the record, so no pause nobody knows of remains.
		bg := context.WithoutCancel(ctx)
		cause := fmt.Errorf("pause reconciliation of %s: %w; nothing is paused", app.Name, err)
		removed, rmErr := sw.RemoveWindow(bg, app, window)
		if rmErr == nil && !removed {
			// Nothing taken for relcap's window: make sure no window like
			// it stays behind (the adapter may not recognise what the
			// server made of it), or say so rather than "nothing is paused".
			if left, err := sw.ListWindows(bg, app); err == nil && slices.ContainsFunc(left, window.Same) {
				rmErr = errors.New("a window like it is still on the project")
			}
		}
		if rmErr != nil {
			// The record keeps the window, so the sweep tries again once
			// the time box is over.
			cause = fmt.Errorf("pause reconciliation of %s: %w; and removing its window failed: %v: remove the %s by hand (argocd proj windows list)", app.Name, err, rmErr, window)
		} else {
			r.Checkpoints.WindowRemoved = d.Clock.Now()
		}
		r.Status, r.EndedAt, r.UpdatedAt = ReleaseEnded, d.Clock.Now(), d.Clock.Now()
		saveErr := d.Ledger.SaveRelease(bg, r)
		_, jerr := d.Journal.Append(bg, BreakGlassFailed{ID: r.ID, Error: cause.Error()})
		return BreakGlass{}, errors.Join(cause, saveErr, journalFailed(jerr))
	}
	r.Checkpoints.Window, r.UpdatedAt = &got, d.Clock.Now()
	if err := d.Ledger.SaveRelease(ctx, r); err != nil {
		return BreakGlass{}, fmt.Errorf("save break-glass %s (the %s holds it): %w", r.ID, got, err)
	}
	b, err := breakGlassOf(r)
	b.App = app.Name
	return b, err
}

// breakGlassApproval is the approval that lets the actor break the glass
// in production env for req.TTL: a break-glass approval of exactly this
// environment's application by req.Approver, someone other than the actor
// (and on approvers.breakglass when it lists anyone), given within
// BreakGlassApprovalValidity before now, for a time box at least req.TTL
// long, not used by another break-glass, and signed with a key the people
// file gives the approver as it reads now. The newest that qualifies is
// used; otherwise the error (ErrBlocked) says why each was not, and what
// to ask for.
func (s *Service) breakGlassApproval(ctx context.Context, env Environment, req BreakGlassRequest, now time.Time) (Approval, error) {
	d := s.d
	subject := BreakGlassSubject(env)
	ask := fmt.Sprintf("relcap approve --breakglass --env %s --ttl %s --reason TEXT", env.Name, ShortDuration(req.TTL))
	if req.Approver == "" {
		return Approval{}, fmt.Errorf("%w: %s is a production environment: break-glass needs a signed approval by someone other than %s: ask them to run %s, then pass --approver NAME", ErrBlocked, env.Name, d.Actor, ask)
	}
	rule := env.Approvals.Rule(ApproveBreakGlass)
	if err := rule.Refuses(d.Actor, req.Approver); err != nil {
		return Approval{}, fmt.Errorf("%w: ask another person to run %s, then pass --approver NAME", err, ask)
	}
	all, err := d.Ledger.Approvals(ctx, ApproveBreakGlass, subject)
	if err != nil {
		return Approval{}, fmt.Errorf("read break-glass approvals: %w", err)
	}
	used, err := s.usedBreakGlassApprovals(ctx, env.Name, now)
	if err != nil {
		return Approval{}, err
	}
	verify := verifyWith(ctx, d.Verifier)
	var why []string
	for _, a := range slices.Backward(all) { // newest first
		if a.Approver != req.Approver {
			continue
		}
		at := a.At.UTC().Format(time.RFC3339)
		var reason string
		switch {
		case a.At.After(now.Add(time.Minute)):
			reason = fmt.Sprintf("approved at %s, in the future: check this machine's clock", at)
		case now.Sub(a.At) > BreakGlassApprovalValidity:
			reason = fmt.Sprintf("approved at %s, more than %s ago", at, ShortDuration(BreakGlassApprovalValidity))
		case a.TimeBox < req.TTL:
			reason = fmt.Sprintf("approved at %s for a time box of %s, shorter than --ttl %s", at, ShortDuration(a.TimeBox), ShortDuration(req.TTL))
		case used[usedKey(a.Approver, a.At)] != "":
			reason = fmt.Sprintf("approved at %s, and break-glass %s already used that approval", at, used[usedKey(a.Approver, a.At)])
		default:
			check := rule.Count(ApprovalTarget{Subject: subject}, d.Actor, []Approval{a}, verify)
			if len(check.Counted) == 1 {
				return a, nil
			}
			reason = fmt.Sprintf("approved at %s, but %s", at, check.Ignored[a.Approver])
		}
		if !slices.Contains(why, reason) {
			why = append(why, reason)
		}
	}
	if len(why) == 0 {
		return Approval{}, fmt.Errorf("%w: %s is a production environment: break-glass needs a signed approval, and %s has not approved break-glass of %s: ask them to run %s", ErrBlocked, env.Name, req.Approver, subject, ask)
	}
	return Approval{}, fmt.Errorf("%w: %s is a production environment: break-glass needs a signed approval, and no approval by %s of %s counts (%s): ask them to run %s", ErrBlocked, env.Name, req.Approver, subject, strings.Join(why, "; "), ask)
}

func usedKey(approver string, at time.Time) string {
	return approver + "@" + at.UTC().Format(time.RFC3339Nano)
}

// usedBreakGlassApprovals maps the approvals that break-glass records of
// env have used (approver and time) to the record: an approval is for one
// pause. Only records young enough to have used a still-valid approval are
// read.
func (s *Service) usedBreakGlassApprovals(ctx context.Context, env string, now time.Time) (map[string]string, error) {
	releases, err := s.d.Ledger.ListReleases(ctx, ReleaseFilter{App: s.d.Project.App, Env: env, From: now.Add(-BreakGlassApprovalValidity - time.Hour)})
	if err != nil {
		return nil, fmt.Errorf("read break-glass records: %w", err)
	}
	used := map[string]string{}
	for _, r := range releases {
		if p := r.Checkpoints.BreakGlassPause; r.Kind == KindBreakGlass && p.Approver != "" && !p.ApprovedAt.IsZero() {
			used[usedKey(p.Approver, p.ApprovedAt)] = r.ID
		}
	}
	return used, nil
}

// sweepBreakGlassWindows removes from Argo CD the deny windows of
// break-glass records whose time box has ended, each once. A window's
// schedule is a minute of a date (cron "M H D Mon *"), which cron repeats
// every year (every leap year for 29 February): a closed window left on
// the project would pause the application again, unannounced, a year
// later. Argo CD lifts the pause at the end of the time box by itself, but
// only relcap knows the window is done with, so every break-glass command
// (start, status, end) first removes the closed windows relcap made,
// whether or not anyone ran end, identified by exactly the window its
// record holds (application, schedule, duration), never another.
func (s *Service) sweepBreakGlassWindows(ctx context.Context, sw SyncWindows) error {
	d := s.d
	releases, err := d.Ledger.ListReleases(ctx, ReleaseFilter{App: d.Project.App, Limit: 500})
	if err != nil {
		return fmt.Errorf("read break-glass records: %w", err)
	}
	now := d.Clock.Now()
	for _, r := range releases {
		p := r.Checkpoints.BreakGlassPause
		if r.Kind != KindBreakGlass || p.Window == nil || !p.WindowRemoved.IsZero() || !now.After(p.ExpiresAt) {
			continue
		}
		env, err := d.Project.Env(r.Env)
		if err != nil {
			continue // an environment gone from relcap.yaml: no server to ask
		}
		removed, err := sw.RemoveWindow(ctx, env.AppRef(), *p.Window)
		if err != nil {
			return fmt.Errorf("remove the closed %s of break-glass %s: %w: its schedule opens it again in a year; run this again, or remove it by hand", p.Window, r.ID, err)
		}
		r.Checkpoints.WindowRemoved, r.UpdatedAt = now, now
		if err := d.Ledger.SaveRelease(ctx, r); err != nil {
			return fmt.Errorf("save break-glass %s: %w", r.ID, err)
		}
		if err := s.journal(ctx, BreakGlassWindowRemoved{ID: r.ID, Window: *p.Window, Expired: true, Removed: removed}); err != nil {
			return err
		}
	}
	return nil
}

// BreakGlassStatus is an active break-glass with its live drift.
type BreakGlassStatus struct {
	BreakGlass
	Left  time.Duration `json:"left"`
	Drift []Drift       `json:"drift"`
	// Held is the break-glass's window as Argo CD has it now, with
	// Active; nil when the project no longer has it (it closed and relcap
	// removed it, or someone removed it by hand) or the record holds the
	// pause with a saved policy.
	Held *SyncWindow `json:"held,omitempty"`
}

// StatusBreakGlass reports the active break-glass of env: time left,
// whether Argo CD still holds its window, and the resources whose live
// state differs from Git. It first removes windows whose time box ended.
func (s *Service) StatusBreakGlass(ctx context.Context, envName string) (BreakGlassStatus, error) {
	if sw, err := s.syncWindows(); err == nil {
		if err := s.sweepBreakGlassWindows(ctx, sw); err != nil {
			return BreakGlassStatus{}, err
		}
	}
	return s.statusOf(ctx, envName)
}

func (s *Service) statusOf(ctx context.Context, envName string) (BreakGlassStatus, error) {
	b, app, err := s.activeIn(ctx, envName)
	if err != nil {
		return BreakGlassStatus{}, err
	}
	rc, err := s.control()
	if err != nil {
		return BreakGlassStatus{}, err
	}
	drift, err := rc.Drift(ctx, app)
	if err != nil {
		return BreakGlassStatus{}, fmt.Errorf("read drift of %s: %w", app.Name, err)
	}
	st := BreakGlassStatus{BreakGlass: b, Left: b.ExpiresAt.Sub(s.d.Clock.Now()), Drift: drift}
	if b.Window != nil && !b.WindowRemoved {
		sw, err := s.syncWindows()
		if err != nil {
			return st, err
		}
		windows, err := sw.ListWindows(ctx, app)
		if err != nil {
			return st, fmt.Errorf("read sync windows of %s: %w", app.Name, err)
		}
		for _, w := range windows {
			if w.Same(*b.Window) {
				st.Held = &w
				break
			}
		}
	}
	return st, nil
}

func (s *Service) activeIn(ctx context.Context, envName string) (BreakGlass, AppRef, error) {
	env, err := s.d.Project.Env(envName)
	if err != nil {
		return BreakGlass{}, AppRef{}, err
	}
	active, err := s.ActiveBreakGlass(ctx)
	if err != nil {
		return BreakGlass{}, AppRef{}, err
	}
	for _, b := range active {
		if b.Env == env.Name {
			return b, env.AppRef(), nil
		}
	}
	return BreakGlass{}, AppRef{}, fmt.Errorf("%w: no active break-glass in %s", ErrUsage, env.Name)
}

// EndBreakGlass captures the live drift as an environment-repo change for
// review, then ends the pause: it removes the break-glass's deny window
// from the project (Argo CD resumes automated sync and self-heal at once),
// or, for a record made before sync windows, restores exactly the sync
// policy saved at start and checks it took. It journals each. With no
// drift there is nothing to capture (after the time box, self-heal has
// usually put Git's state back already).
func (s *Service) EndBreakGlass(ctx context.Context, envName string) (BreakGlassStatus, EnvChange, error) {
	d := s.d
	sw, swErr := s.syncWindows()
	if swErr == nil {
		if err := s.sweepBreakGlassWindows(ctx, sw); err != nil {
			return BreakGlassStatus{}, EnvChange{}, err
		}
	}
	st, err := s.statusOf(ctx, envName)
	if err != nil {
		return st, EnvChange{}, err
	}
	env, _ := d.Project.Env(envName)
	app := env.AppRef()
	var change EnvChange
	var capturePR *PullRequestRecord
	if len(st.Drift) > 0 {
		capturer, ok := d.EnvRepo.(Capturer)
		if !ok || d.EnvRepo == nil {
			return st, EnvChange{}, missingPort("environment-repo capture")
		}
		path := fmt.Sprintf("breakglass/%s/%s.yaml", env.Name, st.ID)
		// The capture is committed to the environment repository, which
		// people and systems outside relcap read: the live state and the
		// reason are masked like everything relcap writes.
		change, err = capturer.Capture(ctx, CaptureRequest{Env: env.Name, ID: st.ID, Target: env.EnvRepo, Path: path,
			Content: d.Secrets.ScrubBytes(captureDocument(st, d.Clock.Now())),
			Message: d.Secrets.Scrub(fmt.Sprintf("relcap: capture break-glass %s in %s for review\n\n%s\n\nRelcap-Break-Glass: %s\nRelcap-Environment: %s\n", st.ID, env.Name, st.Reason, st.ID, env.Name))})
		if err != nil {
			return st, EnvChange{}, fmt.Errorf("capture drift of %s: %w (reconciliation is still paused)", app.Name, err)
		}
		captured := BreakGlassCaptured{ID: st.ID, Branch: change.Branch, Commit: change.Commit, Resources: len(st.Drift)}
		if env.EnvRepo.Review.PullRequests() {
			// Reviewed the way every change of this repository is: in a
			// pull request, which people merge or close (relcap never
			// merges a capture: it records what was done by hand).
			pr, err := s.openCapturePullRequest(ctx, env, st, change)
			if err != nil {
				return st, change, fmt.Errorf("open a pull request for the capture of %s: %w (reconciliation is still paused; relcap breakglass end --env %s again)", app.Name, err, env.Name)
			}
			capturePR = pr
			captured.PullRequest, captured.URL = pr.Number, pr.URL
		}
		if _, err := d.Journal.Append(ctx, captured); err != nil {
			return st, change, err
		}
	}
	r, err := d.Ledger.LoadRelease(ctx, st.ID)
	if err != nil {
		return st, change, err
	}
	if capturePR != nil {
		r.Checkpoints.CapturePullRequest = capturePR
	}
	ended := BreakGlassEnded{ID: st.ID, Capture: change.Branch, Expired: st.Left < 0}
	switch {
	case st.Window != nil && !st.WindowRemoved:
		if swErr != nil {
			return st, change, swErr
		}
		removed, err := sw.RemoveWindow(ctx, app, *st.Window)
		if err != nil {
			return st, change, fmt.Errorf("remove the %s: %w (reconciliation stays paused until %s, when Argo CD closes the window)", st.Window, err, st.ExpiresAt.UTC().Format(time.RFC3339))
		}
		r.Checkpoints.WindowRemoved = d.Clock.Now()
		st.WindowRemoved, st.Held, ended.WindowRemoved = true, nil, true
		if err := s.journal(ctx, BreakGlassWindowRemoved{ID: st.ID, Window: *st.Window, Expired: st.Left < 0, Removed: removed}); err != nil {
			return st, change, err
		}
	case st.Window != nil:
		ended.WindowRemoved = true // removed when it closed
	default:
		if err := s.restorePolicy(ctx, app, *st.SavedPolicy); err != nil {
			return st, change, err
		}
		ended.RestoredPolicy = st.SavedPolicy
	}
	r.Status, r.EndedAt, r.UpdatedAt = ReleaseEnded, d.Clock.Now(), d.Clock.Now()
	r.Checkpoints.Capture = change.Branch
	if err := d.Ledger.SaveRelease(ctx, r); err != nil {
		return st, change, err
	}
	st.Ended, st.Capture = true, change.Branch
	return st, change, s.journal(ctx, ended)
}

// restorePolicy ends a break-glass recorded before sync windows, which
// turned automated sync off: it restores the saved policy and checks it
// took.
func (s *Service) restorePolicy(ctx context.Context, app AppRef, saved SyncPolicy) error {
	rc, err := s.control()
	if err != nil {
		return err
	}
	if err := rc.SetSyncPolicy(ctx, app, saved); err != nil {
		return fmt.Errorf("restore sync policy of %s: %w", app.Name, err)
	}
	now, err := rc.SyncPolicy(ctx, app)
	if err != nil {
		return fmt.Errorf("read back sync policy of %s: %w", app.Name, err)
	}
	if now != saved {
		return fmt.Errorf("sync policy of %s is %s after restore, want %s: restore it by hand", app.Name, now, saved)
	}
	return nil
}

// captureDocument is the file a break-glass leaves for review: what was
// changed by hand, as it runs, resource by resource.
func captureDocument(st BreakGlassStatus, now time.Time) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Break-glass %s in %s by %s", st.ID, st.Env, st.Actor)
	if st.Approver != "" {
		fmt.Fprintf(&b, ", approved by %s", st.Approver)
	}
	fmt.Fprintf(&b, "\n# Reason: %s\n# From %s to %s. Live state of each resource that drifted from Git:\n# fold the intended changes into the environment's manifests, then delete this file.\n",
		strings.ReplaceAll(st.Reason, "\n", " "), st.StartedAt.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	for _, dr := range st.Drift {
		fmt.Fprintf(&b, "---\n# %s/%s %s/%s\n", dr.Group, dr.Kind, dr.Namespace, dr.Name)
		live := dr.Live
		if live == "" {
			live = "{}"
		}
		var v any
		if json.Unmarshal([]byte(live), &v) == nil {
			if pretty, err := json.MarshalIndent(v, "", "  "); err == nil {
				live = string(pretty)
			}
		}
		b.WriteString(live + "\n")
	}
	return []byte(b.String())
}

// openCapturePullRequest opens (once: the forge returns the open one) the
// pull request of a break-glass capture branch into the environment
// branch.
func (s *Service) openCapturePullRequest(ctx context.Context, env Environment, st BreakGlassStatus, change EnvChange) (*PullRequestRecord, error) {
	forge, err := s.openForge(ctx, env.EnvRepo.Review)
	if err != nil {
		return nil, err
	}
	body := fmt.Sprintf("relcap captured the live drift of break-glass `%s` in **%s** (%d resource(s)) for review: merge it to keep what was changed by hand, or close it to let Git's state stand.\n\nReason: %s\n\n---\nrelcap-break-glass: %s\n",
		st.ID, env.Name, len(st.Drift), st.Reason, st.ID)
	pr, err := forge.OpenPullRequest(ctx, OpenPullRequestRequest{Head: change.Branch, Base: env.EnvRepo.Branch,
		Title: fmt.Sprintf("relcap: break-glass %s in %s: captured drift for review", st.ID, env.Name), Body: body})
	if err != nil {
		return nil, err
	}
	return &PullRequestRecord{Forge: env.EnvRepo.Review.Forge, Number: pr.Number, URL: pr.URL, Head: change.Branch, Base: env.EnvRepo.Branch, HeadSHA: pr.HeadSHA, State: pr.State}, nil
}
