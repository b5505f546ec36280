package workflowtest

import (
	"context"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/rehearsal"
)

// BreakGlassPauser pauses reconciliation for the interrupted-
// reconciliation drill with the Service's own break-glass, as relcap
// wires it (cmd/relcap).
type BreakGlassPauser struct{ S *workflow.Service }

var _ rehearsal.Pauser = BreakGlassPauser{}

// Pause starts a break-glass in env.
func (p BreakGlassPauser) Pause(ctx context.Context, env, reason string, ttl time.Duration) error {
	_, err := p.S.StartBreakGlass(ctx, workflow.BreakGlassRequest{Env: env, Reason: reason, TTL: ttl})
	return err
}

// Resume ends env's break-glass.
func (p BreakGlassPauser) Resume(ctx context.Context, env string) error {
	_, _, err := p.S.EndBreakGlass(ctx, env)
	return err
}

// Paused reports whether env has an active break-glass.
func (p BreakGlassPauser) Paused(ctx context.Context, env string) (bool, error) {
	active, err := p.S.ActiveBreakGlass(ctx)
	if err != nil {
		return false, err
	}
	for _, b := range active {
		if b.Env == env {
			return true, nil
		}
	}
	return false, nil
}
