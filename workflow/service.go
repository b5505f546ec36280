package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Deps are the ports a Service drives. Ledger, Journal and Clock are always
// needed; the stage ports are needed by the steps that use them, and a
// missing one fails that step with a clear message rather than at start-up,
// so commands that use one stage can run with only its adapter wired.
type Deps struct {
	Project     *Project
	Ledger      Ledger
	Journal     Journal
	Clock       Clock
	Ownership   []OwnershipSource
	Planner     Planner
	Applier     Applier
	Registry    Registry
	EnvRepo     EnvRepo
	Convergence Convergence
	// Actor is the person running this process (--actor or $USER).
	Actor string
	// ConvergeTimeout bounds the convergence watch; 0 means 10 minutes.
	ConvergeTimeout time.Duration
}

// Service runs releases step by step. It persists the release after every
// step and at every checkpoint inside a step, so a process killed at any
// point resumes without repeating a completed side effect.
type Service struct {
	d Deps

	mu     sync.Mutex
	clocks map[string]*EffortClock // per release, for UIs' Touch
}

// NewService checks the always-needed ports.
func NewService(d Deps) (*Service, error) {
	switch {
	case d.Project == nil:
		return nil, errors.New("workflow: no project configuration")
	case d.Ledger == nil:
		return nil, errors.New("workflow: no ledger")
	case d.Journal == nil:
		return nil, errors.New("workflow: no journal")
	case d.Clock == nil:
		return nil, errors.New("workflow: no clock")
	case d.Actor == "":
		return nil, fmt.Errorf("%w: no actor: pass --actor or set $USER", ErrUsage)
	}
	if d.ConvergeTimeout <= 0 {
		d.ConvergeTimeout = 10 * time.Minute
	}
	return &Service{d: d}, nil
}

// EventKind says what an Event reports.
type EventKind string

// Event kinds.
const (
	EventStepStarted     EventKind = "step-started"
	EventStepProgress    EventKind = "step-progress"
	EventStepFinished    EventKind = "step-finished"
	EventAppState        EventKind = "app-state"
	EventReleaseFinished EventKind = "release-finished"
)

// Event is what UIs see of a running release. Release is a snapshot the
// receiver may keep.
type Event struct {
	Time      time.Time  `json:"time"`
	Kind      EventKind  `json:"kind"`
	ReleaseID string     `json:"release_id"`
	Step      StepKind   `json:"step"`
	Status    StepStatus `json:"status"`
	Message   string     `json:"message,omitempty"`
	Findings  []Finding  `json:"findings,omitempty"`
	App       *AppState  `json:"app,omitempty"`
	Release   *Release   `json:"-"`
}

// EventSink receives events synchronously; it must not block for long.
type EventSink func(Event)

// StartRequest asks for a new release.
type StartRequest struct {
	Env           string
	Image         string
	Compatibility *Compatibility
	// PromoteOnly starts a promotion (relcap promote): the problem and
	// boundary steps are skipped and the run stops after the decision.
	PromoteOnly bool
	// ForceUnverified is the reason to promote a digest that has not
	// converged in the previous environment; empty means the policy holds.
	ForceUnverified string
}

// Start creates and persists a new release without running it.
func (s *Service) Start(ctx context.Context, req StartRequest) (*Release, error) {
	if _, err := s.d.Project.Env(req.Env); err != nil {
		return nil, err
	}
	if req.Image == "" {
		return nil, fmt.Errorf("%w: no image: pass --image REF (a tag or digest reference)", ErrUsage)
	}
	now := s.d.Clock.Now()
	r := NewRelease(NewReleaseID(s.d.Project.App, req.Env, now), s.d.Project.App, req.Env, req.Image, s.d.Actor, now)
	r.Compatibility = s.d.Project.Compatibility
	if req.Compatibility != nil {
		r.Compatibility = *req.Compatibility
	}
	if req.PromoteOnly {
		r.Kind = KindPromotion
		for _, k := range []StepKind{StepOwnership, StepPlanReview, StepApply} {
			st := r.Step(k)
			st.Status, st.Message = Skipped, "relcap promote: the decision step alone"
		}
	}
	if req.ForceUnverified != "" {
		r.Outputs[OutForceUnverified] = req.ForceUnverified
	}
	if err := s.d.Ledger.SaveRelease(ctx, r); err != nil {
		return nil, fmt.Errorf("save release %s: %w", r.ID, err)
	}
	if _, err := s.d.Journal.Append(ctx, "release.started", map[string]any{
		"release": r.ID, "kind": r.Kind, "env": r.Env, "image": r.Image, "captain": r.Captain, "force_unverified": req.ForceUnverified,
	}); err != nil {
		return nil, err
	}
	return r, nil
}

// Run drives the release from its first unfinished step until it converges,
// is blocked by policy (an error wrapping ErrBlocked), fails, or ctx ends.
// Steps that succeeded are never run again; a step that was running when
// the process died runs again and consults its checkpoints.
func (s *Service) Run(ctx context.Context, id string, sink EventSink) (*Release, error) {
	return s.RunUntil(ctx, id, sink, StepConvergence)
}

// RunUntil is Run that stops after the step last (relcap promote stops after
// the decision; relcap converge or resume take the release on).
func (s *Service) RunUntil(ctx context.Context, id string, sink EventSink, last StepKind) (*Release, error) {
	if sink == nil {
		sink = func(Event) {}
	}
	r, err := s.d.Ledger.LoadRelease(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load release %s: %w", id, err)
	}
	if r.Status.Done() {
		return r, nil
	}
	if r.Outputs == nil {
		// A stored release with no checkpoints yet decodes without a map.
		r.Outputs = map[string]string{}
	}
	env, err := s.d.Project.Env(r.Env)
	if err != nil {
		return r, err
	}
	clock := NewEffortClock(s.d.Clock, s.d.Project.Effort.IdleThreshold, r.ID)
	run := &releaseRun{svc: s, r: r, env: env, sink: sink, effort: clock}
	defer run.flushEffort(context.WithoutCancel(ctx))

	if r.Status == ReleaseBlocked || r.Status == ReleaseFailed {
		r.Status = ReleaseInProgress
	}
	for _, k := range StepKinds {
		if r.Step(k).Status.Done() {
			continue
		}
		if err := run.step(ctx, k); err != nil {
			return r.Clone(), err
		}
		if k == last && k != StepConvergence {
			return r.Clone(), nil
		}
	}
	now := s.d.Clock.Now()
	r.Status = ReleaseConverged
	r.EndedAt = now
	if err := run.save(ctx); err != nil {
		return r.Clone(), err
	}
	if _, err := s.d.Journal.Append(ctx, "release.converged", map[string]any{"release": r.ID, "digest": r.Outputs[OutDigest], "revision": r.Outputs[OutEnvCommit]}); err != nil {
		return r.Clone(), err
	}
	sink(Event{Time: now, Kind: EventReleaseFinished, ReleaseID: r.ID, Status: Succeeded, Message: "converged", Release: r.Clone()})
	return r.Clone(), nil
}

// releaseRun is the state of one Run call.
type releaseRun struct {
	svc    *Service
	r      *Release
	env    Environment
	sink   EventSink
	effort *EffortClock
}

// StepResult is what a step function returns when it did not fail.
type StepResult struct {
	Status   StepStatus
	Message  string
	Findings []Finding
	Evidence []Evidence
	// Err explains a Blocked result (wraps ErrBlocked).
	Err error
}

func (run *releaseRun) save(ctx context.Context) error {
	run.r.UpdatedAt = run.svc.d.Clock.Now()
	if err := run.svc.d.Ledger.SaveRelease(ctx, run.r); err != nil {
		return fmt.Errorf("save release %s: %w", run.r.ID, err)
	}
	return nil
}

// checkpoint records a side effect as done, durably, before anything else
// happens.
func (run *releaseRun) checkpoint(ctx context.Context, key, value string) error {
	run.r.Outputs[key] = value
	return run.save(ctx)
}

func (run *releaseRun) progress(k StepKind, msg string) {
	run.sink(Event{Time: run.svc.d.Clock.Now(), Kind: EventStepProgress, ReleaseID: run.r.ID, Step: k, Status: Running, Message: msg})
}

func (run *releaseRun) flushEffort(ctx context.Context) {
	if entries := run.effort.Drain(); len(entries) > 0 {
		// Effort is evidence too, but losing it must not fail a release;
		// the journal records the failure.
		if err := run.svc.d.Ledger.RecordEffort(ctx, entries); err != nil {
			_, _ = run.svc.d.Journal.Append(ctx, "effort.lost", map[string]string{"error": err.Error()})
		}
	}
}

// wait times machine work on step k as machine wait.
func wait[T any](run *releaseRun, k StepKind, f func() (T, error)) (T, error) {
	run.effort.BeginWait(k.String())
	defer run.effort.EndWait(k.String())
	return f()
}

func (run *releaseRun) step(ctx context.Context, k StepKind) error {
	d := run.svc.d
	rec := run.r.Step(k)
	resumed := rec.Status == Running
	rec.Status = Running
	rec.Attempts++
	rec.StartedAt = d.Clock.Now()
	rec.EndedAt = time.Time{}
	rec.Message = ""
	run.r.Status = ReleaseInProgress
	// No effort Touch here: a step's start and end say nothing about
	// whether anyone was watching. Staff effort comes from the cockpit's
	// input and focus (Service.Touch) and from logged off-tool time; the
	// run itself records only machine wait, so headless numbers are never
	// inflated by Terraform or Argo CD taking their time.
	if err := run.save(ctx); err != nil {
		return err
	}
	if _, err := d.Journal.Append(ctx, "step.started", map[string]any{"release": run.r.ID, "step": k.String(), "attempt": rec.Attempts, "resumed": resumed}); err != nil {
		return err
	}
	run.sink(Event{Time: rec.StartedAt, Kind: EventStepStarted, ReleaseID: run.r.ID, Step: k, Status: Running, Release: run.r.Clone()})

	res, err := run.runStep(ctx, k)
	rec = run.r.Step(k)
	rec.EndedAt = d.Clock.Now()
	switch {
	case err != nil && ctx.Err() != nil:
		// Interrupted: the step stays Running so resume re-enters it and
		// its checkpoints decide what is left to do.
		rec.Message = "interrupted: " + err.Error()
		saveCtx := context.WithoutCancel(ctx)
		_ = run.save(saveCtx)
		_, _ = d.Journal.Append(saveCtx, "step.interrupted", map[string]any{"release": run.r.ID, "step": k.String(), "error": err.Error()})
		run.flushEffort(saveCtx)
		return &StepError{Step: k, Err: err}
	case err != nil:
		rec.Status = Failed
		rec.Message = err.Error()
		rec.Findings = res.Findings
		run.r.Status = ReleaseFailed
	default:
		rec.Status = res.Status
		rec.Message = res.Message
		rec.Findings = res.Findings
		rec.Evidence = append(rec.Evidence, res.Evidence...)
		if res.Status == Blocked {
			run.r.Status = ReleaseBlocked
			err = res.Err
			if err == nil {
				err = fmt.Errorf("%w: %s", ErrBlocked, res.Message)
			}
		}
	}
	if serr := run.save(ctx); serr != nil {
		return serr
	}
	entry := map[string]any{"release": run.r.ID, "step": k.String(), "status": rec.Status.String(), "message": rec.Message}
	if len(res.Evidence) > 0 {
		entry["evidence"] = res.Evidence
	}
	if len(res.Findings) > 0 {
		entry["findings"] = res.Findings
	}
	if _, jerr := d.Journal.Append(ctx, "step.finished", entry); jerr != nil {
		return jerr
	}
	run.flushEffort(ctx)
	run.sink(Event{Time: rec.EndedAt, Kind: EventStepFinished, ReleaseID: run.r.ID, Step: k, Status: rec.Status, Message: rec.Message, Findings: rec.Findings, Release: run.r.Clone()})
	if err != nil {
		return &StepError{Step: k, Err: err}
	}
	return nil
}

func (run *releaseRun) runStep(ctx context.Context, k StepKind) (StepResult, error) {
	switch k {
	case StepOwnership:
		return run.ownership(ctx)
	case StepPlanReview:
		return run.planReview(ctx)
	case StepApply:
		return run.apply(ctx)
	case StepPromotion:
		return run.promote(ctx)
	case StepConvergence:
		return run.converge(ctx)
	}
	return StepResult{}, fmt.Errorf("unknown step %s", k)
}

func missingPort(name string) error {
	return &TerminalError{Err: fmt.Errorf("no %s adapter is wired for this command", name)}
}

func (run *releaseRun) ownership(ctx context.Context) (StepResult, error) {
	d := run.svc.d
	if len(d.Ownership) == 0 {
		return StepResult{}, missingPort("ownership source")
	}
	var objects []ManagedObject
	for _, src := range d.Ownership {
		objs, err := wait(run, StepOwnership, func() ([]ManagedObject, error) { return src.ManagedObjects(ctx, run.env) })
		if err != nil {
			return StepResult{}, fmt.Errorf("read managed objects: %w", err)
		}
		objects = append(objects, objs...)
	}
	findings := CheckOwnership(d.Project.Ownership, objects)
	if err := d.Ledger.RecordFindings(ctx, "ownership/"+run.env.Name, d.Clock.Now(), findings); err != nil {
		return StepResult{}, fmt.Errorf("record findings: %w", err)
	}
	res := StepResult{Status: Succeeded, Findings: findings,
		Evidence: []Evidence{{Kind: "ownership.checked", Subject: run.env.Name, Detail: map[string]string{"objects": fmt.Sprint(len(objects)), "findings": fmt.Sprint(len(findings))}}}}
	if Blocking(findings) {
		n := 0
		for _, f := range findings {
			if f.Severity == Blocker {
				n++
			}
		}
		res.Status = Blocked
		res.Message = fmt.Sprintf("%d ownership problem(s) must be resolved first", n)
		res.Err = fmt.Errorf("%w: %s", ErrOwnershipConflict, res.Message)
		return res, nil
	}
	res.Message = fmt.Sprintf("%d managed objects, one owner each", len(objects))
	return res, nil
}

func (run *releaseRun) planReview(ctx context.Context) (StepResult, error) {
	d := run.svc.d
	if d.Planner == nil {
		return StepResult{}, missingPort("planner")
	}
	var plan PlanSummary
	var note string
	if fp, ok := run.r.Output(OutFingerprint); ok {
		p, err := d.Ledger.LoadPlan(ctx, fp)
		if err != nil {
			return StepResult{}, fmt.Errorf("load plan %s: %w", fp, err)
		}
		inputs, err := wait(run, StepPlanReview, func() (PlanInputs, error) { return d.Planner.Inputs(ctx, run.env) })
		if err != nil {
			return StepResult{}, fmt.Errorf("read plan inputs: %w", err)
		}
		if reasons := StaleReasons(p.Inputs, inputs); len(reasons) > 0 {
			note = fmt.Sprintf("plan %s was stale (%s); planned again. ", shortFP(fp), reasons[0])
		} else {
			plan = p
		}
	}
	if plan.Fingerprint == "" {
		run.progress(StepPlanReview, "planning")
		p, err := wait(run, StepPlanReview, func() (PlanSummary, error) { return d.Planner.Plan(ctx, run.env, run.r.Captain) })
		if err != nil {
			return StepResult{}, fmt.Errorf("plan: %w", err)
		}
		if err := d.Ledger.SavePlan(ctx, p); err != nil {
			return StepResult{}, fmt.Errorf("save plan: %w", err)
		}
		if err := run.checkpoint(ctx, OutFingerprint, p.Fingerprint); err != nil {
			return StepResult{}, err
		}
		plan = p
	}
	res := StepResult{Findings: plan.Findings, Evidence: []Evidence{{Kind: "plan.fingerprint", Subject: plan.Fingerprint,
		Detail: map[string]string{"revision": plan.Inputs.Revision, "create": fmt.Sprint(plan.Counts.Create), "update": fmt.Sprint(plan.Counts.Update),
			"delete": fmt.Sprint(plan.Counts.Delete), "replace": fmt.Sprint(plan.Counts.ReplaceDeleteFirst + plan.Counts.ReplaceCreateFirst)}}}}
	if !plan.HasChanges() {
		res.Status = Succeeded
		res.Message = note + "no changes: infrastructure matches the configuration"
		return res, nil
	}
	approvals, err := d.Ledger.Approvals(ctx, ApprovePlan, plan.Fingerprint)
	if err != nil {
		return StepResult{}, fmt.Errorf("read approvals: %w", err)
	}
	check := CountApprovals(ApprovePlan, plan.Fingerprint, plan.Author, run.env.Approvals.Plan, run.env.Approvals.DistinctFromAuthor, approvals)
	if !check.Satisfied() {
		res.Status = Blocked
		res.Message = fmt.Sprintf("%splan %s needs %d more approval(s): relcap approve --plan %s", note, shortFP(plan.Fingerprint), check.Missing(), plan.Fingerprint)
		res.Err = fmt.Errorf("%w: %s", ErrApprovalRequired, res.Message)
		return res, nil
	}
	res.Status = Succeeded
	res.Message = fmt.Sprintf("%splan %s approved by %d", note, shortFP(plan.Fingerprint), len(check.Counted))
	for _, a := range check.Counted {
		res.Evidence = append(res.Evidence, Evidence{Kind: "plan.approval", Subject: plan.Fingerprint, Detail: map[string]string{"approver": a.Approver, "at": a.At.UTC().Format(time.RFC3339)}})
	}
	return res, nil
}

func (run *releaseRun) apply(ctx context.Context) (StepResult, error) {
	d := run.svc.d
	if _, done := run.r.Output(OutApplied); done {
		return StepResult{Status: Succeeded, Message: "applied earlier"}, nil
	}
	fp, ok := run.r.Output(OutFingerprint)
	if !ok {
		return StepResult{}, &TerminalError{Err: errors.New("no reviewed plan to apply")}
	}
	plan, err := d.Ledger.LoadPlan(ctx, fp)
	if err != nil {
		return StepResult{}, fmt.Errorf("load plan %s: %w", fp, err)
	}
	if !plan.HasChanges() {
		return StepResult{Status: Succeeded, Message: "nothing to apply"}, run.checkpoint(ctx, OutApplied, "no-changes")
	}
	if d.Applier == nil {
		return StepResult{}, missingPort("applier")
	}
	run.progress(StepApply, "applying plan "+shortFP(fp))
	// The applier checks the plan file and its inputs itself, and first
	// whether an interrupted run already applied it, so a resumed apply is
	// recognised rather than refused as stale.
	res, err := wait(run, StepApply, func() (ApplyResult, error) {
		return d.Applier.Apply(ctx, ApplyRequest{Env: run.env, Fingerprint: fp, PlanFile: plan.PlanFile, PlanHash: plan.PlanHash, Inputs: plan.Inputs})
	})
	switch {
	case errors.Is(err, ErrStalePlan):
		// The plan step plans again when the release resumes; approvals of
		// the old fingerprint do not carry over.
		run.r.Step(StepPlanReview).Status = Pending
		delete(run.r.Outputs, OutFingerprint)
		msg := fmt.Sprintf("plan %s is stale: %v; plan and approve again with relcap resume %s", shortFP(fp), err, run.r.ID)
		return StepResult{Status: Blocked, Message: msg, Err: fmt.Errorf("%w: %s", ErrStalePlan, msg)}, nil
	case errors.Is(err, ErrBlocked):
		return StepResult{Status: Blocked, Message: err.Error(), Err: err}, nil
	case err != nil:
		return StepResult{}, fmt.Errorf("apply plan %s: %w", shortFP(fp), err)
	}
	if err := run.checkpoint(ctx, OutApplied, fmt.Sprint(res.StateSerial)); err != nil {
		return StepResult{}, err
	}
	if err := d.Ledger.MarkPlanApplied(ctx, fp, d.Clock.Now()); err != nil {
		return StepResult{}, fmt.Errorf("mark plan applied: %w", err)
	}
	msg := "applied plan " + shortFP(fp)
	if res.AlreadyApplied {
		msg += " (completed by an earlier, interrupted run)"
	}
	return StepResult{Status: Succeeded, Message: msg,
		Evidence: []Evidence{{Kind: "plan.applied", Subject: fp, Detail: map[string]string{"state_serial": fmt.Sprint(res.StateSerial)}}}}, nil
}

func (run *releaseRun) promote(ctx context.Context) (StepResult, error) {
	d := run.svc.d
	if d.Registry == nil || d.EnvRepo == nil {
		return StepResult{}, missingPort("registry or environment-repo")
	}
	var res StepResult
	digestStr, ok := run.r.Output(OutDigest)
	source := run.r.Outputs["digest.repository"]
	if !ok {
		art, err := wait(run, StepPromotion, func() (Artifact, error) { return d.Registry.Resolve(ctx, run.r.Image) })
		if err != nil {
			return StepResult{}, fmt.Errorf("resolve %s: %w", run.r.Image, err)
		}
		first, err := d.Ledger.RecordSighting(ctx, run.r.Image, art.Digest, d.Clock.Now())
		if err != nil {
			return StepResult{}, fmt.Errorf("record sighting: %w", err)
		}
		if first.Digest != art.Digest {
			res.Findings = append(res.Findings, Finding{Severity: Warning, Code: "promotion.tag-moved", Subject: run.r.Image,
				Message:    fmt.Sprintf("the reference pointed to %s when first seen at %s; it now points to %s", first.Digest.Short(), first.At.UTC().Format(time.RFC3339), art.Digest.Short()),
				NextAction: "promote by digest to be sure which bytes you release"})
		}
		source = art.Repository
		res.Evidence = append(res.Evidence, Evidence{Kind: "digest.resolved", Subject: art.Digest.String(), Detail: map[string]string{
			"reference": run.r.Image, "repository": art.Repository, "media_type": art.MediaType, "platforms": strings.Join(art.Platforms, ","),
			"size": fmt.Sprint(art.Size), "created": art.Created.UTC().Format(time.RFC3339), "signed": fmt.Sprint(art.Signed()),
			"referrers": fmt.Sprint(len(art.Referrers)), "first_seen": first.At.UTC().Format(time.RFC3339)}})
		run.r.Outputs["digest.repository"] = source
		if err := run.checkpoint(ctx, OutDigest, art.Digest.String()); err != nil {
			return StepResult{}, err
		}
		digestStr = art.Digest.String()
	}
	digest, err := ParseDigest(digestStr)
	if err != nil {
		return StepResult{}, &TerminalError{Err: err}
	}
	from := source
	if prev, ok := d.Project.Previous(run.env.Name); ok && run.r.Kind != KindRollback {
		// A rollback restores bytes that already converged here; the order
		// of environments constrains new digests only.
		converged, err := d.Ledger.HasConverged(ctx, run.r.App, prev.Name, digest)
		if err != nil {
			return StepResult{}, fmt.Errorf("read convergence record: %w", err)
		}
		reason, forced := run.r.Output(OutForceUnverified)
		switch {
		case !converged && !forced:
			msg := fmt.Sprintf("%s has not converged in %s; promote it there first (or pass --force-unverified REASON)", digest.Short(), prev.Name)
			return StepResult{Status: Blocked, Message: msg, Findings: res.Findings, Err: fmt.Errorf("%w: %s", ErrNotPromotable, msg)}, nil
		case !converged:
			res.Findings = append(res.Findings, Finding{Severity: Warning, Code: "promotion.force-unverified", Subject: digest.String(),
				Message:    fmt.Sprintf("promoted without convergence in %s: %s", prev.Name, reason),
				NextAction: "watch this environment closely; the digest was not proven in " + prev.Name})
			if _, err := d.Journal.Append(ctx, "promotion.force-unverified", map[string]string{"release": run.r.ID, "digest": digest.String(), "previous": prev.Name, "reason": reason}); err != nil {
				return StepResult{}, err
			}
		}
		from = prev.Registry.Repository
	}
	if _, done := run.r.Output(OutCopied); !done {
		run.progress(StepPromotion, fmt.Sprintf("copying %s from %s to %s", digest.Short(), from, run.env.Registry.Repository))
		pr, err := wait(run, StepPromotion, func() (PromoteResult, error) {
			return d.Registry.Promote(ctx, PromoteRequest{Digest: digest, From: from, To: run.env.Registry.Repository})
		})
		if err != nil {
			return StepResult{Findings: res.Findings}, fmt.Errorf("copy %s: %w", digest.Short(), err)
		}
		if pr.Target.Digest != digest {
			return StepResult{}, &TerminalError{Err: fmt.Errorf("%w: copied %s, target has %s", ErrDigestMismatch, digest, pr.Target.Digest)}
		}
		if run.env.Registry.RequireSignature && !pr.Target.Signed() {
			msg := fmt.Sprintf("%s has no signature and %s requires one (registry.require_signature)", digest.Short(), run.env.Name)
			return StepResult{Status: Blocked, Message: msg, Findings: res.Findings, Err: fmt.Errorf("%w: %s", ErrNotPromotable, msg)}, nil
		}
		res.Evidence = append(res.Evidence, Evidence{Kind: "digest.verified", Subject: digest.String(), Detail: map[string]string{
			"repository": run.env.Registry.Repository, "signed": fmt.Sprint(pr.Target.Signed()), "referrers": fmt.Sprint(len(pr.Target.Referrers)),
			"blobs_uploaded": fmt.Sprint(pr.BlobsUploaded)}})
		if err := run.checkpoint(ctx, OutCopied, run.env.Registry.Repository); err != nil {
			return StepResult{}, err
		}
	}
	pin := PinRequest{Env: run.env.Name, ReleaseID: run.r.ID, Target: run.env.EnvRepo, Image: run.env.Registry.Repository, Digest: digest, Source: from}
	if run.r.Kind == KindRollback {
		pin.RestoreFrom = run.r.Outputs[OutRestoreFrom]
		what := fmt.Sprintf("Restore %s@%s, the digest release %s ran,", run.env.Registry.Repository, digest, run.r.RollbackOf)
		if pin.RestoreFrom != "" {
			what = fmt.Sprintf("Restore %s as release %s converged with it (at %s):\nthe digest it ran, %s@%s, and its manifests,", run.env.EnvRepo.File, run.r.RollbackOf, short(pin.RestoreFrom), run.env.Registry.Repository, digest)
		}
		pin.Message = fmt.Sprintf("relcap: roll back %s to release %s (%s)\n\n%s\nas a new change (never Argo CD's history rollback).\n\nRelcap-Release: %s\nRelcap-Environment: %s\nRelcap-Digest: %s\nRelcap-Rollback-Of: %s\n",
			run.env.Name, run.r.RollbackOf, digest.Short(), what, run.r.ID, run.env.Name, digest, run.r.RollbackOf)
	}
	if _, done := run.r.Output(OutEnvPinned); !done {
		run.progress(StepPromotion, "pinning "+digest.Short()+" on a relcap branch of the environment repo")
		ch, err := wait(run, StepPromotion, func() (EnvChange, error) { return d.EnvRepo.Pin(ctx, pin) })
		if err != nil {
			return StepResult{}, fmt.Errorf("pin %s in the environment repo: %w", digest.Short(), err)
		}
		run.r.Outputs[OutEnvBranch] = ch.Branch
		run.r.Outputs["envrepo.diff"] = ch.Diff
		if err := run.checkpoint(ctx, OutEnvPinned, ch.Commit); err != nil {
			return StepResult{}, err
		}
		res.Evidence = append(res.Evidence, Evidence{Kind: "envrepo.pinned", Subject: ch.Commit, Detail: map[string]string{"branch": ch.Branch, "pushed": fmt.Sprint(ch.Pushed)}})
	}
	if run.env.Approvals.Promotion > 0 {
		// Approvers review the pinned change itself, so the check comes
		// after the branch exists and before it lands.
		approvals, err := d.Ledger.Approvals(ctx, ApprovePromotion, run.r.ID)
		if err != nil {
			return StepResult{}, fmt.Errorf("read approvals: %w", err)
		}
		check := CountApprovals(ApprovePromotion, run.r.ID, run.r.Captain, run.env.Approvals.Promotion, run.env.Approvals.DistinctFromAuthor, approvals)
		if !check.Satisfied() {
			msg := fmt.Sprintf("the pin of %s on %s needs %d more approval(s) before it lands in %s: relcap approve --release %s", digest.Short(), run.r.Outputs[OutEnvBranch], check.Missing(), run.env.Name, run.r.ID)
			res.Status, res.Message, res.Err = Blocked, msg, fmt.Errorf("%w: %s", ErrApprovalRequired, msg)
			return res, nil
		}
	}
	if _, done := run.r.Output(OutEnvCommit); !done {
		run.progress(StepPromotion, "landing "+run.r.Outputs[OutEnvBranch]+" on "+run.env.EnvRepo.Branch)
		ch, err := wait(run, StepPromotion, func() (EnvChange, error) { return d.EnvRepo.Land(ctx, pin) })
		if err != nil {
			return StepResult{}, fmt.Errorf("land %s: %w", run.r.Outputs[OutEnvBranch], err)
		}
		if err := run.checkpoint(ctx, OutEnvCommit, ch.Commit); err != nil {
			return StepResult{}, err
		}
		res.Evidence = append(res.Evidence, Evidence{Kind: "envrepo.commit", Subject: ch.Commit, Detail: map[string]string{"branch": ch.Branch, "pushed": fmt.Sprint(ch.Pushed)}})
	}
	res.Status = Succeeded
	res.Message = fmt.Sprintf("%s in %s, pinned at %s", digest.Short(), run.env.Registry.Repository, short(run.r.Outputs[OutEnvCommit]))
	return res, nil
}

func (run *releaseRun) converge(ctx context.Context) (StepResult, error) {
	d := run.svc.d
	if d.Convergence == nil {
		return StepResult{}, missingPort("convergence")
	}
	digest, err := ParseDigest(run.r.Outputs[OutDigest])
	if err != nil {
		return StepResult{}, &TerminalError{Err: fmt.Errorf("no promoted digest: %w", err)}
	}
	want := Want{Revision: run.r.Outputs[OutEnvCommit], Digest: digest}
	app := AppRef{Env: run.env.Name, Server: run.env.ArgoCD.Server, Name: run.env.ArgoCD.App}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, d.ConvergeTimeout)
	defer cancel()
	run.effort.BeginWait(StepConvergence.String())
	defer run.effort.EndWait(StepConvergence.String())

	var evidence []Evidence
	if run.r.Kind == KindRollback {
		ev, err := run.endFailingSync(ctx, app, want)
		if err != nil {
			return StepResult{}, err
		}
		evidence = append(evidence, ev...)
	}
	st, v, err := WaitConverged(ctx, d.Convergence, app, want, func(s AppState) {
		s2 := s
		run.sink(Event{Time: d.Clock.Now(), Kind: EventAppState, ReleaseID: run.r.ID, Step: StepConvergence, Status: Running, App: &s2})
	})
	facts := map[string]string{"intended_revision": want.Revision, "digest": digest.String(), "sync": st.SyncStatus, "revision": st.SyncRevision, "health": st.Health}
	if err != nil {
		if parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return StepResult{}, &TerminalError{Err: fmt.Errorf("%w: timed out after %s: %s", ErrNotConverged, d.ConvergeTimeout, v.Reason)}
		}
		return StepResult{}, err
	}
	if v.Kind != VerdictConverged {
		f := Finding{Severity: Blocker, Code: "convergence." + v.Kind, Subject: app.Name, Message: v.Reason, NextAction: v.NextAction, Evidence: facts}
		return StepResult{Findings: []Finding{f}}, &TerminalError{Err: fmt.Errorf("%w: %s", ErrNotConverged, v.Reason)}
	}
	now := d.Clock.Now()
	if err := d.Ledger.RecordConvergence(ctx, ConvergenceRecord{ReleaseID: run.r.ID, App: run.r.App, Env: run.env.Name, Digest: digest, Revision: want.Revision, At: now}); err != nil {
		return StepResult{}, fmt.Errorf("record convergence: %w", err)
	}
	if err := run.checkpoint(ctx, OutConvergedAt, now.UTC().Format(time.RFC3339Nano)); err != nil {
		return StepResult{}, err
	}
	return StepResult{Status: Succeeded, Message: fmt.Sprintf("%s synced at %s, healthy, running %s", app.Name, short(want.Revision), digest.Short()),
		Evidence: append(evidence, Evidence{Kind: "app.converged", Subject: app.Name, Detail: facts})}, nil
}

// endFailingSync ends Argo CD's retries of a failed sync of another
// revision (the release being rolled back), which would hold the
// rollback's revision back until they run out. Only a Running operation
// that has already failed at least once is ended: a sync in progress is
// never cut short.
func (run *releaseRun) endFailingSync(ctx context.Context, app AppRef, want Want) ([]Evidence, error) {
	d := run.svc.d
	term, ok := d.Convergence.(OperationTerminator)
	if !ok {
		return nil, nil
	}
	st, err := d.Convergence.Get(ctx, app)
	if err != nil {
		return nil, fmt.Errorf("get application %s: %w", app.Name, err)
	}
	if st.Operation != OperationRunning || st.OperationRetries == 0 || st.OperationRevision == "" || st.OperationRevision == want.Revision {
		return nil, nil
	}
	run.progress(StepConvergence, fmt.Sprintf("ending Argo CD's retries of the failed sync of %s (attempt #%d)", short(st.OperationRevision), st.OperationRetries))
	detail := map[string]string{"app": app.Name, "revision": st.OperationRevision, "retries": fmt.Sprint(st.OperationRetries), "message": st.OperationMsg}
	if err := term.TerminateOperation(ctx, app); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// Ending the retries only saves time (the token may lack the
		// sync permission it takes): the rollback still converges once
		// they run out, so it waits rather than fails.
		detail["error"] = err.Error()
		run.progress(StepConvergence, fmt.Sprintf("could not end them (%v); waiting for Argo CD's retries to run out", err))
		_, jerr := d.Journal.Append(ctx, "convergence.terminate-failed", detail)
		return nil, jerr
	}
	if _, err := d.Journal.Append(ctx, "convergence.operation-terminated", detail); err != nil {
		return nil, err
	}
	return []Evidence{{Kind: "app.operation-terminated", Subject: app.Name, Detail: detail}}, nil
}

// WaitConverged is argo-cd's `app wait` algorithm: Get first and return if
// already converged; otherwise Watch from the returned version, judge each
// update with Converged, fail fast on a terminal verdict or on Healthy →
// Degraded, and stop at the context deadline. It returns the last state and
// its verdict; err is non-nil only when the watch itself failed or ctx ended.
// It waits with DefaultWaitOptions.
func WaitConverged(ctx context.Context, c Convergence, app AppRef, want Want, observe func(AppState)) (AppState, Verdict, error) {
	return WaitConvergedWith(ctx, c, app, want, observe, DefaultWaitOptions)
}

// WaitOptions are the timings of a convergence watch.
type WaitOptions struct {
	// TreeInterval is how often the watch reads the resource tree (when
	// the adapter is a ResourceTreeReader) and checks for a stall.
	TreeInterval time.Duration
	// ReadinessGrace is how long a Pod may fail readiness before the
	// rollout counts as failed.
	ReadinessGrace time.Duration
	// StallAfter is how long the application may show no change while
	// not converged before the watch asks the controller to reconcile it
	// (when the adapter is a Refresher); RefreshWithin is how long the
	// controller has to answer before the watch calls it stalled.
	StallAfter, RefreshWithin time.Duration
}

// DefaultWaitOptions: a failure named within seconds; a stalled controller
// within about a minute. Argo CD's controller answers a refresh in well
// under a second when it runs, so 20 s without an answer is not load.
var DefaultWaitOptions = WaitOptions{TreeInterval: 2 * time.Second, ReadinessGrace: ReadinessGrace, StallAfter: 30 * time.Second, RefreshWithin: 20 * time.Second}

// WaitConvergedWith is WaitConverged with explicit timings.
func WaitConvergedWith(ctx context.Context, c Convergence, app AppRef, want Want, observe func(AppState), o WaitOptions) (AppState, Verdict, error) {
	st, err := c.Get(ctx, app)
	if err != nil {
		return st, Verdict{}, fmt.Errorf("get application %s: %w", app.Name, err)
	}
	if observe != nil {
		observe(st)
	}
	v := Converged(st, want)
	if v.Kind == VerdictConverged || v.Terminal {
		return st, v, nil
	}
	updates, err := c.Watch(ctx, app, st.Version)
	if err != nil {
		return st, v, fmt.Errorf("watch application %s: %w", app.Name, err)
	}
	wasHealthy := st.Health == HealthHealthy
	tree, _ := c.(ResourceTreeReader)
	refresher, _ := c.(Refresher)
	var tick <-chan time.Time
	if tree != nil || refresher != nil {
		t := time.NewTicker(o.TreeInterval)
		defer t.Stop()
		tick = t.C
	}
	notReadySince := map[string]time.Time{}
	lastChange := time.Now()
	for {
		select {
		case <-ctx.Done():
			return st, v, ctx.Err()
		case <-tick:
			if refresher != nil && time.Since(lastChange) >= o.StallAfter {
				err := refresher.Refresh(ctx, app, o.RefreshWithin)
				if ctx.Err() != nil {
					return st, v, ctx.Err()
				}
				if errors.Is(err, ErrNotReconciled) {
					return st, stalled(st, o.RefreshWithin, time.Now()), nil
				}
				// Answered (or the server could not be asked, which the
				// watch reports): quiet is not a stall; ask again later.
				lastChange = time.Now()
			}
			if tree == nil {
				continue
			}
			resources, err := tree.ResourceTree(ctx, app)
			if err != nil {
				continue // the watch reports a lost server; the tree is a second opinion
			}
			now := time.Now()
			seen := map[string]bool{}
			for _, r := range resources {
				if isReadinessFailure(r) {
					k := r.Kind + "/" + r.Namespace + "/" + r.Name
					seen[k] = true
					if _, ok := notReadySince[k]; !ok {
						notReadySince[k] = now
					}
				}
			}
			for k := range notReadySince {
				if !seen[k] {
					delete(notReadySince, k)
				}
			}
			st.Tree = resources
			if observe != nil {
				observe(st)
			}
			if want.Revision != "" && (st.SyncStatus != SyncSynced || st.SyncRevision != want.Revision) {
				// The tree is still the previous revision's: the failing
				// Pods a rollback is replacing are not its failure.
				continue
			}
			if fv, failed := ResourceFailure(resources, func(r AppResource) time.Duration {
				return now.Sub(notReadySince[r.Kind+"/"+r.Namespace+"/"+r.Name])
			}, o.ReadinessGrace); failed {
				st.Resources = resources
				return st, fv, nil
			}
		case u, ok := <-updates:
			if !ok {
				if ctx.Err() != nil {
					return st, v, ctx.Err()
				}
				return st, v, fmt.Errorf("watch application %s: stream ended", app.Name)
			}
			if u.Err != nil {
				return st, v, fmt.Errorf("watch application %s: %w", app.Name, u.Err)
			}
			st = u.State
			lastChange = time.Now()
			if observe != nil {
				observe(st)
			}
			v = Converged(st, want)
			if wasHealthy && st.Health == HealthDegraded {
				v.Terminal = true
			}
			if v.Kind == VerdictConverged || v.Terminal {
				return st, v, nil
			}
			wasHealthy = wasHealthy || st.Health == HealthHealthy
		}
	}
}

// stalled is the verdict on an application whose controller did not
// answer a refresh: what Argo CD reports is frozen, neither converged nor
// failed, and waiting longer changes nothing until the controller runs.
func stalled(st AppState, within time.Duration, now time.Time) Verdict {
	last := "it reports no reconciliation time"
	if !st.ReconciledAt.IsZero() {
		last = fmt.Sprintf("it last reconciled at %s (%s ago)", st.ReconciledAt.UTC().Format("15:04:05 MST"), now.Sub(st.ReconciledAt).Round(time.Second))
	}
	return Verdict{Kind: VerdictReconcileStalled, Terminal: true,
		Reason: fmt.Sprintf("Argo CD's application controller did not reconcile %s within %s of a refresh request; %s, so its status is frozen at sync %s at %s, health %s",
			st.Name, within, last, st.SyncStatus, short(st.SyncRevision), st.Health),
		NextAction: "check argocd-application-controller (is it running, what do its logs say); nothing is lost meanwhile: once it runs, relcap converge picks up where Argo CD is, " +
			"and if the half-done rollout must not finish, relcap rollback"}
}

func shortFP(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}
