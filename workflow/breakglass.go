package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	ID          string     `json:"id"`
	Env         string     `json:"env"`
	App         string     `json:"app"`
	Actor       string     `json:"actor"`
	Approver    string     `json:"approver,omitempty"`
	Reason      string     `json:"reason"`
	StartedAt   time.Time  `json:"started_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	SavedPolicy SyncPolicy `json:"saved_policy"`
	Ended       bool       `json:"ended"`
	Capture     string     `json:"capture,omitempty"` // env-repo branch holding the captured drift
}

// Expired reports whether the break-glass outlived its TTL at now.
func (b BreakGlass) Expired(now time.Time) bool { return !b.Ended && now.After(b.ExpiresAt) }

func breakGlassOf(r *Release) (BreakGlass, error) {
	p := r.Checkpoints.BreakGlassPause
	b := BreakGlass{ID: r.ID, Env: r.Env, Actor: r.Captain, StartedAt: r.CreatedAt, Reason: p.Reason,
		Approver: p.Approver, Ended: r.Status == ReleaseEnded, Capture: p.Capture, ExpiresAt: p.ExpiresAt}
	switch {
	case p.SavedPolicy == nil:
		return b, fmt.Errorf("break-glass %s: the record has no saved sync policy", r.ID)
	case p.ExpiresAt.IsZero():
		return b, fmt.Errorf("break-glass %s: the record has no expiry", r.ID)
	}
	b.SavedPolicy = *p.SavedPolicy
	return b, nil
}

// BreakGlassRequest starts a break-glass.
type BreakGlassRequest struct {
	Env      string
	Reason   string
	TTL      time.Duration
	Approver string
}

// MaxBreakGlassTTL bounds how long reconciliation may stay paused.
const MaxBreakGlassTTL = 24 * time.Hour

func (s *Service) control() (ReconcileControl, error) {
	rc, ok := s.d.Convergence.(ReconcileControl)
	if !ok || s.d.Convergence == nil {
		return nil, missingPort("argo cd reconcile control")
	}
	return rc, nil
}

// StartBreakGlass pauses reconciliation of exactly the environment's one
// application (automated sync and self-heal off), after saving its policy,
// so a manual hotfix survives. It is time-boxed; a production environment
// needs an approver other than the actor.
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
	case env.Production && (req.Approver == "" || req.Approver == d.Actor):
		return BreakGlass{}, fmt.Errorf("%w: %s is a production environment: break-glass needs --approver NAME, someone other than %s", ErrBlocked, env.Name, d.Actor)
	}
	if active, err := s.ActiveBreakGlass(ctx); err != nil {
		return BreakGlass{}, err
	} else {
		for _, b := range active {
			if b.Env == env.Name {
				return BreakGlass{}, fmt.Errorf("%w: break-glass %s is already active in %s (by %s, until %s)", ErrBlocked, b.ID, env.Name, b.Actor, b.ExpiresAt.UTC().Format(time.RFC3339))
			}
		}
	}
	rc, err := s.control()
	if err != nil {
		return BreakGlass{}, err
	}
	app := env.AppRef()
	saved, err := rc.SyncPolicy(ctx, app)
	if err != nil {
		return BreakGlass{}, fmt.Errorf("read sync policy of %s: %w", app.Name, err)
	}
	now := d.Clock.Now()
	r := NewRelease(NewReleaseID(d.Project.App, env.Name, now)+"-bg", d.Project.App, env.Name, "", d.Actor, now)
	r.Kind = KindBreakGlass
	for i := range r.Steps {
		r.Steps[i].Status, r.Steps[i].Message = Skipped, "break-glass"
	}
	r.Checkpoints.BreakGlassPause = BreakGlassPause{SavedPolicy: &saved, ExpiresAt: now.Add(req.TTL).UTC(), Reason: req.Reason, Approver: req.Approver}
	// Record first, then pause: a crash in between leaves a record that
	// status and end can act on, never a paused app nobody knows about.
	if err := d.Ledger.SaveRelease(ctx, r); err != nil {
		return BreakGlass{}, fmt.Errorf("save break-glass: %w", err)
	}
	if _, err := d.Journal.Append(ctx, BreakGlassStarted{ID: r.ID, Env: env.Name, App: app.Name, Reason: req.Reason,
		Approver: req.Approver, ExpiresAt: r.Checkpoints.ExpiresAt, SavedPolicy: saved}); err != nil {
		return BreakGlass{}, err
	}
	// Paused means no automated sync at all; prune and self-heal only
	// exist under it (Argo CD refuses them alone). The saved policy brings
	// them back at the end.
	if err := rc.SetSyncPolicy(ctx, app, SyncPolicy{}); err != nil {
		// Nothing was paused: close the record so no phantom break-glass
		// stays active.
		r.Status, r.EndedAt, r.UpdatedAt = ReleaseEnded, d.Clock.Now(), d.Clock.Now()
		saveErr := d.Ledger.SaveRelease(context.WithoutCancel(ctx), r)
		_, jerr := d.Journal.Append(context.WithoutCancel(ctx), BreakGlassFailed{ID: r.ID, Error: err.Error()})
		return BreakGlass{}, errors.Join(fmt.Errorf("pause reconciliation of %s: %w; nothing was paused", app.Name, err), saveErr, journalFailed(jerr))
	}
	b, err := breakGlassOf(r)
	b.App = app.Name
	return b, err
}

// BreakGlassStatus is an active break-glass with its live drift.
type BreakGlassStatus struct {
	BreakGlass
	Left  time.Duration `json:"left"`
	Drift []Drift       `json:"drift"`
}

// StatusBreakGlass reports the active break-glass of env: time left and the
// resources whose live state differs from Git.
func (s *Service) StatusBreakGlass(ctx context.Context, envName string) (BreakGlassStatus, error) {
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
	return BreakGlassStatus{BreakGlass: b, Left: b.ExpiresAt.Sub(s.d.Clock.Now()), Drift: drift}, nil
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
// review, restores exactly the sync policy saved at start, checks it took,
// and journals both. With no drift there is nothing to capture.
func (s *Service) EndBreakGlass(ctx context.Context, envName string) (BreakGlassStatus, EnvChange, error) {
	d := s.d
	st, err := s.StatusBreakGlass(ctx, envName)
	if err != nil {
		return st, EnvChange{}, err
	}
	env, _ := d.Project.Env(envName)
	app := env.AppRef()
	var change EnvChange
	if len(st.Drift) > 0 {
		capturer, ok := d.EnvRepo.(Capturer)
		if !ok || d.EnvRepo == nil {
			return st, EnvChange{}, missingPort("environment-repo capture")
		}
		path := fmt.Sprintf("breakglass/%s/%s.yaml", env.Name, st.ID)
		change, err = capturer.Capture(ctx, CaptureRequest{Env: env.Name, ID: st.ID, Target: env.EnvRepo, Path: path,
			Content: captureDocument(st, d.Clock.Now()), Message: fmt.Sprintf("relcap: capture break-glass %s in %s for review\n\n%s\n\nRelcap-Break-Glass: %s\nRelcap-Environment: %s\n", st.ID, env.Name, st.Reason, st.ID, env.Name)})
		if err != nil {
			return st, EnvChange{}, fmt.Errorf("capture drift of %s: %w (reconciliation is still paused)", app.Name, err)
		}
		if _, err := d.Journal.Append(ctx, BreakGlassCaptured{ID: st.ID, Branch: change.Branch, Commit: change.Commit, Resources: len(st.Drift)}); err != nil {
			return st, change, err
		}
	}
	rc, err := s.control()
	if err != nil {
		return st, change, err
	}
	if err := rc.SetSyncPolicy(ctx, app, st.SavedPolicy); err != nil {
		return st, change, fmt.Errorf("restore sync policy of %s: %w", app.Name, err)
	}
	now, err := rc.SyncPolicy(ctx, app)
	if err != nil {
		return st, change, fmt.Errorf("read back sync policy of %s: %w", app.Name, err)
	}
	if now != st.SavedPolicy {
		return st, change, fmt.Errorf("sync policy of %s is %s after restore, want %s: restore it by hand", app.Name, now, st.SavedPolicy)
	}
	r, err := d.Ledger.LoadRelease(ctx, st.ID)
	if err != nil {
		return st, change, err
	}
	r.Status, r.EndedAt, r.UpdatedAt = ReleaseEnded, d.Clock.Now(), d.Clock.Now()
	r.Checkpoints.Capture = change.Branch
	if err := d.Ledger.SaveRelease(ctx, r); err != nil {
		return st, change, err
	}
	st.Ended, st.Capture = true, change.Branch
	_, err = d.Journal.Append(ctx, BreakGlassEnded{ID: st.ID, RestoredPolicy: st.SavedPolicy, Capture: change.Branch, Expired: st.Left < 0})
	return st, change, err
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
