package breakglass

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
)

// Status is an active break-glass with its live drift.
type Status struct {
	Record
	Left  time.Duration `json:"left"`
	Drift []Drift       `json:"drift"`
	// Held is the break-glass's window as Argo CD has it now, with
	// Active; nil when the project no longer has it (it closed and relcap
	// removed it, or someone removed it by hand) or the record holds the
	// pause with a saved policy.
	Held *workflow.SyncWindow `json:"held,omitempty"`
}

// Status reports the active break-glass of env: time left, whether Argo
// CD still holds its window, and the resources whose live state differs
// from Git. It first removes windows whose time box ended.
func (s *Service) Status(ctx context.Context, envName string) (Status, error) {
	if sw, err := s.syncWindows(); err == nil {
		if err := s.sweepWindows(ctx, sw); err != nil {
			return Status{}, err
		}
	}
	return s.statusOf(ctx, envName)
}

func (s *Service) statusOf(ctx context.Context, envName string) (Status, error) {
	b, app, err := s.activeIn(ctx, envName)
	if err != nil {
		return Status{}, err
	}
	rc, err := s.control()
	if err != nil {
		return Status{}, err
	}
	drift, err := rc.Drift(ctx, app)
	if err != nil {
		return Status{}, fmt.Errorf("read drift of %s: %w", app.Name, err)
	}
	st := Status{Record: b, Left: b.ExpiresAt.Sub(s.d.Clock.Now()), Drift: drift}
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

func (s *Service) activeIn(ctx context.Context, envName string) (Record, appstate.AppRef, error) {
	env, err := s.d.Project.Env(envName)
	if err != nil {
		return Record{}, appstate.AppRef{}, err
	}
	active, err := s.Active(ctx)
	if err != nil {
		return Record{}, appstate.AppRef{}, err
	}
	for _, b := range active {
		if b.Env == env.Name {
			return b, env.AppRef(), nil
		}
	}
	return Record{}, appstate.AppRef{}, fmt.Errorf("%w: no active break-glass in %s", fault.ErrUsage, env.Name)
}

// End captures the live drift as an environment-repo change for review,
// then ends the pause: it removes the break-glass's deny window from the
// project (Argo CD resumes automated sync and self-heal at once), or, for
// a record made before sync windows, restores exactly the sync policy
// saved at start and checks it took. It journals each. With no drift there
// is nothing to capture (after the time box, self-heal has usually put
// Git's state back already).
func (s *Service) End(ctx context.Context, envName string) (Status, workflow.EnvChange, error) {
	d := s.d
	sw, swErr := s.syncWindows()
	if swErr == nil {
		if err := s.sweepWindows(ctx, sw); err != nil {
			return Status{}, workflow.EnvChange{}, err
		}
	}
	st, err := s.statusOf(ctx, envName)
	if err != nil {
		return st, workflow.EnvChange{}, err
	}
	env, _ := d.Project.Env(envName)
	app := env.AppRef()
	var change workflow.EnvChange
	var capturePR *forge.PullRequestRecord
	if len(st.Drift) > 0 {
		if change, capturePR, err = s.capture(ctx, env, st); err != nil {
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
	r.Status, r.EndedAt, r.UpdatedAt = workflow.ReleaseEnded, d.Clock.Now(), d.Clock.Now()
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
func (s *Service) restorePolicy(ctx context.Context, app appstate.AppRef, saved workflow.SyncPolicy) error {
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

// capture commits the live drift of st to a relcap branch of the
// environment repository and, where the repository reviews changes in pull
// requests, opens one for it; it journals what it did.
func (s *Service) capture(ctx context.Context, env workflow.Environment, st Status) (workflow.EnvChange, *forge.PullRequestRecord, error) {
	d := s.d
	app := env.AppRef()
	capturer, ok := d.EnvRepo.(Capturer)
	if !ok || d.EnvRepo == nil {
		return workflow.EnvChange{}, nil, workflow.MissingPort("environment-repo capture")
	}
	path := fmt.Sprintf("breakglass/%s/%s.yaml", env.Name, st.ID)
	// The capture is committed to the environment repository, which
	// people and systems outside relcap read: the live state and the
	// reason are masked like everything relcap writes.
	change, err := capturer.Capture(ctx, CaptureRequest{Env: env.Name, ID: st.ID, Target: env.EnvRepo, Path: path,
		Content: d.Secrets.ScrubBytes(captureDocument(st, d.Clock.Now())),
		Message: d.Secrets.Scrub(fmt.Sprintf("relcap: capture break-glass %s in %s for review\n\n%s\n\nRelcap-Break-Glass: %s\nRelcap-Environment: %s\n", st.ID, env.Name, st.Reason, st.ID, env.Name))})
	if err != nil {
		return workflow.EnvChange{}, nil, fmt.Errorf("capture drift of %s: %w (reconciliation is still paused)", app.Name, err)
	}
	var pr *forge.PullRequestRecord
	captured := BreakGlassCaptured{ID: st.ID, Branch: change.Branch, Commit: change.Commit, Resources: len(st.Drift)}
	if env.EnvRepo.Review.PullRequests() {
		// Reviewed the way every change of this repository is: in a
		// pull request, which people merge or close (relcap never
		// merges a capture: it records what was done by hand).
		if pr, err = s.openCapturePullRequest(ctx, env, st, change); err != nil {
			return change, nil, fmt.Errorf("open a pull request for the capture of %s: %w (reconciliation is still paused; relcap breakglass end --env %s again)", app.Name, err, env.Name)
		}
		captured.PullRequest, captured.URL = pr.Number, pr.URL
	}
	if _, err := d.Journal.Append(ctx, captured); err != nil {
		return change, nil, err
	}
	return change, pr, nil
}

// captureDocument is the file a break-glass leaves for review: what was
// changed by hand, as it runs, resource by resource.
func captureDocument(st Status, now time.Time) []byte {
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
// branch. Its title and body are masked like everything relcap sends a
// forge.
func (s *Service) openCapturePullRequest(ctx context.Context, env workflow.Environment, st Status, change workflow.EnvChange) (*forge.PullRequestRecord, error) {
	if s.d.Forges == nil {
		return nil, workflow.MissingPort("forge")
	}
	fg, err := s.d.Forges.OpenForge(ctx, env.EnvRepo.Review)
	if err != nil {
		return nil, err
	}
	body := fmt.Sprintf("relcap captured the live drift of break-glass `%s` in **%s** (%d resource(s)) for review: merge it to keep what was changed by hand, or close it to let Git's state stand.\n\nReason: %s\n\n---\nrelcap-break-glass: %s\n",
		st.ID, env.Name, len(st.Drift), st.Reason, st.ID)
	title := fmt.Sprintf("relcap: break-glass %s in %s: captured drift for review", st.ID, env.Name)
	pr, err := fg.OpenPullRequest(ctx, forge.OpenPullRequestRequest{Head: change.Branch, Base: env.EnvRepo.Branch,
		Title: s.d.Secrets.Scrub(title), Body: s.d.Secrets.Scrub(body)})
	if err != nil {
		return nil, err
	}
	return &forge.PullRequestRecord{Forge: env.EnvRepo.Review.Forge, Number: pr.Number, URL: pr.URL, Head: change.Branch, Base: env.EnvRepo.Branch, HeadSHA: pr.HeadSHA, State: pr.State}, nil
}
