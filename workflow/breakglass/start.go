package breakglass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/finding"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// Start pauses automated sync and self-heal of exactly the environment's
// one application for the time box, so a manual hotfix survives: it adds a
// deny sync window for that application alone to its Argo CD project,
// opening now and closing when the time box ends, when Argo CD resumes
// reconciliation by itself, whether or not anyone runs relcap again.
// Manual syncs stay allowed. In a production environment it needs a signed
// break-glass approval by req.Approver (approval).
func (s *Service) Start(ctx context.Context, req Request) (Record, error) {
	d := s.d
	env, err := d.Project.Env(req.Env)
	if err != nil {
		return Record{}, err
	}
	switch {
	case strings.TrimSpace(req.Reason) == "":
		return Record{}, fmt.Errorf("%w: break-glass needs --reason: say what is broken", fault.ErrUsage)
	case req.TTL <= 0 || req.TTL > workflow.MaxBreakGlassTTL:
		return Record{}, fmt.Errorf("%w: --ttl must be more than 0 and at most %s, got %s", fault.ErrUsage, workflow.MaxBreakGlassTTL, req.TTL)
	}
	app := env.AppRef()
	now := d.Clock.Now()
	var approval *approval.Approval
	if env.Production {
		a, err := s.approval(ctx, env, req, now)
		if err != nil {
			return Record{}, s.journalFailure(ctx, err, BreakGlassRefused{Env: env.Name, App: app.Name, Approver: req.Approver, Reason: err.Error()})
		}
		approval = &a
	}
	sw, err := s.syncWindows()
	if err != nil {
		return Record{}, err
	}
	if err := s.sweepWindows(ctx, sw); err != nil {
		return Record{}, err
	}
	if active, err := s.Active(ctx); err != nil {
		return Record{}, err
	} else {
		for _, b := range active {
			if b.Env != env.Name {
				continue
			}
			if b.Expired(now) {
				return Record{}, fmt.Errorf("%w: break-glass %s in %s expired at %s and is not ended: end it first (relcap breakglass end --env %s) to capture what is left of its drift", fault.ErrBlocked, b.ID, env.Name, b.ExpiresAt.UTC().Format(time.RFC3339), env.Name)
			}
			return Record{}, fmt.Errorf("%w: break-glass %s is already active in %s (by %s, until %s)", fault.ErrBlocked, b.ID, env.Name, b.Actor, b.ExpiresAt.UTC().Format(time.RFC3339))
		}
	}
	r := d.Project.NewReleaseOf(workflow.NewReleaseID(d.Project.App, env.Name, now)+"-bg", env.Name, "", d.Actor, now)
	r.Kind = workflow.KindBreakGlass
	for i := range r.Steps {
		r.Steps[i].Status, r.Steps[i].Message = workflow.Skipped, "break-glass"
	}
	window, closes := DenyWindow(app.Name, now, req.TTL)
	window.Description = fmt.Sprintf("relcap break-glass %s by %s until %s; relcap breakglass end removes it", r.ID, d.Actor, closes.Format(time.RFC3339))
	r.Checkpoints.BreakGlassPause = workflow.BreakGlassPause{Window: &window, ExpiresAt: closes, Reason: req.Reason, Approver: req.Approver}
	if approval != nil {
		r.Checkpoints.ApprovedAt = approval.At
	}
	// Record first, then pause: a crash in between leaves a record that
	// status and end act on, never a window nobody knows about.
	if err := d.Ledger.SaveRelease(ctx, r); err != nil {
		return Record{}, fmt.Errorf("save break-glass: %w", err)
	}
	if err := s.journal(ctx, BreakGlassStarted{ID: r.ID, Env: env.Name, App: app.Name, Reason: req.Reason,
		Approver: req.Approver, ExpiresAt: closes, Window: &window, Approval: approval}); err != nil {
		return Record{}, err
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
		r.Status, r.EndedAt, r.UpdatedAt = workflow.ReleaseEnded, d.Clock.Now(), d.Clock.Now()
		saveErr := d.Ledger.SaveRelease(bg, r)
		_, jerr := d.Journal.Append(bg, BreakGlassFailed{ID: r.ID, Error: cause.Error()})
		return Record{}, errors.Join(cause, saveErr, journalFailed(jerr))
	}
	r.Checkpoints.Window, r.UpdatedAt = &got, d.Clock.Now()
	if err := d.Ledger.SaveRelease(ctx, r); err != nil {
		return Record{}, fmt.Errorf("save break-glass %s (the %s holds it): %w", r.ID, got, err)
	}
	b, err := recordOf(r)
	b.App = app.Name
	return b, err
}

// approval is the approval that lets the actor break the glass in
// production env for req.TTL: a break-glass approval of exactly this
// environment's application by req.Approver, someone other than the actor
// (and on approvers.breakglass when it lists anyone), given within
// ApprovalValidity before now, for a time box at least req.TTL long, not
// used by another break-glass, and signed with a key the people file
// gives the approver as it reads now. The newest that qualifies is used;
// otherwise the error (ErrBlocked) says why each was not, and what to ask
// for.
func (s *Service) approval(ctx context.Context, env workflow.Environment, req Request, now time.Time) (approval.Approval, error) {
	d := s.d
	subject := workflow.BreakGlassSubject(env)
	ask := fmt.Sprintf("relcap approve --breakglass --env %s --ttl %s --reason TEXT", env.Name, finding.ShortDuration(req.TTL))
	if req.Approver == "" {
		return approval.Approval{}, fmt.Errorf("%w: %s is a production environment: break-glass needs a signed approval by someone other than %s: ask them to run %s, then pass --approver NAME", fault.ErrBlocked, env.Name, d.Actor, ask)
	}
	rule := env.Approvals.Rule(approval.BreakGlass)
	if err := rule.Refuses(d.Actor, req.Approver); err != nil {
		return approval.Approval{}, fmt.Errorf("%w: ask another person to run %s, then pass --approver NAME", err, ask)
	}
	all, err := d.Ledger.Approvals(ctx, approval.BreakGlass, subject)
	if err != nil {
		return approval.Approval{}, fmt.Errorf("read break-glass approvals: %w", err)
	}
	used, err := s.usedApprovals(ctx, env.Name, now)
	if err != nil {
		return approval.Approval{}, err
	}
	verify := workflow.VerifyWith(ctx, d.Verifier)
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
		case now.Sub(a.At) > ApprovalValidity:
			reason = fmt.Sprintf("approved at %s, more than %s ago", at, finding.ShortDuration(ApprovalValidity))
		case a.TimeBox < req.TTL:
			reason = fmt.Sprintf("approved at %s for a time box of %s, shorter than --ttl %s", at, finding.ShortDuration(a.TimeBox), finding.ShortDuration(req.TTL))
		case used[usedKey(a.Approver, a.At)] != "":
			reason = fmt.Sprintf("approved at %s, and break-glass %s already used that approval", at, used[usedKey(a.Approver, a.At)])
		default:
			check := rule.Count(approval.Target{Subject: subject}, d.Actor, []approval.Approval{a}, verify)
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
		return approval.Approval{}, fmt.Errorf("%w: %s is a production environment: break-glass needs a signed approval, and %s has not approved break-glass of %s: ask them to run %s", fault.ErrBlocked, env.Name, req.Approver, subject, ask)
	}
	return approval.Approval{}, fmt.Errorf("%w: %s is a production environment: break-glass needs a signed approval, and no approval by %s of %s counts (%s): ask them to run %s", fault.ErrBlocked, env.Name, req.Approver, subject, strings.Join(why, "; "), ask)
}

func usedKey(approver string, at time.Time) string {
	return approver + "@" + at.UTC().Format(time.RFC3339Nano)
}

// usedApprovals maps the approvals that break-glass records of env have
// used (approver and time) to the record: an approval is for one pause.
// Only records young enough to have used a still-valid approval are read.
func (s *Service) usedApprovals(ctx context.Context, env string, now time.Time) (map[string]string, error) {
	releases, err := s.d.Ledger.ListReleases(ctx, workflow.ReleaseFilter{App: s.d.Project.App, Env: env, From: now.Add(-ApprovalValidity - time.Hour)})
	if err != nil {
		return nil, fmt.Errorf("read break-glass records: %w", err)
	}
	used := map[string]string{}
	for _, r := range releases {
		if p := r.Checkpoints.BreakGlassPause; r.Kind == workflow.KindBreakGlass && p.Approver != "" && !p.ApprovedAt.IsZero() {
			used[usedKey(p.Approver, p.ApprovedAt)] = r.ID
		}
	}
	return used, nil
}

// sweepWindows removes from Argo CD the deny windows of break-glass
// records whose time box has ended, each once. A window's schedule is a
// minute of a date (cron "M H D Mon *"), which cron repeats every year
// (every leap year for 29 February): a closed window left on the project
// would pause the application again, unannounced, a year later. Argo CD
// lifts the pause at the end of the time box by itself, but only relcap
// knows the window is done with, so every break-glass command (start,
// status, end) first removes the closed windows relcap made, whether or
// not anyone ran end, identified by exactly the window its record holds
// (application, schedule, duration), never another.
func (s *Service) sweepWindows(ctx context.Context, sw workflow.SyncWindows) error {
	d := s.d
	releases, err := d.Ledger.ListReleases(ctx, workflow.ReleaseFilter{App: d.Project.App, Limit: 500})
	if err != nil {
		return fmt.Errorf("read break-glass records: %w", err)
	}
	now := d.Clock.Now()
	for _, r := range releases {
		p := r.Checkpoints.BreakGlassPause
		if r.Kind != workflow.KindBreakGlass || p.Window == nil || !p.WindowRemoved.IsZero() || !now.After(p.ExpiresAt) {
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
