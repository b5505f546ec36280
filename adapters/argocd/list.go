package argocd

import (
	"context"
	"slices"
	"strings"

	"github.com/argoproj/argo-cd/v2/pkg/apiclient/application"

	"github.com/relcap/relcap/workflow/setup"
)

var _ setup.AppLister = (*Adapter)(nil)

// Applications lists the applications the token may read, by name, with
// the source each follows: what relcap init offers for argocd.app. (An
// application outside Argo CD's own namespace is listed by its name
// alone; relcap.yaml names it namespace/name.)
func (a *Adapter) Applications(ctx context.Context) ([]setup.ArgoApp, error) {
	apps, err := a.client(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := a.callContext(ctx)
	defer cancel()
	list, err := apps.List(cctx, &application.ApplicationQuery{})
	if err != nil {
		return nil, a.callError(ctx, "list", "applications", err)
	}
	var out []setup.ArgoApp
	for _, app := range list.Items {
		src := app.Spec.GetSource()
		out = append(out, setup.ArgoApp{Name: app.Name, Path: src.Path, RepoURL: src.RepoURL})
	}
	slices.SortFunc(out, func(x, y setup.ArgoApp) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}
