package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// RollbackRequest asks to restore a previous release of an environment.
type RollbackRequest struct {
	Env string
	To  string // release ID to restore
}

// StartRollback creates a rollback release: a new environment-repo change
// that restores the environment file as a previous release converged with
// it, pinning again the digest it ran (never Argo CD's history rollback,
// which fights automated sync). It is refused with ErrIncompatible
// when that release cannot run against the data shape today's release
// wrote. Run drives it through promotion (copy is a no-op: the bytes are
// there) and convergence.
func (s *Service) StartRollback(ctx context.Context, req RollbackRequest) (*Release, error) {
	d := s.d
	env, err := d.Project.Env(req.Env)
	if err != nil {
		return nil, err
	}
	target, err := d.Ledger.LoadRelease(ctx, req.To)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, fmt.Errorf("%w: no release %s in the ledger", fault.ErrUsage, req.To)
	}
	if err != nil {
		return nil, err
	}
	if target.Env != env.Name {
		return nil, fmt.Errorf("%w: release %s was a release to %s, not %s", fault.ErrUsage, target.ID, target.Env, env.Name)
	}
	digest := target.Checkpoints.Digest
	if digest.IsZero() || !target.Checkpoints.Converged() {
		return nil, fmt.Errorf("%w: release %s never converged in %s, so there is nothing proven to return to; pick a converged release", fault.ErrIncompatible, target.ID, env.Name)
	}
	current, err := s.currentSchema(ctx, env.Name, target.ID)
	if err != nil {
		return nil, err
	}
	if !target.Compatibility.Accepts(current.schema) {
		msg := fmt.Sprintf("release %s accepts data schema %s, but %s left schema %d in %s; roll forward instead, or migrate the data back first",
			target.ID, schemaRange(target.Compatibility), current.id, current.schema, env.Name)
		return nil, s.journalFailure(ctx, fmt.Errorf("%w: %s", fault.ErrIncompatible, msg), journal.RollbackRefused{Env: env.Name, To: target.ID, Reason: msg})
	}
	now := d.Clock.Now()
	r := d.Project.NewReleaseOf(NewReleaseID(d.Project.App, env.Name, now), env.Name, env.Registry.Repository+"@"+digest.String(), d.Actor, now)
	r.Kind, r.RollbackOf, r.Compatibility = KindRollback, target.ID, target.Compatibility
	for _, k := range []StepKind{StepOwnership, StepPlanReview, StepApply} {
		st := r.Step(k)
		st.Status, st.Message = Skipped, "rollback: restores a release's environment file; no infrastructure change"
	}
	r.Checkpoints.Digest, r.Checkpoints.DigestRepository = digest, env.Registry.Repository
	if err := s.signRelease(ctx, env, r); err != nil {
		return nil, s.journalFailure(ctx, err, journal.RollbackRefused{Env: env.Name, To: target.ID, Reason: err.Error()})
	}
	// The environment file as the target converged: undoing a bad manifest
	// change along with a bad digest (a failed sync) needs both.
	r.Checkpoints.RestoreFrom = target.Checkpoints.EnvCommit
	if err := d.Ledger.SaveRelease(ctx, r); err != nil {
		return nil, fmt.Errorf("save release %s: %w", r.ID, err)
	}
	if current.id != "" {
		if prev, err := d.Ledger.LoadRelease(ctx, current.id); err == nil && prev.Status != ReleaseRolledBack {
			prev.Status = ReleaseRolledBack
			prev.UpdatedAt = now
			if err := d.Ledger.SaveRelease(ctx, prev); err != nil {
				return nil, fmt.Errorf("mark %s rolled back: %w", prev.ID, err)
			}
		}
	}
	if err := s.journal(ctx, journal.RollbackStarted{Release: r.ID, Env: env.Name, To: target.ID, Digest: digest.String(), Replacing: current.id, Schema: current.schema}); err != nil {
		return nil, err
	}
	return r, s.linkSession(ctx, r.ID)
}

type schemaHolder struct {
	id     string
	schema int
}

// currentSchema is the data schema the environment's latest release (other
// than except) declared: the shape its data has now.
func (s *Service) currentSchema(ctx context.Context, env, except string) (schemaHolder, error) {
	releases, err := s.d.Ledger.ListReleases(ctx, ReleaseFilter{App: s.d.Project.App, Env: env, Limit: 50})
	if err != nil {
		return schemaHolder{}, err
	}
	for _, r := range releases { // newest first
		if r.ID == except || !r.Checkpoints.Landed() {
			continue // never reached the cluster
		}
		return schemaHolder{id: r.ID, schema: r.Compatibility.Schema}, nil
	}
	return schemaHolder{}, nil
}

func schemaRange(c Compatibility) string {
	switch {
	case c.MinSchema != 0 && c.MaxSchema != 0:
		return fmt.Sprintf("%d–%d", c.MinSchema, c.MaxSchema)
	case c.MinSchema != 0:
		return fmt.Sprintf("≥ %d", c.MinSchema)
	case c.MaxSchema != 0:
		return fmt.Sprintf("≤ %d", c.MaxSchema)
	case c.Schema != 0:
		return fmt.Sprint(c.Schema)
	}
	return "any"
}
