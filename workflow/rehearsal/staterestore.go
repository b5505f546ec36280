package rehearsal

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// The state-restore drill: a backup of the environment's Terraform state
// taken through Terraform (state pull), restored into a scratch copy of
// its root whose backend is a local file, and proven there by a plan that
// shows no change against the real resources. The real state is only
// read, and the drill checks at its end that it was not written (the same
// lineage and serial as before). Its three times (back up, restore,
// prove) are kept in Restore; it has no detect and recover times.

// VerdictStateRestored is the state-restore drill's outcome: the backup
// restored and a plan against the real resources found nothing to change.
const VerdictStateRestored appstate.VerdictKind = "state-restored"

// RestoreProof is what the state-restore drill measured and proved.
type RestoreProof struct {
	// Lineage and Serial identify the state backed up (the real one).
	Lineage string `json:"lineage"`
	Serial  int64  `json:"serial"`
	// Resources is how many resource instances the backup holds.
	Resources int `json:"resources"`
	// BackupTook, RestoreTook and ProveTook are the three times: state
	// pull, seeding the scratch backend and reading it back, and the
	// proving plan.
	BackupTook  time.Duration `json:"backup_ns"`
	RestoreTook time.Duration `json:"restore_ns"`
	ProveTook   time.Duration `json:"prove_ns,omitempty"`
	// Plan is the proving plan's fingerprint.
	Plan string `json:"plan,omitempty"`
}

// Total is the time from the backup's start to the proof.
func (p RestoreProof) Total() time.Duration { return p.BackupTook + p.RestoreTook + p.ProveTook }

// StateRestoreProven is the journal record of a proven restore.
type StateRestoreProven struct {
	Rehearsal      string  `json:"rehearsal"`
	Lineage        string  `json:"lineage"`
	Serial         int64   `json:"serial"`
	Resources      int     `json:"resources"`
	Plan           string  `json:"plan"`
	BackupSeconds  float64 `json:"backup_seconds"`
	RestoreSeconds float64 `json:"restore_seconds"`
	ProveSeconds   float64 `json:"prove_seconds"`
}

// KindStateRestoreProven is StateRestoreProven's journal kind.
const KindStateRestoreProven journal.Kind = "rehearsal.state_restore_proven"

// JournalKind is the name StateRestoreProven is stored under.
func (StateRestoreProven) JournalKind() journal.Kind { return KindStateRestoreProven }

// advanceStateRestore runs the state-restore phases left, each saved as
// it ends: back up and restore (PhaseBaseline → PhaseInjected), prove
// (→ PhaseDetected), then check the real state untouched and remove the
// scratch copy (→ PhaseRecovered).
func (s *Service) advanceStateRestore(ctx context.Context, env workflow.Environment, rh *Rehearsal) (*Rehearsal, error) {
	roots := s.roots
	if rh.Phase == PhaseBaseline {
		if err := s.backUpAndRestore(ctx, env, rh, roots); err != nil {
			return rh.Clone(), err
		}
	}
	if rh.Phase == PhaseInjected {
		if err := s.proveRestore(ctx, env, rh); err != nil {
			return rh.Clone(), err
		}
	}
	if rh.Phase == PhaseDetected || rh.Phase == PhaseRecovering {
		if err := s.realStateUntouched(ctx, env, rh); err != nil {
			return rh.Clone(), err
		}
	}
	if err := roots.DeleteScratch(ctx, rh.ID); err != nil {
		rh.Failure = joinFailure(rh.Failure, "the scratch copy was not removed: "+err.Error())
	}
	return s.finishRehearsal(ctx, rh)
}

// backUpAndRestore pulls the real state (the backup) and seeds a scratch
// copy of the root with it (the restore), timing each, and reads the
// restored state back: it must be the backup's lineage and serial with
// the real state's resources.
func (s *Service) backUpAndRestore(ctx context.Context, env workflow.Environment, rh *Rehearsal, roots Roots) error {
	d := s.d
	in, err := d.Planner.Inputs(ctx, env)
	if err != nil {
		return fmt.Errorf("rehearsal %s: read the state of %s: %w", rh.ID, env.Terraform.Dir, err)
	}
	if in.StateLineage == "" {
		why := fmt.Errorf("%w: rehearsal %s: %s has no Terraform state yet (nothing applied), so there is no backup to restore; apply first, then rehearse", fault.ErrBlocked, rh.ID, env.Name)
		return s.refuseScratchDrill(ctx, rh, roots, why)
	}
	real, err := roots.StateResources(ctx, env)
	if err != nil {
		return fmt.Errorf("rehearsal %s: read the resources of %s's state: %w", rh.ID, env.Name, err)
	}
	start := d.Clock.Now()
	backup, err := roots.PullState(ctx, env)
	if err != nil {
		return fmt.Errorf("rehearsal %s: back up the state of %s (terraform state pull): %w", rh.ID, env.Terraform.Dir, err)
	}
	backedUp := d.Clock.Now()
	tt, err := roots.CreateScratch(ctx, rh.ID, env, nil, backup)
	if err != nil {
		return fmt.Errorf("rehearsal %s: restore into a scratch copy of %s: %w (undo with relcap rehearse --cleanup %s)", rh.ID, env.Terraform.Dir, err, rh.ID)
	}
	scratch := scratchEnv(env, tt.Dir)
	restoredIn, err := d.Planner.Inputs(ctx, scratch)
	if err != nil {
		return fmt.Errorf("rehearsal %s: read the restored state: %w (undo with relcap rehearse --cleanup %s)", rh.ID, err, rh.ID)
	}
	restored, err := roots.StateResources(ctx, scratch)
	if err != nil {
		return fmt.Errorf("rehearsal %s: read the restored state's resources: %w (undo with relcap rehearse --cleanup %s)", rh.ID, err, rh.ID)
	}
	done := d.Clock.Now()
	rh.ScratchDir, rh.Baseline.Revision, rh.Baseline.Resources = tt.Dir, in.Revision, real
	rh.Restore = &RestoreProof{Lineage: in.StateLineage, Serial: in.StateSerial, Resources: len(real), BackupTook: backedUp.Sub(start), RestoreTook: done.Sub(backedUp)}
	switch {
	case restoredIn.StateLineage != in.StateLineage || restoredIn.StateSerial != in.StateSerial:
		rh.Failure = fmt.Sprintf("the restored state is lineage %s serial %d, the backup's %s serial %d", workflow.ShortHash(restoredIn.StateLineage), restoredIn.StateSerial, workflow.ShortHash(in.StateLineage), in.StateSerial)
	case !slices.Equal(sortedResources(restored), sortedResources(real)):
		rh.Failure = fmt.Sprintf("the restored state holds %s, the real one %s", resourceList(restored), resourceList(real))
	}
	rh.Phase, rh.InjectedAt = PhaseInjected, done.UTC()
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return err
	}
	return s.core.Journal(ctx, RehearsalInjected{Rehearsal: rh.ID, At: rh.InjectedAt})
}

// proveRestore plans the restored copy against the real resources: a
// plan with no change proves the backup restores. A plan with changes
// over the same resources means the environment itself has drift or
// pending changes, which prove nothing about the backup: the drill is
// refused, to be run again once the environment is converged.
func (s *Service) proveRestore(ctx context.Context, env workflow.Environment, rh *Rehearsal) error {
	d := s.d
	scratch := scratchEnv(env, rh.ScratchDir)
	start := d.Clock.Now()
	plan, err := s.rehearsalPlan(ctx, scratch, rh.DrillPlan)
	if err != nil {
		return fmt.Errorf("rehearsal %s: prove the restore: %w (continue with relcap rehearse --resume %s, or undo with relcap rehearse --cleanup %s)", rh.ID, err, rh.ID, rh.ID)
	}
	proved := d.Clock.Now()
	rh.DrillPlan = plan.Fingerprint
	rh.Restore.Plan, rh.Restore.ProveTook = plan.Fingerprint, proved.Sub(start)
	_, changes := planAgainst(plan, "") // no change is the drill's own: every one counts
	if why, refused := plan.Refused(); refused && rh.Failure == "" {
		rh.Failure = fmt.Sprintf("plan %s of the restored copy cannot be trusted: %s", workflow.ShortHash(plan.Fingerprint), why)
	}
	if (changes > 0 || len(plan.Drift) > 0) && rh.Failure == "" {
		return s.refuseScratchDrill(ctx, rh, s.roots, fmt.Errorf("%w: rehearsal %s: plan %s of the restored copy shows %d change(s) and %d drifted resource(s) over the real state's own resources, so %s has drift or pending changes and the plan proves nothing about the backup; converge first (relcap plan --env %s, then approve and apply), then rehearse",
			fault.ErrBlocked, rh.ID, workflow.ShortHash(plan.Fingerprint), changes, len(plan.Drift), env.Name, env.Name))
	}
	if rh.Failure == "" {
		rh.Detected = VerdictStateRestored
	}
	s.answerStateRestore(rh)
	rh.Phase, rh.DetectedAt = PhaseDetected, proved.UTC()
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return err
	}
	if rh.Detected != VerdictStateRestored {
		return nil
	}
	p := rh.Restore
	return s.core.Journal(ctx, StateRestoreProven{Rehearsal: rh.ID, Lineage: p.Lineage, Serial: p.Serial, Resources: p.Resources, Plan: p.Plan,
		BackupSeconds: p.BackupTook.Seconds(), RestoreSeconds: p.RestoreTook.Seconds(), ProveSeconds: p.ProveTook.Seconds()})
}

// answerStateRestore fills the four answers of a restore.
func (s *Service) answerStateRestore(rh *Rehearsal) {
	p := rh.Restore
	rh.IntendedRevision = workflow.Answer{Value: p.Lineage,
		Shown: fmt.Sprintf("intended revision: the backup of state %s serial %d (%d resource(s)), %s", workflow.ShortHash(p.Lineage), p.Serial, p.Resources, rootAt(rh.Baseline.Revision))}
	rh.ActualArtifact = workflow.Answer{Value: rh.ScratchDir,
		Shown: fmt.Sprintf("actual artifact: restored into the scratch copy %s (a local backend), backed up in %s and restored in %s", rh.ScratchDir, round(p.BackupTook), round(p.RestoreTook))}
	status := fmt.Sprintf("plan %s against the real resources found nothing to change, in %s", workflow.ShortHash(p.Plan), round(p.ProveTook))
	if rh.Failure != "" {
		status = rh.Failure
	}
	rh.ControllerStatus = workflow.Answer{Value: string(rh.Detected), Shown: "controller status: " + status}
	next := "none: the backup restores; keep the backend's own backups (versioning) and rehearse again after backend changes"
	if rh.Failure != "" {
		next = "find why the backup does not restore before relying on it: compare the backend's versions with the state relcap pulled"
	}
	rh.NextSafeAction = workflow.Answer{Value: next, Shown: "next safe action: " + next}
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }

// realStateUntouched checks that the real state is the one backed up:
// the drill only ever read it.
func (s *Service) realStateUntouched(ctx context.Context, env workflow.Environment, rh *Rehearsal) error {
	if rh.Phase != PhaseRecovering {
		rh.Phase = PhaseRecovering
		if err := s.saveRehearsal(ctx, rh); err != nil {
			return err
		}
	}
	in, err := s.d.Planner.Inputs(ctx, env)
	if err != nil {
		return fmt.Errorf("rehearsal %s: read the real state again: %w (continue with relcap rehearse --resume %s)", rh.ID, err, rh.ID)
	}
	if p := rh.Restore; p != nil && (in.StateLineage != p.Lineage || in.StateSerial != p.Serial) {
		// Someone applied meanwhile (the drill holds the promotion lock,
		// not Terraform's): said, since the drill cannot tell it apart.
		rh.Failure = joinFailure(rh.Failure, fmt.Sprintf("the real state moved during the drill (serial %d → %d): applied by someone else meanwhile, or written by the drill; check the journal", p.Serial, in.StateSerial))
	}
	rh.Phase, rh.RecoveredAt = PhaseRecovered, s.d.Clock.Now().UTC()
	return s.saveRehearsal(ctx, rh)
}
