package main

import (
	"context"
	"time"

	"github.com/relcap/relcap/adapters/argocd/argoconf"
	"github.com/relcap/relcap/adapters/argocd/remote"
	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/adapters/terraform"
	"github.com/relcap/relcap/tui/cli"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/setup"
)

// SetupFinders are relcap init's: Terraform's root modules, the
// environment repositories, and Argo CD's applications when a server is
// named and its token set.
func (a *app) SetupFinders(_ context.Context, argo cli.ArgoServer) (setup.Finders, func() error, error) {
	finders := setup.Finders{Terraform: terraform.RootFinder{}, EnvRepos: gitrepo.Surveyor{}}
	lister, err := a.initAppLister(argo)
	if err != nil || lister == nil {
		return finders, func() error { return nil }, err
	}
	finders.Apps = lister
	return finders, lister.Close, nil
}

// initAppLister is the Argo CD server to list applications from, when one
// is named and its token set; nil otherwise (init then proposes names).
func (a *app) initAppLister(opts cli.ArgoServer) (*remote.Lister, error) {
	server := opts.Server
	if server == "" {
		server = a.io.Getenv(argoconf.EnvServer)
	}
	// No project yet to learn them from: the token and any credentials in
	// the server's address are secrets from here on, as for every command.
	a.secrets.LearnCredentials(secret.Credentials{Env: []string{opts.TokenEnv}, URLs: []string{server}}, a.io.Getenv)
	token := a.io.Getenv(opts.TokenEnv)
	if server == "" || token == "" {
		return nil, nil
	}
	// A server that does not answer is a note, not a failure (setup.Run).
	return remote.NewLister(argoconf.Options{Server: server, TokenEnv: opts.TokenEnv, PlainText: opts.PlainText, Timeout: 5 * time.Second}, a.argoHelper())
}
