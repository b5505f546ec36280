package main

import (
	"context"

	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/adapters/render"
	"github.com/relcap/relcap/workflow"
)

// desiredSource renders each environment's Argo CD application from its
// environment repository, read through repo, for the ownership check
// without a live Argo CD. Helm charts are rendered in the relcap-argocd
// helper (argo's pool), where Helm's engine is linked; it needs no Argo
// CD server to do so.
func (a *app) desiredSource(p *workflow.Project, repo *gitrepo.Adapter) workflow.DesiredSource {
	return render.New(func(ctx context.Context, t workflow.EnvRepoTarget) (map[string][]byte, string, error) {
		s, err := repo.Snapshot(ctx, t)
		return s.Files, s.Revision, err
	}, a.argoCD(p).RenderHelm)
}
