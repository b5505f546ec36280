package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/input"
	"github.com/relcap/relcap/workflow/owners"
	"github.com/relcap/relcap/workflow/ownership"
)

// ownershipInferOptions are relcap ownership infer's flags.
type ownershipInferOptions struct {
	f        Factory
	Envs     []string
	Out      string
	Managers []string
}

func newCmdOwnershipInfer(f Factory, runF func(context.Context, *ownershipInferOptions) error) *cobra.Command {
	opts := &ownershipInferOptions{f: f}
	cmd := &cobra.Command{
		Use:   "infer [--env ENV]... [--out FILE|-] [--manager NAME=OWNER]...",
		Short: "Propose the ownership map from who really writes each field, as a draft to review",
		Long: `infer reads who actually writes each field: the live objects' field managers
(metadata.managedFields, through each environment's Argo CD application),
what Terraform's state says each root sets, and what each application
desires. It proposes an ownership map: one rule for each object more than
one owner writes (its owner, and the fields another owner alone writes or a
controller such as an HPA holds), then one rule per application and one for
Terraform. Every field written by more than one owner is contested; one an
owner declares while another holds it flips at the next apply or sync.

The draft is written to ownership.draft.yaml beside the ownership map (or
--out FILE; --out - writes none), with the evidence of each rule as comments
(manager, operation, time), never over the map itself. relcap validate reads
it as it reads the map. infer prints where the draft differs from the current
map and exits 3 while any field is contested: decide each one (give it to one
owner in the map and take it out of the other tool; where Terraform lets go of
a whole object, declare a hand-off, whose plan must forget, never destroy)
before a release.

Field managers are tied to owners by name: argocd-controller is Argo CD;
Terraform and HashiCorp are Terraform's Kubernetes provider; kubectl's
server-side apply is Terraform where a kubectl_* resource manages the object;
kube-controller-manager through the scale subresource is an HPA. --manager
NAME=OWNER ties another (a CI job, an operator); others are named by
themselves, and their fields stay contested.`,
		Example: `  relcap ownership infer
  relcap ownership infer --env staging --out -
  relcap ownership infer --manager deploy-bot=terraform --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOr(runF, runOwnershipInfer)(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&opts.Envs, "env", nil, "environment to read (repeat, or a comma list; default: every environment)")
	fl.StringVar(&opts.Out, "out", "", "where to write the draft (default: ownership.draft.yaml beside the map; - for none)")
	fl.StringArrayVar(&opts.Managers, "manager", nil, "tie a field manager to an owner, NAME=OWNER (repeatable)")
	return cmd
}

// parseManagers reads --manager NAME=OWNER flags.
func parseManagers(flags []string) (ownership.ManagerOwners, error) {
	out := ownership.ManagerOwners{}
	for _, f := range flags {
		name, owner, ok := strings.Cut(f, "=")
		switch {
		case !ok || name == "" || owner == "":
			return nil, UsageError{fmt.Errorf("--manager %s: want NAME=OWNER, e.g. --manager deploy-bot=terraform", input.QuoteInput(f))}
		case !config.ValidOwner(owner):
			return nil, UsageError{fmt.Errorf("--manager %s: owner %s is not a name ownership.yaml accepts (lowercase letters, digits, '.', '_', '-')", input.QuoteInput(f), input.QuoteInput(owner))}
		}
		if err := input.CheckFreeText("--manager", name); err != nil {
			return nil, UsageError{err}
		}
		if prev, dup := out[name]; dup && prev != ownership.Owner(owner) {
			return nil, UsageError{fmt.Errorf("--manager %s: %s is already tied to %s", input.QuoteInput(f), input.QuoteInput(name), prev)}
		}
		out[name] = ownership.Owner(owner)
	}
	return out, nil
}

// runOwnershipInfer proposes the map, prints it and where it differs, and
// exits 3 while a field is contested.
func runOwnershipInfer(ctx context.Context, opts *ownershipInferOptions) error {
	a := opts.f
	managers, err := parseManagers(opts.Managers)
	if err != nil {
		return err
	}
	p, err := loadOwnershipProject(a, "relcap ownership infer")
	if err != nil {
		return err
	}
	for _, e := range opts.Envs {
		if _, err := p.Env(e); err != nil {
			return err
		}
	}
	svc, _, err := a.Service(ctx, ServiceRequest{Command: "ownership infer", Needs: NeedOwnership})
	if err != nil {
		return err
	}
	res, err := owners.Infer(ctx, svc, owners.InferRequest{Envs: opts.Envs, Managers: managers, Out: opts.Out})
	if err != nil {
		return err
	}
	if a.Flags().JSON {
		if err := printJSON(a, plain.InferenceDocument(res)); err != nil {
			return err
		}
	} else {
		plain.PrintInference(a.IO().Out, res, opts.Out == "-")
	}
	if contested, flipping := res.Contested(); contested > 0 {
		return fmt.Errorf("%w: %d contested field(s), %d flipping: decide each one: one owner in the map, the field taken out of the other tool",
			fault.ErrOwnershipConflict, contested, flipping)
	}
	return nil
}
