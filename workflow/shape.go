package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/tfplan"
)

// Shape is what a release carries: infrastructure only (a reviewed plan
// with changes, no image), an image only (no plan, or a plan with nothing
// to apply), or both. It decides which steps run and which are skipped,
// and what "succeeded" means for the release: every shape ends with its
// own evidence.
type Shape string

// The shapes. ShapeUndecided is a release whose plan has not been reviewed
// yet while it has an image: the plan decides between Image and Both.
const (
	ShapeUndecided      Shape = ""
	ShapeInfrastructure Shape = "infrastructure"
	ShapeImage          Shape = "image"
	ShapeBoth           Shape = "both"
)

// String is the shape's name, "undecided" for the zero value.
func (s Shape) String() string {
	if s == ShapeUndecided {
		return "undecided"
	}
	return string(s)
}

// Ships reports whether the shape ships an image (promotion and the
// digest's convergence run).
func (s Shape) Ships() bool { return s == ShapeImage || s == ShapeBoth }

// ShapeFacts are what DecideShape decides from: what the release was
// given, and what its reviewed plan contains.
type ShapeFacts struct {
	// Image: the release has an image (a reference or a resolved digest).
	Image bool
	// PlanSkipped: the release has no boundary stage (a promotion, a
	// rollback).
	PlanSkipped bool
	// PlanReviewed: plan review has a plan; PlanChanges says whether
	// applying it changes anything.
	PlanReviewed, PlanChanges bool
}

// ShapeDecision is a decided shape and why, in a sentence for the
// decision map and the journal.
type ShapeDecision struct {
	Shape Shape
	Why   string
}

// DecideShape is the one place a release's shape is decided. A release
// without an image is infrastructure-only (relcap promote may still give
// it one before its promotion step, which makes it both); with an image it
// is image-only when it has no plan or an empty one, both when its plan
// changes something, and undecided until its plan is reviewed.
func DecideShape(f ShapeFacts) ShapeDecision {
	switch {
	case f.PlanSkipped && f.Image:
		return ShapeDecision{ShapeImage, "image only: no infrastructure stage"}
	case f.PlanSkipped:
		return ShapeDecision{ShapeImage, "image only: no infrastructure stage; the image is still to be given (relcap promote --image REF)"}
	case !f.Image && f.PlanReviewed && f.PlanChanges:
		return ShapeDecision{ShapeInfrastructure, "infrastructure only: the plan changes infrastructure and no image was given"}
	case !f.Image && f.PlanReviewed:
		return ShapeDecision{ShapeInfrastructure, "infrastructure only: the plan has no changes and no image was given; nothing ships"}
	case !f.Image:
		return ShapeDecision{ShapeInfrastructure, "infrastructure only: no image was given (relcap promote --image REF makes it both)"}
	case f.PlanReviewed && f.PlanChanges:
		return ShapeDecision{ShapeBoth, "infrastructure and image: the plan changes infrastructure and an image was given"}
	case f.PlanReviewed:
		return ShapeDecision{ShapeImage, "image only: the plan has no changes, so apply is skipped"}
	}
	return ShapeDecision{ShapeUndecided, "an image was given; the plan review decides whether infrastructure ships too"}
}

// ShapeOf decides r's shape from what the release itself records, for a
// screen or a report (a release written before shapes has none stored).
// plan is r's reviewed plan, nil when it has none or it is not at hand.
func ShapeOf(r *Release, plan *tfplan.Summary) ShapeDecision {
	f := ShapeFacts{
		Image:       r.Image != "" || !r.Checkpoints.Digest.IsZero(),
		PlanSkipped: r.Step(StepPlanReview).Status == Skipped,
	}
	switch {
	case plan != nil && plan.Fingerprint != "":
		f.PlanReviewed, f.PlanChanges = true, plan.HasChanges()
	case r.Checkpoints.Applied.NoChanges:
		f.PlanReviewed = true
	case !r.Checkpoints.Applied.IsZero():
		f.PlanReviewed, f.PlanChanges = true, true
	}
	return DecideShape(f)
}

// StepPlan is what a release's shape makes of one step, as the decision
// map shows it: whether it runs, and why not.
type StepPlan struct {
	Step StepKind
	Runs bool
	Why  string
}

// PlanSteps says, for each step, whether r's shape runs it and why not
// (a step already skipped by its kind says its own reason).
func PlanSteps(r *Release, d ShapeDecision) []StepPlan {
	out := make([]StepPlan, 0, len(StepKinds))
	for _, k := range StepKinds {
		p := StepPlan{Step: k, Runs: true}
		rec := r.Step(k)
		switch {
		case rec.Status == Skipped:
			p.Runs, p.Why = false, rec.Message
		case k == StepApply && d.Shape == ShapeImage:
			p.Runs, p.Why = false, "the plan has no changes: nothing to apply"
		case k == StepPromotion && d.Shape == ShapeInfrastructure:
			p.Runs, p.Why = false, "infrastructure only: no image to promote"
		case k == StepConvergence && d.Shape == ShapeInfrastructure:
			p.Why = "watches the applications the applied resources affect (skipped when none)"
		}
		out = append(out, p)
	}
	return out
}

// AffectedApps are the Argo CD applications an applied plan affects: the
// environment's application when the plan changes Kubernetes objects
// (tfplan.WritesKubernetes); none otherwise. It returns the addresses that
// affect it, for the record.
func AffectedApps(plan tfplan.Summary, env Environment) (apps []appstate.AppRef, by []string) {
	by = plan.KubernetesChanges()
	if env.ArgoCD.App == "" || len(by) == 0 {
		return nil, nil
	}
	return []appstate.AppRef{env.AppRef()}, by
}

// The run's side of shapes: decided (and journaled when it changes)
// before each step, which it may skip or run as an infrastructure-only
// step, and the status the release ends with.

// decideShape decides r's shape from its image and reviewed plan, and
// records it (saved, journaled) when it changed.
func (run *releaseRun) decideShape(ctx context.Context) (ShapeDecision, error) {
	var plan *tfplan.Summary
	if fp := run.r.Checkpoints.Fingerprint; fp != "" {
		p, err := run.svc.d.Ledger.LoadPlan(ctx, fp)
		if err != nil {
			return ShapeDecision{}, fmt.Errorf("load plan %s: %w", ShortHash(fp), err)
		}
		plan = &p
	}
	d := ShapeOf(run.r, plan)
	if d.Shape == run.r.Shape {
		return d, nil
	}
	run.r.Shape = d.Shape
	if err := run.save(ctx); err != nil {
		return d, err
	}
	return d, run.svc.journal(ctx, ReleaseShaped{Release: run.r.ID, Shape: d.Shape, Why: d.Why})
}

// byShape runs step k as the release's shape has it, when the shape
// decides the step (handled): the promotion of an infrastructure-only
// release is skipped, and its convergence watches the applications the
// applied plan affects, or is skipped when none. (An image-only
// release's empty plan is skipped by the apply step itself.)
func (run *releaseRun) byShape(ctx context.Context, k StepKind) (res StepResult, handled bool, err error) {
	if k != StepPromotion && k != StepConvergence {
		return StepResult{}, false, nil
	}
	d, err := run.decideShape(ctx)
	if err != nil || d.Shape != ShapeInfrastructure {
		return StepResult{}, err != nil, err
	}
	if k == StepPromotion {
		return StepResult{Status: Skipped, Message: "infrastructure only: no image to promote"}, true, nil
	}
	res, err = run.convergeAffected(ctx)
	return res, true, err
}

// convergeAffected is an infrastructure-only release's evidence stage: the
// applications its applied plan affects synced and healthy (no digest to
// look for), or nothing to watch.
func (run *releaseRun) convergeAffected(ctx context.Context) (StepResult, error) {
	var plan tfplan.Summary
	if fp := run.r.Checkpoints.Fingerprint; fp != "" && !run.r.Checkpoints.Applied.NoChanges {
		p, err := run.svc.d.Ledger.LoadPlan(ctx, fp)
		if err != nil {
			return StepResult{}, fmt.Errorf("load plan %s: %w", ShortHash(fp), err)
		}
		plan = p
	}
	apps, by := AffectedApps(plan, run.env)
	if len(apps) == 0 {
		return StepResult{Status: Skipped, Message: "infrastructure only: no applied resource affects an application (no Kubernetes object changed)"}, nil
	}
	d := run.svc.d
	if d.Convergence == nil {
		return StepResult{}, missingPort("convergence")
	}
	run.effort.BeginWait(StepConvergence.String())
	defer run.effort.EndWait(StepConvergence.String())
	var established []evidence.Evidence
	for _, app := range apps {
		st, v, err := run.svc.watch(run.env, func(s appstate.AppState) {
			run.sink(Event{Time: d.Clock.Now(), Kind: EventAppState, ReleaseID: run.r.ID, Step: StepConvergence, Status: Running, App: &s})
		}).Wait(ctx, app, Want{})
		if verr := run.svc.verdictError(app.Name, v, err); verr != nil {
			if err == nil || errors.Is(err, ErrWatchTimedOut) {
				return StepResult{}, &TerminalError{Err: verr}
			}
			return StepResult{}, verr
		}
		established = append(established, evidence.New(app.Name, evidence.AppConverged{Sync: st.SyncStatus, Revision: st.SyncRevision, Health: st.Health}))
	}
	names := make([]string, len(apps))
	for i, a := range apps {
		names[i] = a.Name
	}
	return StepResult{Status: Succeeded, Evidence: established,
		Message: fmt.Sprintf("infrastructure only: %s synced and healthy after the apply (affected by %s)", strings.Join(names, ", "), strings.Join(by, ", "))}, nil
}

// finish ends a release whose steps are all done, with the status and
// journal record of its shape.
func (run *releaseRun) finish(ctx context.Context) (msg string, err error) {
	r, now := run.r, run.svc.d.Clock.Now()
	if r.Shape == ShapeInfrastructure {
		r.Status, r.EndedAt = ReleaseSucceeded, now
		if err := run.save(ctx); err != nil {
			return "", err
		}
		return "succeeded", run.svc.journal(ctx, ReleaseSucceededRecord{Release: r.ID, Shape: r.Shape, Fingerprint: r.Checkpoints.Fingerprint,
			StateSerial: r.Checkpoints.Applied.StateSerial, NoChanges: r.Checkpoints.Applied.NoChanges})
	}
	r.Status, r.EndedAt = ReleaseConverged, now
	if err := run.save(ctx); err != nil {
		return "", err
	}
	return "converged", run.svc.journal(ctx, journal.ReleaseDone{Release: r.ID, Digest: r.Checkpoints.Digest.String(), Revision: r.Checkpoints.EnvCommit})
}

// The journal records of shapes.

// ReleaseShaped: the release's shape was decided (or changed: an image
// given to an infrastructure release makes it both).
type ReleaseShaped struct {
	Release string `json:"release"`
	Shape   Shape  `json:"shape"`
	Why     string `json:"why"`
}

// ReleaseSucceededRecord: an infrastructure-only release ended with its
// evidence: plan Fingerprint applied (StateSerial), or nothing to apply.
type ReleaseSucceededRecord struct {
	Release     string `json:"release"`
	Shape       Shape  `json:"shape"`
	Fingerprint string `json:"fingerprint,omitempty"`
	StateSerial int64  `json:"state_serial,omitempty"`
	NoChanges   bool   `json:"no_changes,omitempty"`
}

// The kinds of the shape records.
const (
	KindReleaseShaped    journal.Kind = "release.shaped"
	KindReleaseSucceeded journal.Kind = "release.succeeded"
)

// JournalKind names the record.
func (ReleaseShaped) JournalKind() journal.Kind { return KindReleaseShaped }

// JournalKind names the record.
func (ReleaseSucceededRecord) JournalKind() journal.Kind { return KindReleaseSucceeded }

// alreadyApplied refuses a new plan while r, past its apply, is the
// environment's open release, and says the ways to end it.
func alreadyApplied(r *Release) error {
	ways := fmt.Sprintf("end it as an infrastructure-only release (relcap resume %s, or relcap converge --env %s: the ownership check, then the applications it affects converged), ship an image with it (relcap promote --env %s --release %s --image REF), or abandon it (relcap release abandon %s --reason TEXT)",
		r.ID, r.Env, r.Env, r.ID, r.ID)
	if r.Image != "" || !r.Checkpoints.Digest.IsZero() {
		ways = fmt.Sprintf("finish it (relcap resume %s), or abandon it (relcap release abandon %s --reason TEXT)", r.ID, r.ID)
	}
	return fmt.Errorf("%w: release %s in %s already applied plan %s; %s before planning the next release", fault.ErrUsage, r.ID, r.Env, ShortHash(r.Checkpoints.Fingerprint), ways)
}

// awaitsInfraEnd reports whether r applied its plan, has no image and has
// not ended: an infrastructure-only release relcap converge ends.
func awaitsInfraEnd(r *Release) bool {
	return r.Kind == KindRelease && !r.Status.Done() && r.Step(StepApply).Status == Succeeded &&
		r.Image == "" && r.Checkpoints.Digest.IsZero()
}
