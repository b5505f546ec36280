package main

import "github.com/relcap/relcap/adapters/argocd/remote"

// argoHelper says how this invocation starts relcap-argocd, the helper
// that talks to Argo CD (adapters/argocd/remote): relcap's build, which
// the helper's must match, and the command's environment, which carries
// the tokens to it.
func (a *app) argoHelper() remote.Config {
	b := currentBuild()
	return remote.Config{Build: remote.Build{Version: b.Version, Commit: b.Commit}, Env: a.io.Env}
}
