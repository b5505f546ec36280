// Package breakglass is the audited, time-boxed pause of one application's
// reconciliation (relcap breakglass): start adds a deny sync window that
// Argo CD lifts by itself when the time box ends, status reads the live
// drift, end captures that drift for review and removes the window. It
// sits beside the release core (workflow), imports it, and acts through
// the same ports: a break-glass is kept in the ledger as a release record
// of kind workflow.KindBreakGlass, journaled with the core's records.
package breakglass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/journal"
)

// Record is an active or ended pause of one application's reconciliation.
type Record struct {
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
	Window *workflow.SyncWindow `json:"window,omitempty"`
	// WindowRemoved says relcap has removed Window from its project.
	WindowRemoved bool `json:"window_removed,omitempty"`
	// SavedPolicy is the sync policy a record from before sync windows
	// restores at end.
	SavedPolicy *workflow.SyncPolicy `json:"saved_policy,omitempty"`
	Ended       bool                 `json:"ended"`
	Capture     string               `json:"capture,omitempty"` // env-repo branch holding the captured drift
}

// Expired reports whether the break-glass outlived its time box at now.
func (b Record) Expired(now time.Time) bool { return !b.Ended && now.After(b.ExpiresAt) }

// SelfEnding reports whether Argo CD resumes reconciliation by itself when
// the time box ends (a sync window holds the pause), rather than only when
// relcap breakglass end restores a saved policy.
func (b Record) SelfEnding() bool { return b.Window != nil }

func recordOf(r *workflow.Release) (Record, error) {
	p := r.Checkpoints.BreakGlassPause
	b := Record{ID: r.ID, Env: r.Env, Actor: r.Captain, StartedAt: r.CreatedAt, Reason: p.Reason,
		Approver: p.Approver, Ended: r.Status == workflow.ReleaseEnded, Capture: p.Capture, ExpiresAt: p.ExpiresAt,
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

// Request starts a break-glass.
type Request struct {
	Env    string
	Reason string
	TTL    time.Duration
	// Approver is who approved it: in production, the person whose signed
	// break-glass approval (relcap approve --breakglass) is to count.
	Approver string
}

// ApprovalValidity is how long after it was given a break-glass approval
// can still start a break-glass. An emergency approval is for the
// emergency at hand: one given this long ago was given for a situation
// that may no longer be the one the captain faces, so it is asked again.
const ApprovalValidity = 30 * time.Minute

// Service starts, reports and ends break-glass pauses over the core's
// ports: Project, Ledger, Journal, Clock and Actor always; the Convergence
// adapter's SyncWindows and ReconcileControl abilities, the EnvRepo's
// Capturer and the Forges to act; Verifier and Secrets where wired.
type Service struct {
	d workflow.Deps
}

// New is the break-glass service over d, the ports of the core Service it
// works beside (workflow.Service.Deps).
func New(d workflow.Deps) *Service { return &Service{d: d} }

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

func (s *Service) control() (ReconcileControl, error) {
	rc, ok := s.d.Convergence.(ReconcileControl)
	if !ok || s.d.Convergence == nil {
		return nil, workflow.MissingPort("argo cd reconcile control")
	}
	return rc, nil
}

func (s *Service) syncWindows() (workflow.SyncWindows, error) {
	sw, ok := s.d.Convergence.(workflow.SyncWindows)
	if !ok || s.d.Convergence == nil {
		return nil, workflow.MissingPort("argo cd sync windows")
	}
	return sw, nil
}

// Active lists break-glass records not yet ended, newest first.
func (s *Service) Active(ctx context.Context) ([]Record, error) {
	d := s.d
	releases, err := d.Ledger.ListReleases(ctx, workflow.ReleaseFilter{App: d.Project.App, Limit: 500})
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, r := range releases {
		if r.Kind != workflow.KindBreakGlass || r.Status == workflow.ReleaseEnded {
			continue
		}
		b, err := recordOf(r)
		if err != nil {
			return nil, err
		}
		if env, err := d.Project.Env(r.Env); err == nil {
			b.App = env.ArgoCD.App
		}
		out = append(out, b)
	}
	return out, nil
}

// Expired lists the active break-glass records whose time box has run out,
// so every command can warn that reconciliation is still paused.
func (s *Service) Expired(ctx context.Context) ([]Record, error) {
	active, err := s.Active(ctx)
	if err != nil {
		return nil, err
	}
	now := s.d.Clock.Now()
	var out []Record
	for _, b := range active {
		if b.Expired(now) {
			out = append(out, b)
		}
	}
	return out, nil
}

// Paused reports whether env has an active break-glass.
func (s *Service) Paused(ctx context.Context, env string) (bool, error) {
	active, err := s.Active(ctx)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(active, func(b Record) bool { return b.Env == env }), nil
}

// Pause starts a break-glass of env for reason and ttl: how the
// interrupted-reconciliation drill stops reconciliation when no command
// is configured (rehearsal.Pauser).
func (s *Service) Pause(ctx context.Context, env, reason string, ttl time.Duration) error {
	_, err := s.Start(ctx, Request{Env: env, Reason: reason, TTL: ttl})
	return err
}

// Resume ends env's break-glass (rehearsal.Pauser).
func (s *Service) Resume(ctx context.Context, env string) error {
	_, _, err := s.End(ctx, env)
	return err
}
