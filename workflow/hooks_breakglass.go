package workflow

import (
	"context"
	"time"
)

// The hooks of the core that the features beside it (workflow/breakglass)
// use, and what the core itself keeps of break-glass: its record
// (KindBreakGlass, BreakGlassPause, the breakglass.* journal records) and
// its approval (ApproveBreakGlass).

// Ports are the ports this Service drives, for a feature package that acts
// through the same adapters, ledger, journal and clock as the core it
// works beside (breakglass.New(svc.Ports())).
func (s *Service) Ports() Deps { return s.d }

// VerifyWith is the approval verifier over v (nil without a people file),
// as every approval count of the core uses it.
func VerifyWith(ctx context.Context, v SignatureVerifier) VerifyFunc { return verifyWith(ctx, v) }

// MaxBreakGlassTTL bounds how long reconciliation may stay paused; an
// approval of a break-glass (ApproveBreakGlass) is for at most as long.
const MaxBreakGlassTTL = 24 * time.Hour

// BreakGlassSubject is what a break-glass approval in env is of: the
// environment and its application, e.g. "prod/web-prod".
func BreakGlassSubject(env Environment) string { return env.Name + "/" + env.ArgoCD.App }

// PlanSharing keeps a saved plan beyond this machine, through the team
// store (workflow/sharedplan over the PlanVault port): the plan step
// shares each new plan, the apply step and ApplyPlan ask which file to
// apply and forget the shared copy once applied. nil keeps plans on this
// machine: nothing is shared and the ledger's plan file is applied.
type PlanSharing interface {
	// Share shares a newly saved plan of env with who may apply it and
	// journals it; progress hears what it did.
	Share(ctx context.Context, env Environment, p PlanSummary, progress func(string)) error
	// FileToApply is the plan file this machine applies, fetched from
	// the team store when this machine lacks it; an expired or
	// undecryptable plan is refused before Terraform runs.
	FileToApply(ctx context.Context, env Environment, p PlanSummary) (string, error)
	// Forget deletes the team store's copy of an applied plan.
	Forget(ctx context.Context, fingerprint string) error
}

// sharePlan shares a newly saved plan, where plans are shared.
func (s *Service) sharePlan(ctx context.Context, env Environment, p PlanSummary, progress func(string)) error {
	if s.d.SharedPlans == nil {
		return nil
	}
	return s.d.SharedPlans.Share(ctx, env, p, progress)
}

// planFileToApply is the plan file this machine applies: the ledger's
// path where plans are not shared.
func (s *Service) planFileToApply(ctx context.Context, env Environment, p PlanSummary) (string, error) {
	if s.d.SharedPlans == nil {
		return p.PlanFile, nil
	}
	return s.d.SharedPlans.FileToApply(ctx, env, p)
}

// forgetSharedPlan deletes the shared copy of an applied plan, where plans
// are shared.
func (s *Service) forgetSharedPlan(ctx context.Context, fp string) error {
	if s.d.SharedPlans == nil {
		return nil
	}
	return s.d.SharedPlans.Forget(ctx, fp)
}

// ToolOutput is ctx for one operation of a feature outside a release run
// (relcap unlock, workflow/unlock): what tools print goes to
// Deps.ToolOutput as it comes, masked, and done journals it as step's
// output, joined to the operation's error.
func (s *Service) ToolOutput(ctx context.Context, step StepKind) (context.Context, func(error) error) {
	return s.withToolOutput(ctx, "", step)
}
