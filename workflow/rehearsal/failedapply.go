package rehearsal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

// The failed-apply drill: a Terraform apply that fails on purpose, in a
// scratch copy of the environment's root seeded with a copy of its state,
// so the real state is only ever read. The copy is planned and applied
// through the same plan and apply code as any root (the fingerprint, the
// saved plan, approvals by the environment's plan rule, the stale-plan
// checks); only its Terraform directory differs.

const (
	// rehearsalResource is the resource whose creation fails.
	rehearsalResource = "terraform_data.relcap_rehearsal"
	// rehearsalDrillFile is the file the drill adds to the scratch copy.
	rehearsalDrillFile = "relcap_rehearsal_failed_apply.tf"
)

// rehearsalDrillTF fails during apply, after Terraform created the
// resource: a failed provisioner leaves it tainted, the partial state a
// real failed apply leaves.
var rehearsalDrillTF = []byte(`# relcap rehearse --drill failed-apply: fails on purpose, in a scratch copy only.
resource "terraform_data" "relcap_rehearsal" {
  provisioner "local-exec" {
    command = "echo 'relcap rehearsal: failing on purpose' >&2; exit 1"
  }
}
`)

// scratchEnv is env with the drill's scratch copy as its Terraform root:
// the same name, so the same approval rules and people apply. The copy
// has the default workspace only (Roots.CreateScratch).
func scratchEnv(env workflow.Environment, dir string) workflow.Environment {
	e := env
	e.Terraform = workflow.TerraformTarget{Dir: dir, Workspace: "default", VarFiles: env.Terraform.VarFiles, Binary: env.Terraform.Binary}
	return e
}

// advanceFailedApply runs the failed-apply phases left, each saved as it
// ends, and removes the scratch copy once the drill is over.
func (s *Service) advanceFailedApply(ctx context.Context, env workflow.Environment, rh *Rehearsal) (*Rehearsal, error) {
	roots := s.roots
	if rh.Phase == PhaseBaseline {
		if err := s.injectFailedApply(ctx, env, rh, roots); err != nil {
			return rh.Clone(), err
		}
	}
	if rh.Phase == PhaseInjected {
		if err := s.detectFailedApply(ctx, env, rh, roots); err != nil {
			return rh.Clone(), err
		}
	}
	if rh.Phase == PhaseDetected || rh.Phase == PhaseRecovering {
		if err := s.recoverFailedApply(ctx, env, rh, roots); err != nil {
			if !errors.Is(err, fault.ErrNotConverged) {
				return rh.Clone(), err
			}
			rh.Failure = joinFailure(rh.Failure, "recovery did not return the scratch state to its baseline: "+err.Error())
		}
	}
	if err := roots.DeleteScratch(ctx, rh.ID); err != nil {
		rh.Failure = joinFailure(rh.Failure, "the scratch copy was not removed: "+err.Error())
	}
	return s.finishRehearsal(ctx, rh)
}

// injectFailedApply makes the scratch copy and its baseline, plans the
// drill there, refuses a plan that would change anything else, waits for
// the plan's approvals, and marks the drill injected: the apply that
// fails is the next phase's.
func (s *Service) injectFailedApply(ctx context.Context, env workflow.Environment, rh *Rehearsal, roots Roots) error {
	d := s.d
	if rh.ScratchDir == "" {
		// Made again from the start by a resumed drill that was killed
		// before this was saved: nothing was applied to it yet.
		state, err := roots.PullState(ctx, env)
		if err != nil {
			return fmt.Errorf("rehearsal %s: read the state of %s (terraform state pull): %w", rh.ID, env.Terraform.Dir, err)
		}
		in, err := d.Planner.Inputs(ctx, env)
		if err != nil {
			return fmt.Errorf("rehearsal %s: read the revision of %s: %w", rh.ID, env.Terraform.Dir, err)
		}
		tt, err := roots.CreateScratch(ctx, rh.ID, env, []ScratchFile{{Name: rehearsalDrillFile, Content: rehearsalDrillTF}}, state)
		if err != nil {
			return fmt.Errorf("rehearsal %s: make the scratch copy of %s: %w (undo with relcap rehearse --cleanup %s)", rh.ID, env.Terraform.Dir, err, rh.ID)
		}
		resources, err := roots.StateResources(ctx, scratchEnv(env, tt.Dir))
		if err != nil {
			return fmt.Errorf("rehearsal %s: read the scratch copy's state: %w (undo with relcap rehearse --cleanup %s)", rh.ID, err, rh.ID)
		}
		rh.ScratchDir, rh.Baseline.Revision, rh.Baseline.Resources = tt.Dir, in.Revision, resources
		if err := s.saveRehearsal(ctx, rh); err != nil {
			return err
		}
	}
	scratch := scratchEnv(env, rh.ScratchDir)
	plan, err := s.rehearsalPlan(ctx, scratch, rh.DrillPlan)
	if err != nil {
		return fmt.Errorf("rehearsal %s: %w (continue with relcap rehearse --resume %s, or undo with relcap rehearse --cleanup %s)", rh.ID, err, rh.ID, rh.ID)
	}
	if plan.Fingerprint != rh.DrillPlan {
		rh.DrillPlan = plan.Fingerprint
		if err := s.saveRehearsal(ctx, rh); err != nil {
			return err
		}
	}
	if why, refused := plan.Refused(); refused {
		return s.refuseScratchDrill(ctx, rh, roots, fmt.Errorf("%w: rehearsal %s: plan %s of the scratch copy cannot be applied as reviewed: %s", fault.ErrPlanRefused, rh.ID, workflow.ShortHash(plan.Fingerprint), why))
	}
	creates, other := planAgainst(plan, tfplan.ActionCreate)
	if other > 0 || !creates {
		return s.refuseScratchDrill(ctx, rh, roots, fmt.Errorf("%w: rehearsal %s: the environment has drift or pending changes: %d other change(s) (plan %s of a copy of %s%s); converge first (relcap plan --env %s, then approve and apply), then rehearse",
			fault.ErrBlocked, rh.ID, other, workflow.ShortHash(plan.Fingerprint), env.Terraform.Dir, notCreated(creates), env.Name))
	}
	if err := s.rehearsalApprovals(ctx, scratch, rh, plan); err != nil {
		return err
	}
	rh.Phase, rh.InjectedAt = PhaseInjected, d.Clock.Now().UTC()
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return err
	}
	return s.core.Journal(ctx, RehearsalInjected{Rehearsal: rh.ID, At: rh.InjectedAt, Plan: rh.DrillPlan})
}

func notCreated(creates bool) string {
	if creates {
		return ""
	}
	return ", and it does not create " + rehearsalResource
}

// planAgainst reports whether plan makes the one change the drill wants
// of rehearsalResource, and counts every other change: resources,
// outputs, actions.
func planAgainst(plan tfplan.Summary, want tfplan.Action) (found bool, other int) {
	other = len(plan.Outputs) + len(plan.Actions)
	for _, c := range plan.Changes {
		switch {
		case c.Action == tfplan.ActionNoop || c.Action == tfplan.ActionRead:
		case c.Address == rehearsalResource && c.Action == want:
			found = true
		default:
			other++
		}
	}
	return found, other
}

// rehearsalPlan is the scratch copy's plan: the saved one while it is not
// applied and nothing it was made from moved, else a new one, kept in the
// ledger and journaled as every plan is.
func (s *Service) rehearsalPlan(ctx context.Context, scratch workflow.Environment, fingerprint string) (tfplan.Summary, error) {
	d := s.d
	if fingerprint != "" {
		p, err := d.Ledger.LoadPlan(ctx, fingerprint)
		if err != nil && !errors.Is(err, fault.ErrNotFound) {
			return p, fmt.Errorf("load plan %s: %w", workflow.ShortHash(fingerprint), err)
		}
		if err == nil && p.AppliedAt.IsZero() {
			in, err := d.Planner.Inputs(ctx, scratch)
			if err != nil {
				return p, fmt.Errorf("read the inputs of plan %s: %w", workflow.ShortHash(fingerprint), err)
			}
			if len(tfplan.StaleReasons(p.Inputs, in)) == 0 {
				return p, nil
			}
		}
	}
	p, err := s.core.PlanRoot(ctx, scratch)
	if err != nil {
		return p, fmt.Errorf("plan the scratch copy %s: %w", scratch.Terraform.Dir, err)
	}
	return p, nil
}

// rehearsalApprovals stops the drill, resumable, while its plan lacks the
// approvals the environment's plan rule asks of any plan.
func (s *Service) rehearsalApprovals(ctx context.Context, scratch workflow.Environment, rh *Rehearsal, plan tfplan.Summary) error {
	check, err := s.core.Records().PlanApprovals(ctx, plan) // the scratch copy has its environment's name and rules
	if err != nil {
		return err
	}
	if check.Satisfied() {
		return nil
	}
	// The fingerprint ends the message, so it is copied whole.
	return fmt.Errorf("%w: rehearsal %s: plan %s of the scratch copy needs %d more approval(s) in %s (approvals.plan = %d)%s; once approved, continue with relcap rehearse --resume %s; approve with: relcap approve --plan %s",
		fault.ErrApprovalRequired, rh.ID, workflow.ShortHash(plan.Fingerprint), check.Missing(), scratch.Name, scratch.Approvals.Plan, check.NotCountedNote(), rh.ID, plan.Fingerprint)
}

// refuseScratchDrill ends a scratch-copy drill (failed-apply,
// state-restore) refused before anything was applied: the
// scratch copy is removed and the rehearsal abandoned with the reason.
func (s *Service) refuseScratchDrill(ctx context.Context, rh *Rehearsal, roots Roots, why error) error {
	if err := roots.DeleteScratch(ctx, rh.ID); err != nil {
		return errors.Join(why, err)
	}
	rh.State, rh.FinishedAt, rh.Failure = StateAbandoned, s.d.Clock.Now().UTC(), "refused: "+why.Error()
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return errors.Join(why, err)
	}
	return errors.Join(why, s.core.Journal(ctx, RehearsalAbandoned{Rehearsal: rh.ID, Phase: string(rh.Phase), Undone: "nothing applied; scratch copy removed"}))
}

// detectFailedApply applies the drill's plan, which must fail naming the
// drill's provisioner, and answers the four questions from what relcap
// showed and what the scratch state holds.
func (s *Service) detectFailedApply(ctx context.Context, env workflow.Environment, rh *Rehearsal, roots Roots) error {
	d := s.d
	scratch := scratchEnv(env, rh.ScratchDir)
	_, _, err := s.core.ApplyPlanIn(ctx, scratch, rh.DrillPlan)
	detectedAt := d.Clock.Now().UTC()
	var failed *workflow.ApplyFailedError
	var next string
	switch {
	case err == nil:
		rh.Failure = "not detected: plan " + workflow.ShortHash(rh.DrillPlan) + " applied although its provisioner exits 1"
	case errors.As(err, &failed):
		next = failed.NextAction
		if msg := failed.Err.Error(); strings.Contains(msg, "local-exec") && strings.Contains(msg, rehearsalResource) {
			rh.Detected = VerdictApplyFailed
		} else {
			rh.Failure = "misnamed: the apply failed without naming the local-exec provisioner of " + rehearsalResource + ": " + msg
		}
	case (errors.Is(err, fault.ErrStalePlan) || errors.Is(err, fault.ErrApplyOutcomeUnknown)) && ctx.Err() == nil:
		// Killed while Terraform applied: the state moved under the plan,
		// or the run's outcome is unknown (its Terraform killed too).
		// What the apply left is in the state.
		resources, serr := roots.StateResources(ctx, scratch)
		if serr != nil || !slices.Contains(resources, workflow.StateResource{Address: rehearsalResource, Tainted: true}) {
			return fmt.Errorf("rehearsal %s: apply plan %s: %w (undo with relcap rehearse --cleanup %s)", rh.ID, workflow.ShortHash(rh.DrillPlan), errors.Join(err, serr), rh.ID)
		}
		rh.Detected = VerdictApplyFailed
		next = s.core.NextAfterFailedApply(ctx, scratch)
	default:
		return fmt.Errorf("rehearsal %s: apply plan %s: %w (continue with relcap rehearse --resume %s, or undo with relcap rehearse --cleanup %s)", rh.ID, workflow.ShortHash(rh.DrillPlan), err, rh.ID, rh.ID)
	}
	resources, err := roots.StateResources(ctx, scratch)
	if err != nil {
		return fmt.Errorf("rehearsal %s: read the scratch state after the apply: %w (continue with relcap rehearse --resume %s)", rh.ID, err, rh.ID)
	}
	lockErr := roots.CheckStateLock(ctx, scratch)
	if lockErr != nil && !errors.Is(lockErr, fault.ErrLocked) {
		return fmt.Errorf("rehearsal %s: check the scratch state's lock: %w (continue with relcap rehearse --resume %s)", rh.ID, lockErr, rh.ID)
	}
	s.answerFailedApply(rh, resources, lockErr, next)
	rh.Phase, rh.DetectedAt = PhaseDetected, detectedAt
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return err
	}
	ttd, _ := rh.TimeToDetect()
	return s.core.Journal(ctx, RehearsalDetected{Rehearsal: rh.ID, Verdict: rh.Detected, Expected: rh.Expected, IntendedRevision: rh.IntendedRevision,
		ActualArtifact: rh.ActualArtifact, ControllerStatus: rh.ControllerStatus, NextSafeAction: rh.NextSafeAction, DetectSeconds: ttd.Seconds()})
}

// answerFailedApply fills the four answers of a failed apply.
func (s *Service) answerFailedApply(rh *Rehearsal, resources []workflow.StateResource, lockErr error, next string) {
	rh.IntendedRevision = workflow.Answer{Value: rh.DrillPlan,
		Shown: fmt.Sprintf("intended revision: plan %s: %s plus %s, in the scratch copy %s", rh.DrillPlan, rootAt(rh.Baseline.Revision), rehearsalDrillFile, rh.ScratchDir)}
	state := rehearsalResource + " absent"
	for _, r := range resources {
		if r.Address == rehearsalResource {
			state = rehearsalResource + " created"
			if r.Tainted {
				state = rehearsalResource + " tainted"
			}
		}
	}
	rh.ActualArtifact = workflow.Answer{Value: state,
		Shown: fmt.Sprintf("actual artifact: the scratch state holds %s, beside the %d resource(s) of the baseline", state, len(rh.Baseline.Resources))}
	if lockErr == nil {
		rh.ControllerStatus = workflow.Answer{Value: "state lock released",
			Shown: "controller status: Terraform's state lock is released (a plan with -lock=true -lock-timeout=0s took it at once)"}
	} else {
		rh.ControllerStatus = workflow.Answer{Value: "state lock held", Shown: "controller status: " + lockErr.Error()}
		rh.Failure = joinFailure(rh.Failure, "the state lock is still held after the failed apply")
	}
	if next != "" {
		rh.NextSafeAction = workflow.Answer{Value: next, Shown: "next safe action: " + next}
	}
}

// rootAt names the Terraform root by its Git revision.
func rootAt(rev string) string {
	if rev == "" {
		return "the root (no Git revision)"
	}
	return "the root at " + rev
}

// recoverFailedApply removes the drill's file, then plans and applies the
// scratch copy back to its baseline: the tainted resource destroyed.
func (s *Service) recoverFailedApply(ctx context.Context, env workflow.Environment, rh *Rehearsal, roots Roots) error {
	d := s.d
	scratch := scratchEnv(env, rh.ScratchDir)
	if rh.Phase != PhaseRecovering {
		rh.Phase = PhaseRecovering
		if err := s.saveRehearsal(ctx, rh); err != nil {
			return err
		}
	}
	if err := roots.RemoveScratchFile(ctx, rh.ID, rehearsalDrillFile); err != nil {
		return fmt.Errorf("rehearsal %s: %w", rh.ID, err)
	}
	plan, err := s.rehearsalPlan(ctx, scratch, rh.RecoveryPlan)
	if err != nil {
		return fmt.Errorf("rehearsal %s: recovery: %w (continue with relcap rehearse --resume %s)", rh.ID, err, rh.ID)
	}
	if plan.Fingerprint != rh.RecoveryPlan {
		rh.RecoveryPlan = plan.Fingerprint
		if err := s.saveRehearsal(ctx, rh); err != nil {
			return err
		}
	}
	if why, refused := plan.Refused(); refused {
		return fmt.Errorf("%w: recovery plan %s cannot be applied as reviewed: %s", fault.ErrNotConverged, workflow.ShortHash(plan.Fingerprint), why)
	}
	if _, other := planAgainst(plan, tfplan.ActionDelete); other > 0 {
		return fmt.Errorf("%w: recovery plan %s has %d change(s) besides destroying %s", fault.ErrNotConverged, workflow.ShortHash(plan.Fingerprint), other, rehearsalResource)
	}
	if plan.HasChanges() {
		if err := s.rehearsalApprovals(ctx, scratch, rh, plan); err != nil {
			return err
		}
		if _, _, err := s.core.ApplyPlanIn(ctx, scratch, plan.Fingerprint); err != nil {
			if ctx.Err() != nil || errors.Is(err, fault.ErrBlocked) {
				return fmt.Errorf("rehearsal %s: recovery: %w (continue with relcap rehearse --resume %s)", rh.ID, err, rh.ID)
			}
			return fmt.Errorf("%w: apply of recovery plan %s: %v", fault.ErrNotConverged, workflow.ShortHash(plan.Fingerprint), err)
		}
	}
	resources, err := roots.StateResources(ctx, scratch)
	if err != nil {
		return fmt.Errorf("rehearsal %s: read the scratch state after recovery: %w (continue with relcap rehearse --resume %s)", rh.ID, err, rh.ID)
	}
	if !slices.Equal(sortedResources(resources), sortedResources(rh.Baseline.Resources)) {
		return fmt.Errorf("%w: the scratch state holds %s, its baseline %s", fault.ErrNotConverged, resourceList(resources), resourceList(rh.Baseline.Resources))
	}
	rh.Phase, rh.RecoveredAt = PhaseRecovered, d.Clock.Now().UTC()
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return err
	}
	ttr, _ := rh.TimeToRecover()
	return s.core.Journal(ctx, RehearsalRecovered{Rehearsal: rh.ID, Plan: rh.RecoveryPlan, RecoverSeconds: ttr.Seconds()})
}

func sortedResources(rs []workflow.StateResource) []workflow.StateResource {
	out := slices.Clone(rs)
	slices.SortFunc(out, func(a, b workflow.StateResource) int { return strings.Compare(a.Address, b.Address) })
	return out
}

func resourceList(rs []workflow.StateResource) string {
	if len(rs) == 0 {
		return "no resources"
	}
	names := make([]string, len(rs))
	for i, r := range sortedResources(rs) {
		names[i] = r.Address
		if r.Tainted {
			names[i] += " (tainted)"
		}
	}
	return strings.Join(names, ", ")
}

// cleanupFailedApply undoes an unfinished failed-apply drill: its scratch
// copy is all it made (the real state was only read).
func (s *Service) cleanupFailedApply(ctx context.Context, rh *Rehearsal) (*Rehearsal, error) {
	if err := s.roots.DeleteScratch(ctx, rh.ID); err != nil {
		return rh.Clone(), err
	}
	rh.State, rh.FinishedAt = StateAbandoned, s.d.Clock.Now().UTC()
	if rh.Failure == "" {
		rh.Failure = "abandoned at phase " + string(rh.Phase) + ": cleaned up"
	}
	if err := s.saveRehearsal(ctx, rh); err != nil {
		return rh.Clone(), err
	}
	return rh.Clone(), s.core.Journal(ctx, RehearsalAbandoned{Rehearsal: rh.ID, Phase: string(rh.Phase),
		Undone: "scratch copy removed; nothing else to undo: the real state was only read"})
}
