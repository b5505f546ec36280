package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/input"
)

// checkReferences checks, before a command opens a session or starts a
// release, that what its command line names exists
// (input.ReferencesOf): each environment in relcap.yaml, each release in
// the ledger, Argo CD's server and token for the commands that need
// them, and that the Terraform roots of the commands that read them first
// parse. The first missing one is a usage error (exit 2); nothing is
// recorded.
func checkReferences(a Factory, ctx context.Context, cmd *cobra.Command, args []string, readOnly bool) error {
	var given []input.GivenFlag
	cmd.Flags().Visit(func(f *pflag.Flag) {
		given = append(given, input.GivenFlag{Name: f.Name, Values: flagValues(f)})
	})
	refs := input.ReferencesOf(cmd.CommandPath(), given, args, readOnly)
	if len(refs.Envs) > 0 {
		p, err := a.ProjectIfAny()
		if err != nil {
			return err
		}
		for _, e := range refs.Envs {
			env, err := p.Env(e.Value)
			if err != nil && refs.EnvsMayBeRecorded {
				if err := requireRecordedEnv(a, ctx, e, p, err); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				if len(p.Environments) == 0 {
					// No relcap.yaml: the command says what it needs.
					continue
				}
				return UsageError{fmt.Errorf("%s: %w", e.As, err)}
			}
			if refs.ArgoCD {
				if err := a.CheckArgoCD(env); err != nil {
					return UsageError{fmt.Errorf("environment %s: %w", env.Name, err)}
				}
			}
			if refs.Terraform {
				// What the ownership step's custody check reads first: a
				// root that does not parse is the user's to fix, not a
				// failed release.
				if _, err := custody.Check(ctx, a.StateCustody(), p.CustodyEnvs(), env.Name); err != nil {
					return UsageError{fmt.Errorf("environment %s: %w; fix the Terraform root, then run the command again", env.Name, err)}
				}
			}
		}
	}
	for _, r := range refs.Releases {
		if err := requireRelease(a, ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// requireRelease is a usage error unless the ledger holds release r. A
// ledger file that does not exist holds none, and is not created.
func requireRelease(a Factory, ctx context.Context, r input.Reference) error {
	missing := UsageError{fmt.Errorf("%s %s: no such release in the ledger; relcap journal list shows the releases recorded, or use the ID relcap printed", r.As, input.QuoteInput(r.Value))}
	if absent, err := a.LedgerAbsent(); err != nil {
		return err
	} else if absent {
		return missing
	}
	q, err := a.Records(ctx)
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

// requireRecordedEnv is a usage error unless the ledger holds a release of
// the environment e that relcap.yaml does not name (notInConfig says so):
// a read-only command may report on an environment since removed, never
// on a mistyped one.
func requireRecordedEnv(a Factory, ctx context.Context, e input.Reference, p *workflow.Project, notInConfig error) error {
	absent, err := a.LedgerAbsent()
	if err != nil {
		return err
	}
	if !absent {
		q, err := a.Records(ctx)
		if err != nil {
			return err
		}
		recorded, err := q.EnvRecorded(ctx, e.Value)
		if err != nil || recorded {
			return err
		}
	}
	if len(p.Environments) == 0 {
		return UsageError{fmt.Errorf("%s %s: the ledger holds no release of that environment", e.As, input.QuoteInput(e.Value))}
	}
	return UsageError{fmt.Errorf("%s: %w, and the ledger holds no release of it", e.As, notInConfig)}
}
