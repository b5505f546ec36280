package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/tui/prompt"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/owners"
	"github.com/relcap/relcap/workflow/setup"
)

// initOptions are relcap init's.
type initOptions struct {
	f     Factory
	dir   string
	yes   bool
	force bool
	// schema is what the yaml-language-server line of relcap.yaml names.
	schema string
	// argoServer and argoTokenEnv say where to list applications from.
	argoServer, argoTokenEnv string
	argoPlaintext            bool
}

func newCmdInit(f Factory, runF func(context.Context, *initOptions) error) *cobra.Command {
	opts := &initOptions{f: f}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a first relcap.yaml and ownership.yaml for this release repository",
		Long: `init finds the Terraform root modules of the release repository, the
environment repository (beside it, or in it) and the files there that pin
the image, and the Argo CD applications (listed from the server when
$ARGOCD_SERVER or --argocd-server and a token are set), then asks about each
value with its proposal as the default. It writes a relcap.yaml, commented
key by key, and a first ownership.yaml, that relcap validate accepts.

--yes takes every proposal (for scripts). init never overwrites a file
without asking, or --force. It records nothing in any ledger.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOr(runF, runInit)(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.dir, "dir", ".", "the release repository to set up")
	fl.BoolVarP(&opts.yes, "yes", "y", false, "take every proposal without asking")
	fl.BoolVar(&opts.force, "force", false, "overwrite relcap.yaml and ownership.yaml if they exist")
	fl.StringVar(&opts.schema, "schema-url", setup.SchemaURL, "the JSON Schema (path or URL) relcap.yaml's yaml-language-server line names")
	fl.StringVar(&opts.argoServer, "argocd-server", "", "Argo CD to list applications from (default $ARGOCD_SERVER)")
	fl.StringVar(&opts.argoTokenEnv, "argocd-token-env", workflow.DefaultArgoCDTokenEnv, "the environment variable holding its token")
	fl.BoolVar(&opts.argoPlaintext, "argocd-plaintext", false, "talk to that Argo CD without TLS")
	return cmd
}

// runInit wires the finders and the prompts to the set-up use case.
func runInit(ctx context.Context, opts *initOptions) error {
	a := opts.f
	if a.Flags().Config != "" {
		return UsageError{errors.New("init writes relcap.yaml in --dir; leave out -c/--config")}
	}
	finders, closeFinders, err := a.SetupFinders(ctx, ArgoServer{Server: opts.argoServer, TokenEnv: opts.argoTokenEnv, PlainText: opts.argoPlaintext})
	if err != nil {
		return err
	}
	defer closeFinders()
	var ask setup.Asker = setup.Defaults{}
	if !opts.yes {
		ask = prompt.New(a.IO().In, a.IO().Out)
	}
	req := setup.Request{Dir: opts.dir, Schema: opts.schema, Force: opts.force, ArgoPlaintext: opts.argoPlaintext,
		Found: func(d setup.Discovery) { plain.PrintFound(a.IO().Out, d) }}
	res, err := setup.Run(ctx, req, finders, ask)
	if err != nil {
		return err
	}
	plain.PrintInit(a.IO().Out, res)
	if res.Discovery.Server != "" {
		inferFirstMap(ctx, a, res)
	}
	plain.PrintInitNext(a.IO().Out)
	return nil
}

// inferFirstMap replaces the catch-all map init has just written with one
// inferred from who really writes each field, when the Argo CD init found
// and Terraform's state can be read; otherwise the catch-all map stays
// and init says why, and how to infer later. Contested fields do not fail
// init: the map says where they are.
func inferFirstMap(ctx context.Context, a Factory, res setup.Result) {
	out := a.IO().Out
	a.Flags().Config = filepath.Join(res.Discovery.Dir, config.FileName)
	svc, _, err := a.Service(ctx, ServiceRequest{Command: "init", Needs: NeedOwnership})
	var inferred owners.Inferred
	if err == nil {
		inferred, err = owners.Infer(ctx, svc, owners.InferRequest{FirstMap: true})
	}
	if err != nil {
		fmt.Fprintf(out, "note: the ownership map is the catch-all one; infer it from the cluster once Terraform and Argo CD can be read: relcap ownership infer (%v)\n", err)
		return
	}
	contested, flipping := inferred.Contested()
	fmt.Fprintf(out, "inferred %s from who writes each field: %d object(s) written by more than one owner, %d contested field(s), %d flipping\n",
		plain.Rel(inferred.Written), len(inferred.Inference.Objects), contested, flipping)
}
