package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/oplock"
	"github.com/relcap/relcap/workflow/tfplan"
)

// Abandoning a release: a person ends, with a reason, a release that will
// not ship. It is journaled, its saved plan is deleted (it must never be
// applied), and reports count it neither as a deployment nor as a change
// failure.

// Abandonment is who ended a release that will not ship, when and why.
type Abandonment struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// IsZero reports whether the release was not abandoned.
func (a Abandonment) IsZero() bool { return a.At.IsZero() && a.Reason == "" }

// PlanFileDiscarder is the optional ability of an Applier to delete the
// saved plan file of a plan that will never be applied (an abandoned
// release's), on this machine. Deleting a file that is gone is not an
// error.
type PlanFileDiscarder interface {
	DiscardPlanFile(ctx context.Context, plan tfplan.Summary) error
}

// MayAbandon returns release id if a person may abandon it: a release,
// promotion or rollback that has not ended. Every refusal wraps fault.ErrUsage
// and says what to do; it records nothing, so a command asks it before
// opening its session.
func (q *Records) MayAbandon(ctx context.Context, id, reason string) (*Release, error) {
	if strings.TrimSpace(reason) == "" {
		return nil, fmt.Errorf("%w: --reason is required: say why release %s will not ship (it is journaled)", fault.ErrUsage, id)
	}
	r, err := q.ledger.LoadRelease(ctx, id)
	switch {
	case errors.Is(err, fault.ErrNotFound):
		return nil, fmt.Errorf("%w: no release %s in the ledger: relcap journal list shows the releases recorded, or use the ID relcap printed", fault.ErrUsage, id)
	case err != nil:
		return nil, fmt.Errorf("load release %s: %w", id, err)
	case r.Kind == KindBreakGlass:
		return nil, fmt.Errorf("%w: %s is a break-glass, not a release: end it with relcap breakglass end", fault.ErrUsage, id)
	case r.Checkpoints.Rehearsal != "":
		return nil, fmt.Errorf("%w: release %s is rehearsal %s's drill: relcap rehearse --cleanup %s ends it", fault.ErrUsage, id, r.Checkpoints.Rehearsal, r.Checkpoints.Rehearsal)
	case r.Status.Done():
		return nil, fmt.Errorf("%w: release %s is %s already; only a release that has not ended can be abandoned", fault.ErrUsage, id, r.Status)
	}
	return r, nil
}

// Abandoned is a release abandoned, and the saved plan deleted with it
// ("" when it had none left).
type Abandoned struct {
	Release     *Release
	PlanDeleted string
}

// Abandon ends release id as abandoned, for reason: held like a run (no
// process may be driving it), its saved plan deleted (here and in the
// team store) unless applied, then the release saved and journaled.
func (s *Service) Abandon(ctx context.Context, id, reason string) (Abandoned, error) {
	reason = strings.TrimSpace(reason)
	if _, err := s.records.MayAbandon(ctx, id, reason); err != nil {
		return Abandoned{}, err
	}
	unlock, err := s.lockOperation(ctx, oplock.Scope{Kind: oplock.Run, Key: id}, id, "abandon release "+id)
	if err != nil {
		return Abandoned{}, err
	}
	defer unlock()
	// Read again under the lock: the holder may have ended it meanwhile.
	r, err := s.records.MayAbandon(ctx, id, reason)
	if err != nil {
		return Abandoned{}, err
	}
	deleted, err := s.discardPlan(ctx, r)
	if err != nil {
		return Abandoned{}, fmt.Errorf("delete the saved plan of release %s: %w (nothing was abandoned; try again)", id, err)
	}
	now := s.d.Clock.Now()
	r.Status, r.EndedAt, r.UpdatedAt = ReleaseAbandoned, now, now
	r.Abandonment = Abandonment{By: s.d.Actor, At: now.UTC(), Reason: reason}
	if err := s.d.Ledger.SaveRelease(ctx, r); err != nil {
		return Abandoned{}, fmt.Errorf("save release %s: %w", r.ID, err)
	}
	out := Abandoned{Release: r.Clone(), PlanDeleted: deleted}
	if err := s.linkSession(ctx, r.ID); err != nil {
		return out, err
	}
	if err := s.journal(ctx, ReleaseAbandonedRecord{Release: r.ID, Env: r.Env, By: s.d.Actor, Reason: reason, Shape: r.Shape, PlanDeleted: deleted}); err != nil {
		return out, err
	}
	s.publish(Event{Time: now, Kind: EventReleaseFinished, ReleaseID: r.ID, Status: Skipped, Message: "abandoned: " + reason, Release: r.Clone()})
	return out, nil
}

// discardPlan deletes r's saved plan, unless it was applied (Terraform
// deleted it then): the team store's copy and this machine's file. It
// returns the fingerprint deleted, or "".
func (s *Service) discardPlan(ctx context.Context, r *Release) (string, error) {
	fp := r.Checkpoints.Fingerprint
	if fp == "" || !r.Checkpoints.Applied.IsZero() {
		return "", nil
	}
	plan, err := s.d.Ledger.LoadPlan(ctx, fp)
	if errors.Is(err, fault.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("load plan %s: %w", ShortHash(fp), err)
	}
	if !plan.AppliedAt.IsZero() {
		return "", nil
	}
	if err := s.forgetSharedPlan(ctx, fp); err != nil {
		return "", err
	}
	if d, ok := s.d.Applier.(PlanFileDiscarder); ok {
		if err := d.DiscardPlanFile(ctx, plan); err != nil {
			return "", err
		}
	}
	return fp, nil
}

// abandonedPlan refuses to apply a plan of an abandoned release.
func abandonedPlan(r *Release, fp string) error {
	return fmt.Errorf("%w: plan %s belongs to release %s, abandoned by %s at %s (%s); run relcap plan --env %s for a new release",
		fault.ErrBlocked, ShortHash(fp), r.ID, r.Abandonment.By, r.Abandonment.At.UTC().Format(time.RFC3339), r.Abandonment.Reason, r.Env)
}

// ReleaseAbandonedRecord: a person ended the release before it shipped, for
// Reason; PlanDeleted is the saved plan deleted with it, if any.
type ReleaseAbandonedRecord struct {
	Release     string `json:"release"`
	Env         string `json:"env"`
	By          string `json:"by"`
	Reason      string `json:"reason"`
	Shape       Shape  `json:"shape,omitempty"`
	PlanDeleted string `json:"plan_deleted,omitempty"`
}

// KindReleaseAbandoned is the journal kind of ReleaseAbandonedRecord.
const KindReleaseAbandoned journal.Kind = "release.abandoned"

// JournalKind names the record.
func (ReleaseAbandonedRecord) JournalKind() journal.Kind { return KindReleaseAbandoned }
