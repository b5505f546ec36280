package main

import (
	"github.com/relcap/relcap/adapters/argocd/argoconf"
	"github.com/relcap/relcap/workflow"
)

// CheckArgoCD checks, before a command that talks to Argo CD opens a
// session, that env's server and token are given (input.ReferencesOf).
func (a *app) CheckArgoCD(env workflow.Environment) error {
	_, err := argoconf.OptionsFor(env.ArgoCD, a.io.Getenv)
	return err
}
