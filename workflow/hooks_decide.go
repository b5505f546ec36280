package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/relcap/relcap/workflow/secret"
)

// DefaultArgoCDTokenEnv is the variable Argo CD's token is read from when
// an environment names none.
const DefaultArgoCDTokenEnv = "ARGOCD_AUTH_TOKEN"

// Credentials are where the project keeps credentials, for the wiring to
// make secret before anything is printed (secret.Set.LearnCredentials):
// Argo CD's default token variable and each environment's own, each
// environment's forge token variable, the variables of secret_env, and
// each environment repository's URL (which may carry a password).
func (p *Project) Credentials() secret.Credentials {
	c := secret.Credentials{Env: append([]string{DefaultArgoCDTokenEnv}, p.SecretEnv...)}
	for _, env := range p.Environments {
		if env.ArgoCD.TokenEnv != "" {
			c.Env = append(c.Env, env.ArgoCD.TokenEnv)
		}
		if env.EnvRepo.Review.TokenEnv != "" {
			c.Env = append(c.Env, env.EnvRepo.Review.TokenEnv)
		}
		c.URLs = append(c.URLs, env.EnvRepo.Path)
	}
	return c
}

// ApplyPlanIn applies the plan with this fingerprint in env, outside a
// release: ApplyPlan's environment from the configuration, or the
// failed-apply drill's scratch copy of it. It passes the one apply gate
// (applyThroughGate) with the plan's approvals counted, journals the
// attempt before Terraform may start, and journals how it ended: a
// refusal, an interruption, a stale plan, a failure with the next safe
// action, or the apply.
func (s *Service) ApplyPlanIn(ctx context.Context, env Environment, fingerprint string) (ApplyResult, PlanSummary, error) {
	d := s.d
	plan, err := d.Ledger.LoadPlan(ctx, fingerprint)
	if err != nil {
		return ApplyResult{}, plan, fmt.Errorf("load plan %s: %w", ShortHash(fingerprint), err)
	}
	if plan.Env != env.Name {
		return ApplyResult{}, plan, fmt.Errorf("%w: plan %s is %s's, not %s's", ErrUsage, ShortHash(fingerprint), plan.Env, env.Name)
	}
	res, gated, ran, err := s.applyThroughGate(ctx, applyGate{
		env: env, fingerprint: fingerprint, approvals: true,
		lockWhat: fmt.Sprintf("apply plan %s in %s", ShortHash(fingerprint), env.Name),
		// The Applier finds this machine's earlier runs of the plan itself.
		started: func(attempt ApplyRun) error {
			return s.journal(ctx, ApplyStarted{Env: env.Name, Fingerprint: fingerprint, Run: runRef(attempt)})
		},
		await: func(ctx context.Context, apply func(context.Context) (ApplyResult, error)) (ApplyResult, error) {
			tctx, done := s.withToolOutput(ctx, "", StepApply)
			res, err := measureWait(tctx, s, "unreleased/"+env.Name, StepApply, func() (ApplyResult, error) { return apply(tctx) })
			if jerr := done(nil); jerr != nil {
				err = errors.Join(err, jerr)
			}
			return res, err
		},
	})
	if gated.Fingerprint != "" {
		plan = gated
	}
	var refusal *applyRefusal
	if errors.As(err, &refusal) {
		return ApplyResult{}, plan, s.journalFailure(ctx, refusal.err, ApplyRefused{Fingerprint: fingerprint, Reason: refusal.err.Error()})
	}
	if !ran {
		return ApplyResult{}, plan, err
	}
	jctx := context.WithoutCancel(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		next := fmt.Sprintf("Terraform was interrupted and stopped cleanly; run relcap plan --env %s to see what is left, then approve and apply the new plan", env.Name)
		return ApplyResult{}, plan, s.journalFailure(jctx, fmt.Errorf("apply interrupted: %w; next: %s", err, next),
			ApplyInterrupted{Fingerprint: fingerprint, Error: err.Error(), NextAction: next})
	case errors.Is(err, ErrApplyOutcomeUnknown):
		return ApplyResult{}, plan, s.journalFailure(jctx, err, ApplyRefused{Fingerprint: fingerprint, Reason: err.Error()})
	case errors.Is(err, ErrStalePlan):
		return ApplyResult{}, plan, s.journalFailure(jctx, fmt.Errorf("%w; run relcap plan --env %s again and have the new fingerprint approved", err, env.Name),
			ApplyRefused{Fingerprint: fingerprint, Reason: err.Error()})
	case err != nil:
		next := s.nextAfterFailedApply(jctx, env)
		return ApplyResult{}, plan, s.journalFailure(jctx, &ApplyFailedError{Fingerprint: fingerprint, Err: err, NextAction: next},
			ApplyFailed{Fingerprint: fingerprint, Error: err.Error(), NextAction: next})
	}
	if err := d.Ledger.MarkPlanApplied(jctx, fingerprint, d.Clock.Now()); err != nil {
		return res, plan, fmt.Errorf("plan %s was applied but the ledger could not record it: %w", ShortHash(fingerprint), err)
	}
	forgot := s.forgetSharedPlan(jctx, fingerprint)
	return res, plan, errors.Join(s.journal(jctx, ApplyDone{Fingerprint: fingerprint, StateSerial: res.StateSerial, AlreadyApplied: res.AlreadyApplied}), forgot)
}
