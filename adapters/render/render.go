// Package render implements workflow.DesiredSource: it renders an
// environment's Argo CD application from the environment repository as
// Argo CD would, without Argo CD. A kustomization is built with
// sigs.k8s.io/kustomize/api (the version Argo CD's own module pins, with
// its defaults: load restrictions on, plugins and helmCharts off); a
// directory of plain manifests is read as YAML and JSON documents, every
// file of the directory the pinned file is in, as Argo CD's directory
// source does (not recursively); a Helm application's values files are
// rendered with Helm's own engine from the chart it configures (helm.go);
// what cannot be rendered offline (a chart not in the repository,
// dependencies not vendored, a kustomization's helmCharts) is reported
// unverified offline, never assumed clean. Only identities and field
// paths leave the package, never values.
package render

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/ownership"
)

// Snapshot reads every file of an environment repository at the tip of its
// branch, by slash-separated path, and the commit it read (gitrepo's
// Adapter.Snapshot, wired by cmd/relcap).
type Snapshot func(ctx context.Context, t workflow.EnvRepoTarget) (files map[string][]byte, revision string, err error)

// HelmRenderer renders the chart a values file of files configures, for
// release (package render/helm, run where Helm's engine is linked): its
// objects and the chart's directory, or why it cannot be rendered offline.
type HelmRenderer func(ctx context.Context, files map[string][]byte, valuesFile, release string) (objects []map[string]any, chartDir, unrendered string, err error)

// Source renders environments' applications from their environment
// repositories.
type Source struct {
	snapshot Snapshot
	helm     HelmRenderer
}

var _ workflow.DesiredSource = Source{}

// New returns a Source reading repositories through snapshot and
// rendering Helm charts through helm (nil: Helm applications are
// unverified offline).
func New(snapshot Snapshot, helm HelmRenderer) Source { return Source{snapshot: snapshot, helm: helm} }

// DesiredObjects implements workflow.DesiredSource.
func (s Source) DesiredObjects(ctx context.Context, env workflow.Environment) (ownership.Desired, error) {
	files, rev, err := s.snapshot(ctx, env.EnvRepo)
	if err != nil {
		return ownership.Desired{}, err
	}
	d, err := Render(ctx, files, env.EnvRepo, env.ArgoCD.App, s.helm)
	if len(rev) >= 7 {
		d.Source += " at " + rev[:7]
	}
	return d, err
}

// Render renders app from files (a repository's content by path) as t's
// format says: the kustomization t.File names, the directory of plain
// manifests t.File is in, or the chart the Helm values file t.File
// configures, through helm.
func Render(ctx context.Context, files map[string][]byte, t workflow.EnvRepoTarget, app string, helm HelmRenderer) (ownership.Desired, error) {
	file := path.Clean(filepath.ToSlash(t.File))
	dir := path.Dir(file)
	d := ownership.Desired{App: app}
	switch t.Format {
	case workflow.FormatKustomize:
		d.Source = "kustomize " + dir
		objs, err := Kustomize(files, dir)
		var helm *helmChartsError
		if errors.As(err, &helm) {
			d.Unverified = helm.Error()
			return d, nil
		}
		if err != nil {
			return d, err
		}
		d.Objects = objectsOf(objs, app)
	case workflow.FormatManifest:
		d.Source = "manifests " + dir
		objs, err := Directory(files, dir)
		if err != nil {
			return d, err
		}
		d.Objects = objectsOf(objs, app)
	case workflow.FormatHelmValues:
		d.Source = "helm values " + file
		keys, err := ValuesKeys(files[file], file)
		if err != nil {
			return d, err
		}
		if helm == nil {
			d.Unverified = fmt.Sprintf("the chart's templates are not rendered here (values file %s read: %s)", file, keysNote(keys))
			return d, nil
		}
		objs, chartDir, unrendered, err := helm(ctx, files, file, app)
		if err != nil {
			return d, err
		}
		if unrendered != "" {
			d.Unverified = fmt.Sprintf("%s (values file %s read: %s)", unrendered, file, keysNote(keys))
			return d, nil
		}
		d.Source = "helm chart " + chartDir + " with " + file
		d.Objects = objectsOf(objs, app)
	default:
		d.Source = t.Format + " " + file
		d.Unverified = fmt.Sprintf("envrepo format %q is not rendered offline", t.Format)
	}
	return d, nil
}

func keysNote(keys []string) string {
	switch {
	case len(keys) == 0:
		return "no values"
	case len(keys) > 8:
		return fmt.Sprintf("top-level keys %s and %d more", strings.Join(keys[:8], ", "), len(keys)-8)
	}
	return "top-level keys " + strings.Join(keys, ", ")
}

// helmChartsError is a kustomization that inflates Helm charts, which
// needs the helm binary and its chart repositories.
type helmChartsError struct{ dir string }

func (e *helmChartsError) Error() string {
	return fmt.Sprintf("the kustomization in %s inflates Helm charts (helmCharts), which are not rendered offline", e.dir)
}

// Kustomize builds the kustomization in dir of files as kustomize build
// does with Argo CD's defaults, and returns its objects.
func Kustomize(files map[string][]byte, dir string) ([]map[string]any, error) {
	fs := filesys.MakeFsInMemory()
	for name, data := range files {
		if err := fs.WriteFile("/"+name, data); err != nil {
			return nil, fmt.Errorf("loading %s: %w", name, err)
		}
	}
	if !hasKustomization(files, dir) {
		return nil, fmt.Errorf("%w: %s has no kustomization.yaml, kustomization.yml or Kustomization; fix envrepo.file", fault.ErrUsage, dir)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(fs, "/"+dir)
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "helm") {
			return nil, &helmChartsError{dir: dir}
		}
		return nil, fmt.Errorf("kustomize build %s: %s", dir, firstLine(msg))
	}
	var out []map[string]any
	for _, r := range rm.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		out = append(out, m)
	}
	return out, nil
}

func hasKustomization(files map[string][]byte, dir string) bool {
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, ok := files[path.Join(dir, n)]; ok {
			return true
		}
	}
	return false
}

// firstLine keeps an error's first line, bounded: kustomize's messages can
// quote whole documents.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// Directory reads the plain manifests of dir: every .yaml, .yml and .json
// file directly in it, each possibly of several documents.
func Directory(files map[string][]byte, dir string) ([]map[string]any, error) {
	var names []string
	for name := range files {
		if path.Dir(name) != dir {
			continue
		}
		switch path.Ext(name) {
		case ".yaml", ".yml", ".json":
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []map[string]any
	for _, name := range names {
		objs, err := ParseManifests(files[name], name)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// objectsOf translates rendered objects to what Argo CD's app writes: the
// identity and field paths of each, kustomize's build annotations left
// out.
func objectsOf(objs []map[string]any, app string) []ownership.ManagedObject {
	out := make([]ownership.ManagedObject, 0, len(objs))
	for _, m := range objs {
		md, _ := m["metadata"].(map[string]any)
		if ann, ok := md["annotations"].(map[string]any); ok {
			for k := range ann {
				if strings.HasPrefix(k, "config.kubernetes.io/") || strings.HasPrefix(k, "internal.config.kubernetes.io/") {
					delete(ann, k)
				}
			}
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
		apiVersion, _ := m["apiVersion"].(string)
		kind, _ := m["kind"].(string)
		name, _ := md["name"].(string)
		ns, _ := md["namespace"].(string)
		group, _, found := strings.Cut(apiVersion, "/")
		if !found {
			group = "" // the core group: "v1"
		}
		out = append(out, ownership.ManagedObject{Manager: ownership.OwnerArgoCD, App: app,
			Group: group, Kind: kind, Namespace: ns, Name: name, Fields: ownership.FieldPaths(m)})
	}
	return out
}

// ChartDir is the chart a Helm values file configures: the nearest
// directory at or above valuesFile's, in files, that holds a Chart.yaml.
func ChartDir(files map[string][]byte, valuesFile string) (string, bool) {
	for dir := path.Dir(valuesFile); ; dir = path.Dir(dir) {
		if _, ok := files[path.Join(dir, "Chart.yaml")]; ok {
			return dir, true
		}
		if dir == "." || dir == "/" {
			return "", false
		}
	}
}

// ChartFiles are the files a Helm renderer needs for valuesFile: the
// chart's and the values file; all of files when no chart is found (the
// renderer says so).
func ChartFiles(files map[string][]byte, valuesFile string) map[string][]byte {
	dir, ok := ChartDir(files, valuesFile)
	if !ok || dir == "." {
		return files
	}
	out := map[string][]byte{valuesFile: files[valuesFile]}
	for name, data := range files {
		if strings.HasPrefix(name, dir+"/") {
			out[name] = data
		}
	}
	return out
}
