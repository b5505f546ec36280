package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Shared plans: with a team store, a saved plan file leaves the captain's
// machine encrypted to the people allowed to apply it, so a teammate on
// another machine applies exactly the reviewed plan. The file's SHA-256
// (PlanSummary.PlanHash, bound into the fingerprint) is checked after
// decryption, so the team store can lose or refuse a plan, never change it.

// SharedPlan is a saved plan file as the team store keeps it: the age
// ciphertext of the file, who it is encrypted to, who shared it and until
// when it may be fetched.
type SharedPlan struct {
	Fingerprint string
	Env         string
	Ciphertext  []byte
	Recipients  []PlanRecipient
	SharedBy    string
	SharedAt    time.Time
	ExpiresAt   time.Time
}

// PlanRecipient is one key a shared plan is encrypted to: the principal of
// the people file and the key's SHA-256 fingerprint (SHA256:…).
type PlanRecipient struct {
	Principal string `json:"principal"`
	Key       string `json:"key"`
}

// SkippedRecipient is a key of someone allowed to apply that a plan could
// not be encrypted to, and why (a key type age does not take).
type SkippedRecipient struct {
	Principal string `json:"principal"`
	Key       string `json:"key,omitempty"`
	Reason    string `json:"reason"`
}

// ShareRequest asks to share a saved plan with the people allowed to apply
// it in its environment.
type ShareRequest struct {
	Plan PlanSummary
	// Appliers are the principals allowed to apply (approvers.apply);
	// empty means every principal of the people file.
	Appliers  []string
	SharedBy  string
	ExpiresAt time.Time
}

// PlanShare is what sharing did: the keys the plan is encrypted to, the
// keys left out and why, and until when it is kept.
type PlanShare struct {
	Recipients []PlanRecipient
	Skipped    []SkippedRecipient
	SharedBy   string
	ExpiresAt  time.Time
}

// Principals are the recipients' principals, sorted, each once.
func (s PlanShare) Principals() []string {
	var out []string
	for _, r := range s.Recipients {
		out = append(out, r.Principal)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// FetchedPlan is a shared plan fetched from the team store and decrypted
// into this machine's private plan store.
type FetchedPlan struct {
	// File is the plan file written (mode 0600), its SHA-256 checked
	// against the reviewed plan's.
	File string
	// Key is the fingerprint of the applier's key that decrypted it.
	Key   string
	Share PlanShare
}

// MayApply refuses actor when the environment lists who may apply
// (approvers.apply) and actor is not among them. Unlisted means anyone: in
// a team store only the people file's principals can decrypt a plan
// anyway.
func (e Environment) MayApply(actor string) error {
	who := e.Approvals.Approvers.Apply
	if len(who) == 0 || slices.Contains(who, actor) {
		return nil
	}
	return fmt.Errorf("%w: %s may not apply plans in %s: approvers.apply lists %s", ErrBlocked, actor, e.Name, strings.Join(who, ", "))
}

// SharedPlanExpiry is when a plan made at created expires under policy p.
func (p PlanPolicy) SharedPlanExpiry(created time.Time) time.Time {
	expiry := p.Expiry
	if expiry <= 0 {
		expiry = DefaultPlanExpiry
	}
	return created.Add(expiry)
}

// sharePlan shares a newly saved plan through the vault, when there is
// one, and journals with whom and until when. A plan that cannot be
// shared fails: a team store that cannot hold it would leave the release
// to this machine without saying so.
func (s *Service) sharePlan(ctx context.Context, env Environment, p PlanSummary, progress func(string)) error {
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
	share, err := v.Share(ctx, ShareRequest{Plan: p, Appliers: env.Approvals.Approvers.Apply, SharedBy: s.d.Actor, ExpiresAt: s.d.Project.Plans.SharedPlanExpiry(created)})
	if err != nil {
		return fmt.Errorf("share plan %s in the team store: %w", ShortHash(p.Fingerprint), err)
	}
	for _, sk := range share.Skipped {
		progress(fmt.Sprintf("warning: plan %s is not encrypted to %s's key %s: %s", ShortHash(p.Fingerprint), sk.Principal, sk.Key, sk.Reason))
	}
	progress(fmt.Sprintf("plan %s shared in the team store with %s until %s", ShortHash(p.Fingerprint), strings.Join(share.Principals(), ", "), share.ExpiresAt.UTC().Format(time.RFC3339)))
	return s.journal(ctx, PlanShared{Env: env.Name, Fingerprint: p.Fingerprint, Recipients: share.Recipients, Skipped: share.Skipped,
		Principals: share.Principals(), ExpiresAt: share.ExpiresAt.UTC()})
}

// planFileToApply returns the plan file this machine applies: the ledger's
// path without a vault; with one, the plan store's own file, fetched from
// the team store and decrypted when this machine does not have it. An
// expired or undecryptable plan is refused before Terraform runs.
func (s *Service) planFileToApply(ctx context.Context, env Environment, p PlanSummary) (string, error) {
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
		if errors.Is(err, ErrNotFound) {
			return "", fmt.Errorf("%w: plan %s is neither in this machine's plan store nor in the team store (deleted after apply or expiry, or never shared); run relcap plan --env %s again", ErrStalePlan, ShortHash(p.Fingerprint), env.Name)
		}
		return "", err
	}
	return got.File, s.journal(ctx, PlanFetched{Env: env.Name, Fingerprint: p.Fingerprint, From: v.Where(), Key: got.Key,
		SharedBy: got.Share.SharedBy, ExpiresAt: got.Share.ExpiresAt.UTC()})
}

// forgetSharedPlan deletes the team store's copy of an applied plan.
func (s *Service) forgetSharedPlan(ctx context.Context, fp string) error {
	if s.d.PlanVault == nil {
		return nil
	}
	if err := s.d.PlanVault.Delete(ctx, fp); err != nil {
		return fmt.Errorf("plan %s was applied, but its copy in the team store could not be deleted (it is deleted when it expires): %w", ShortHash(fp), err)
	}
	return nil
}
