// Package sharedplan shares saved plans through a team store: with one
// (workflow.PlanVault), a saved plan file leaves the captain's machine
// encrypted to the people allowed to apply it, so a teammate on another
// machine applies exactly the reviewed plan. The file's SHA-256
// (PlanSummary.PlanHash, bound into the fingerprint) is checked after
// decryption, so the team store can lose or refuse a plan, never change
// it. It sits beside the release core (workflow) and fulfils the core's
// workflow.PlanSharing hook, which the plan step (Share) and the apply
// step and ApplyPlan (FileToApply, Forget) call.
package sharedplan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/tfplan"
)

// Sharing shares and fetches the plans of one Service through its
// PlanVault; without one, plans stay on this machine.
type Sharing struct {
	d workflow.Deps
}

// New is the plan sharing over d, the ports of the core Service that calls
// it (its PlanVault, Planner, Journal, Clock, Actor and Project).
func New(d workflow.Deps) *Sharing { return &Sharing{d: d} }

var _ workflow.PlanSharing = (*Sharing)(nil)

// Expiry is when a plan made at created expires under policy p.
func Expiry(p workflow.PlanPolicy, created time.Time) time.Time {
	expiry := p.Expiry
	if expiry <= 0 {
		expiry = workflow.DefaultPlanExpiry
	}
	return created.Add(expiry)
}

// journal appends rec to the session's journal.
func (s *Sharing) journal(ctx context.Context, rec journal.Record) error {
	if _, err := s.d.Journal.Append(ctx, rec); err != nil {
		return fmt.Errorf("journal %s: %w", rec.JournalKind(), err)
	}
	return nil
}

// Share shares a newly saved plan through the vault, when there is one,
// and journals with whom and until when. A plan that cannot be shared
// fails: a team store that cannot hold it would leave the release to this
// machine without saying so.
func (s *Sharing) Share(ctx context.Context, env workflow.Environment, p tfplan.Summary, progress func(string)) error {
	v := s.d.PlanVault
	// A plan with nothing to apply, or one no approval can make
	// applicable, is never applied: there is nothing to share.
	if _, refused := p.Refused(); v == nil || refused || !p.HasChanges() {
		return nil
	}
	created := p.CreatedAt
	if created.IsZero() {
		created = s.d.Clock.Now()
	}
	share, err := v.Share(ctx, tfplan.ShareRequest{Plan: p, Appliers: env.Approvals.Approvers.Apply, SharedBy: s.d.Actor, ExpiresAt: Expiry(s.d.Project.Plans, created)})
	if err != nil {
		return fmt.Errorf("share plan %s in the team store: %w", workflow.ShortHash(p.Fingerprint), err)
	}
	for _, sk := range share.Skipped {
		progress(fmt.Sprintf("warning: plan %s is not encrypted to %s's key %s: %s", workflow.ShortHash(p.Fingerprint), sk.Principal, sk.Key, sk.Reason))
	}
	progress(fmt.Sprintf("plan %s shared in the team store with %s until %s", workflow.ShortHash(p.Fingerprint), strings.Join(share.Principals(), ", "), share.ExpiresAt.UTC().Format(time.RFC3339)))
	return s.journal(ctx, journal.PlanShared{Env: env.Name, Fingerprint: p.Fingerprint, Recipients: share.Recipients, Skipped: share.Skipped,
		Principals: share.Principals(), ExpiresAt: share.ExpiresAt.UTC()})
}

// FileToApply returns the plan file this machine applies: the ledger's
// path without a vault; with one, the plan store's own file, fetched from
// the team store and decrypted when this machine does not have it. An
// expired or undecryptable plan is refused before Terraform runs.
func (s *Sharing) FileToApply(ctx context.Context, env workflow.Environment, p tfplan.Summary) (string, error) {
	v := s.d.PlanVault
	if v == nil {
		return p.PlanFile, nil
	}
	local, present := v.LocalPlanFile(p.Fingerprint)
	if present {
		return local, nil
	}
	// A state moved past the plan makes a fetched copy stale anyway, so
	// it is not fetched: the applier decides from its record of this
	// plan's runs whether one applied it (an apply interrupted after
	// Terraform finished) or the plan is stale. The moved state decides
	// only where the file is looked for, never that the plan was applied.
	if s.d.Planner != nil {
		if now, err := s.d.Planner.Inputs(ctx, env); err == nil {
			sameState := now.StateLineage == p.Inputs.StateLineage || p.Inputs.StateLineage == ""
			if sameState && now.StateSerial > p.Inputs.StateSerial {
				return local, nil
			}
		}
	}
	got, err := v.Fetch(ctx, p, s.d.Actor)
	if err != nil {
		if errors.Is(err, fault.ErrNotFound) {
			return "", fmt.Errorf("%w: plan %s is neither in this machine's plan store nor in the team store (deleted after apply or expiry, or never shared); run relcap plan --env %s again", fault.ErrStalePlan, workflow.ShortHash(p.Fingerprint), env.Name)
		}
		return "", err
	}
	return got.File, s.journal(ctx, journal.PlanFetched{Env: env.Name, Fingerprint: p.Fingerprint, From: v.Where(), Key: got.Key,
		SharedBy: got.Share.SharedBy, ExpiresAt: got.Share.ExpiresAt.UTC()})
}

// Forget deletes the team store's copy of an applied plan.
func (s *Sharing) Forget(ctx context.Context, fp string) error {
	if s.d.PlanVault == nil {
		return nil
	}
	if err := s.d.PlanVault.Delete(ctx, fp); err != nil {
		return fmt.Errorf("plan %s was applied, but its copy in the team store could not be deleted (it is deleted when it expires): %w", workflow.ShortHash(fp), err)
	}
	return nil
}
