package main

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/adapters/argocd/argoconf"
	"github.com/relcap/relcap/adapters/argocd/remote"
	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/adapters/terraform"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/tui/prompt"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/setup"
)

// initOptions are relcap init's.
type initOptions struct {
	f     *app
	dir   string
	yes   bool
	force bool
	// schema is what the yaml-language-server line of relcap.yaml names.
	schema string
	// argoServer and argoTokenEnv say where to list applications from.
	argoServer, argoTokenEnv string
	argoPlaintext            bool
}

func newCmdInit(f *app, runF func(context.Context, *initOptions) error) *cobra.Command {
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
	fl.StringVar(&opts.argoServer, "argocd-server", "", "Argo CD to list applications from (default $"+argoconf.EnvServer+")")
	fl.StringVar(&opts.argoTokenEnv, "argocd-token-env", workflow.DefaultArgoCDTokenEnv, "the environment variable holding its token")
	fl.BoolVar(&opts.argoPlaintext, "argocd-plaintext", false, "talk to that Argo CD without TLS")
	return cmd
}

// runInit wires the finders and the prompts to the set-up use case.
func runInit(ctx context.Context, opts *initOptions) error {
	a := opts.f
	if a.flags.config != "" {
		return usageError{errors.New("init writes relcap.yaml in --dir; leave out -c/--config")}
	}
	finders := setup.Finders{Terraform: terraform.RootFinder{}, EnvRepos: gitrepo.Surveyor{}}
	lister, err := a.initAppLister(opts)
	if err != nil {
		return err
	}
	if lister != nil {
		defer lister.Close()
		finders.Apps = lister
	}
	var ask setup.Asker = setup.Defaults{}
	if !opts.yes {
		ask = prompt.New(a.io.In, a.io.Out)
	}
	req := setup.Request{Dir: opts.dir, Schema: opts.schema, Force: opts.force, ArgoPlaintext: opts.argoPlaintext,
		Found: func(d setup.Discovery) { plain.PrintFound(a.io.Out, d) }}
	res, err := setup.Run(ctx, req, finders, ask)
	if err != nil {
		return err
	}
	plain.PrintInit(a.io.Out, res)
	return nil
}

// initAppLister is the Argo CD server to list applications from, when one
// is named and its token set; nil otherwise (init then proposes names).
func (a *app) initAppLister(opts *initOptions) (*remote.Lister, error) {
	server := opts.argoServer
	if server == "" {
		server = a.io.getenv(argoconf.EnvServer)
	}
	// No project yet to learn them from: the token and any credentials in
	// the server's address are secrets from here on, as for every command.
	a.secrets.LearnCredentials(secret.Credentials{Env: []string{opts.argoTokenEnv}, URLs: []string{server}}, a.io.getenv)
	token := a.io.getenv(opts.argoTokenEnv)
	if server == "" || token == "" {
		return nil, nil
	}
	// A server that does not answer is a note, not a failure (setup.Run).
	return remote.NewLister(argoconf.Options{Server: server, TokenEnv: opts.argoTokenEnv, PlainText: opts.argoPlaintext, Timeout: 5 * time.Second}, a.argoHelper())
}
