// Package helm renders a Helm chart offline, as Argo CD's `helm template`
// would, for the ownership check without a live Argo CD. It is apart from
// package render because Helm's engine links Kubernetes' client packages,
// whose start-up cost relcap's own executable does not pay: it runs in
// relcap-argocd, beside the Argo CD client, and in tests.
package helm

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"github.com/relcap/relcap/adapters/render"
)

// Render renders the chart a Helm values file configures, as Argo CD's
// `helm template` does (its release name is the application's, its
// namespace Argo CD's destination, unknown offline and left empty): the
// chart is the nearest directory at or above the values file that has a
// Chart.yaml, its own values.yaml under the file's, subcharts from its
// charts/ directory, CRDs from crds/ included, hooks left out (Argo CD
// runs them as hooks, not as objects it keeps). It returns the objects
// and the chart's directory; a chart that cannot be rendered without a
// network (dependencies not vendored in charts/) or without a cluster
// (lookup) gives why in unrendered instead, with no error: unverified
// offline, never assumed clean.
func Render(files map[string][]byte, valuesFile, release string) (objects []map[string]any, chartDir, unrendered string, err error) {
	chartDir, ok := render.ChartDir(files, valuesFile)
	if !ok {
		return nil, "", fmt.Sprintf("no Chart.yaml in %s or above it, so the chart it configures is not in the environment repository", path.Dir(valuesFile)), nil
	}
	var buffered []*loader.BufferedFile
	prefix := chartDir + "/"
	if chartDir == "." {
		prefix = ""
	}
	for name, data := range files {
		if rel, in := strings.CutPrefix(name, prefix); in {
			buffered = append(buffered, &loader.BufferedFile{Name: rel, Data: data})
		}
	}
	slices.SortFunc(buffered, func(a, b *loader.BufferedFile) int { return strings.Compare(a.Name, b.Name) })
	ch, err := loader.LoadFiles(buffered)
	if err != nil {
		return nil, chartDir, "", fmt.Errorf("helm chart %s: %s", chartDir, firstLine(err.Error()))
	}
	if missing := missingDependencies(ch.Metadata.Dependencies, ch.Dependencies()); len(missing) > 0 {
		return nil, chartDir, fmt.Sprintf("chart %s depends on %s, not vendored in its charts/ directory (helm dependency build fetches them; offline they are unknown)", chartDir, strings.Join(missing, ", ")), nil
	}
	vals, err := chartutil.ReadValues(files[valuesFile])
	if err != nil {
		return nil, chartDir, "", fmt.Errorf("%s: %s", valuesFile, firstLine(err.Error()))
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, chartDir, "", fmt.Errorf("helm chart %s: %s", chartDir, firstLine(err.Error()))
	}
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: release, Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities.Copy())
	if err != nil {
		return nil, chartDir, "", fmt.Errorf("helm chart %s with %s: %s", chartDir, valuesFile, firstLine(err.Error()))
	}
	rendered, err := engine.Render(ch, top)
	if err != nil {
		return nil, chartDir, fmt.Sprintf("helm template of chart %s failed offline: %s", chartDir, firstLine(err.Error())), nil
	}
	var names []string
	for name, text := range rendered {
		if strings.HasSuffix(name, "NOTES.txt") || strings.TrimSpace(text) == "" {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	for _, crd := range ch.CRDObjects() {
		objs, err := render.ParseManifests(crd.File.Data, crd.Filename)
		if err != nil {
			return nil, chartDir, "", err
		}
		objects = append(objects, objs...)
	}
	for _, name := range names {
		objs, err := render.ParseManifests([]byte(rendered[name]), name)
		if err != nil {
			return nil, chartDir, "", err
		}
		for _, o := range objs {
			if !isHook(o) {
				objects = append(objects, o)
			}
		}
	}
	return objects, chartDir, "", nil
}

// firstLine keeps an error's first line, bounded: Helm's messages can
// quote whole templates.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// missingDependencies names the dependencies Chart.yaml declares that its
// charts/ directory does not hold.
func missingDependencies(declared []*chart.Dependency, vendored []*chart.Chart) []string {
	have := map[string]bool{}
	for _, c := range vendored {
		have[c.Name()] = true
	}
	var missing []string
	for _, d := range declared {
		if !have[d.Name] {
			missing = append(missing, d.Name)
		}
	}
	return missing
}

// isHook reports whether a rendered object is a Helm hook.
func isHook(o map[string]any) bool {
	md, _ := o["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	_, hook := ann["helm.sh/hook"]
	return hook
}
