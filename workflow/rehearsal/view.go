package rehearsal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
)

// What the cockpit's rehearsal screen reads (tui/screen/rehearse): the
// drill before it starts, and its record while it runs. Reads only; the
// drill itself is Rehearse, Resume and Cleanup.

// Preview is what a drill will do, shown before the captain
// confirms it: the environment, the baseline it must return to and the
// verdict the watch must name.
type Preview struct {
	Env   string
	Drill Drill
	// Production is set when the environment is marked production; the
	// drill then runs only with Override (--i-know).
	Production bool
	Override   string
	Baseline   Baseline
	Expected   appstate.VerdictKind
	// PhaseTimeout bounds each phase (detect, recover).
	PhaseTimeout time.Duration
}

// Preview checks req as Rehearse would (the environment, the
// drill, production, the drill's configuration, a converged baseline)
// without taking any lock or changing anything, and says what the drill
// will do. Rehearse checks it all again when it starts.
func (s *Service) Preview(ctx context.Context, req Request) (Preview, error) {
	env, err := s.d.Project.Env(req.Env)
	if err != nil {
		return Preview{}, err
	}
	if _, err := ParseDrill(string(req.Drill)); err != nil {
		return Preview{}, err
	}
	if err := s.rehearsalPorts(req.Drill); err != nil {
		return Preview{}, err
	}
	reason := strings.TrimSpace(req.IKnow)
	if env.Production && reason == "" {
		return Preview{}, fmt.Errorf("%w: %s is a production environment: a drill breaks it on purpose; rehearse in an environment before it, or pass --i-know REASON (journaled and signed)", fault.ErrBlocked, env.Name)
	}
	if err := s.drillConfigured(env, req.Drill); err != nil {
		return Preview{}, err
	}
	// As in Rehearse: failed-apply's baseline is the Terraform state,
	// taken when it makes its scratch copy, not a converged release.
	var base Baseline
	if !req.Drill.OnScratchCopy() {
		if base, err = s.baseline(ctx, env); err != nil {
			return Preview{}, err
		}
	}
	p := Preview{Env: env.Name, Drill: req.Drill, Production: env.Production, Baseline: base,
		Expected: s.expected(env, req.Drill), PhaseTimeout: env.Rehearsal.PhaseTimeout()}
	if env.Production {
		p.Override = reason
	}
	if req.Timeout > 0 {
		p.PhaseTimeout = req.Timeout
	}
	return p, nil
}

// Rehearsal reads one rehearsal's record from the ledger, as it was last
// saved (after every phase).
func (s *Service) Load(ctx context.Context, id string) (*Rehearsal, error) {
	rh, err := s.store.LoadRehearsal(ctx, id)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, fmt.Errorf("%w: no rehearsal %s in the ledger (relcap rehearse list shows them)", fault.ErrUsage, id)
	}
	return rh, err
}
