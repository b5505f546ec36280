package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/relcap/relcap/adapters/argocd/argoconf"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/input"
)

// checkReferences checks, before a command opens a session or starts a
// release, that what its command line names exists
// (input.ReferencesOf): each environment in relcap.yaml, each release in
// the ledger, and Argo CD's server and token for the commands that need
// them. The first missing one is a usage error (exit 2); nothing is
// recorded.
func (a *app) checkReferences(ctx context.Context, cmd *cobra.Command, args []string) error {
	var given []input.GivenFlag
	cmd.Flags().Visit(func(f *pflag.Flag) {
		given = append(given, input.GivenFlag{Name: f.Name, Values: flagValues(f)})
	})
	refs := input.ReferencesOf(cmd.CommandPath(), given, args, a.readOnly)
	if len(refs.Envs) > 0 {
		p, err := a.projectIfAny()
		if err != nil {
			return err
		}
		for _, e := range refs.Envs {
			env, err := p.Env(e.Value)
			if err != nil {
				if len(p.Environments) == 0 {
					// No relcap.yaml: the command says what it needs.
					continue
				}
				return usageError{fmt.Errorf("%s: %w", e.As, err)}
			}
			if refs.ArgoCD {
				if _, err := argoconf.OptionsFor(env.ArgoCD, a.io.getenv); err != nil {
					return usageError{fmt.Errorf("environment %s: %w", env.Name, err)}
				}
			}
		}
	}
	for _, r := range refs.Releases {
		if err := a.requireRelease(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// requireRelease is a usage error unless the ledger holds release r. A
// ledger file that does not exist holds none, and is not created.
func (a *app) requireRelease(ctx context.Context, r input.Reference) error {
	missing := usageError{fmt.Errorf("%s %s: no such release in the ledger; relcap journal list shows the releases recorded, or use the ID relcap printed", r.As, input.QuoteInput(r.Value))}
	loc, err := a.ledgerLocation()
	if err != nil {
		return err
	}
	if loc.absent() {
		return missing
	}
	q, err := a.records(ctx)
	if err != nil {
		return err
	}
	if _, err := q.Release(ctx, r.Value); errors.Is(err, fault.ErrNotFound) {
		return missing
	} else if err != nil {
		return err
	}
	return nil
}
