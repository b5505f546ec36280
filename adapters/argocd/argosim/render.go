package argosim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow"
)

// rendered is what one Git revision of an application's file implies: the
// Deployment Argo CD would apply and the images it runs. The simulator does
// not run kustomize or helm; it renders the one workload the file pins,
// which is all the convergence and ownership checks look at.
type rendered struct {
	revision string
	images   []string
	// object is the Deployment as decoded JSON (map[string]any), so drift
	// can edit any field by path.
	object map[string]any
	json   string
	// source is the file as Git holds it at revision.
	source string
}

// renderOptions names the workload a file implies when the file itself
// does not say (kustomize and helm values files carry no Deployment).
type renderOptions struct {
	format    string
	name      string
	namespace string
	replicas  int
}

// formatOf infers the pin format from a file name and content when the
// application config does not name one: kustomization files by name, files
// with a Kubernetes kind as manifests, anything else as helm values.
func formatOf(file string, data []byte) string {
	switch path.Base(file) {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return workflow.FormatKustomize
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			break
		}
		if _, ok := doc["kind"]; ok {
			return workflow.FormatManifest
		}
	}
	return workflow.FormatHelmValues
}

// render reads the images a file pins and builds the Deployment they imply.
func render(revision string, data []byte, o renderOptions) (*rendered, error) {
	var (
		images []string
		obj    map[string]any
		err    error
	)
	switch o.format {
	case workflow.FormatKustomize:
		images, err = kustomizeImages(data)
	case workflow.FormatHelmValues:
		images, err = helmImages(data)
	case workflow.FormatManifest:
		images, obj, err = manifestImages(data)
	default:
		return nil, fmt.Errorf("unknown format %q; want kustomize, helm-values or manifest", o.format)
	}
	if err != nil {
		return nil, err
	}
	if len(images) == 0 {
		return nil, errors.New("the file pins no image")
	}
	if obj == nil {
		obj = deployment(o, images)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("render deployment: %w", err)
	}
	// Round-trip through JSON so the object holds the same types (float64,
	// []any) whether it came from YAML or was built here.
	var norm map[string]any
	if err := json.Unmarshal(b, &norm); err != nil {
		return nil, fmt.Errorf("render deployment: %w", err)
	}
	return &rendered{revision: revision, images: images, object: norm, json: string(b), source: string(data)}, nil
}

// kustomizeImages reads images[] of a kustomization: newName (or name),
// then "@digest", or ":newTag" when no digest is pinned.
func kustomizeImages(data []byte) ([]string, error) {
	var k struct {
		Images []struct {
			Name    string `yaml:"name"`
			NewName string `yaml:"newName"`
			NewTag  string `yaml:"newTag"`
			Digest  string `yaml:"digest"`
		} `yaml:"images"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("parse kustomization: %w", err)
	}
	var out []string
	for _, im := range k.Images {
		ref := im.NewName
		if ref == "" {
			ref = im.Name
		}
		switch {
		case im.Digest != "":
			ref += "@" + im.Digest
		case im.NewTag != "":
			ref += ":" + im.NewTag
		}
		if ref != "" {
			out = append(out, ref)
		}
	}
	return out, nil
}

// helmImages finds image maps in a values file: any map with a repository
// key, joined with a sibling registry and pinned by digest or tag.
func helmImages(data []byte) ([]string, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("parse helm values: %w", err)
	}
	var out []string
	var walk func(any)
	walk = func(n any) {
		switch n := n.(type) {
		case map[string]any:
			if repo, ok := n["repository"].(string); ok && repo != "" {
				ref := repo
				if reg, ok := n["registry"].(string); ok && reg != "" {
					ref = reg + "/" + repo
				}
				if d, ok := n["digest"].(string); ok && d != "" {
					ref += "@" + d
				} else if t, ok := n["tag"].(string); ok && t != "" {
					ref += ":" + t
				}
				out = append(out, ref)
			}
			for _, k := range sortedKeys(n) {
				walk(n[k])
			}
		case []any:
			for _, e := range n {
				walk(e)
			}
		}
	}
	walk(v)
	return out, nil
}

// manifestImages collects container images from every document of a
// manifest and returns the first Deployment found as the rendered object.
func manifestImages(data []byte) ([]string, map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var (
		out []string
		dep map[string]any
	)
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("parse manifest: %w", err)
		}
		if doc == nil {
			continue
		}
		out = append(out, containerImages(doc)...)
		if dep == nil && doc["kind"] == "Deployment" {
			dep = doc
		}
	}
	return out, dep, nil
}

// containerImages walks a document and returns the image of every entry
// under a containers or initContainers list.
func containerImages(n any) []string {
	var out []string
	switch n := n.(type) {
	case map[string]any:
		for _, k := range sortedKeys(n) {
			if k == "containers" || k == "initContainers" {
				if list, ok := n[k].([]any); ok {
					for _, c := range list {
						if m, ok := c.(map[string]any); ok {
							if img, ok := m["image"].(string); ok && img != "" {
								out = append(out, img)
							}
						}
					}
				}
				continue
			}
			out = append(out, containerImages(n[k])...)
		}
	case []any:
		for _, e := range n {
			out = append(out, containerImages(e)...)
		}
	}
	return out
}

// deployment builds the Deployment a kustomize or helm file implies: one
// container per pinned image.
func deployment(o renderOptions, images []string) map[string]any {
	containers := make([]any, 0, len(images))
	for _, img := range images {
		containers = append(containers, map[string]any{"name": containerName(img), "image": img})
	}
	labels := map[string]any{"app.kubernetes.io/name": o.name}
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name":      o.name,
			"namespace": o.namespace,
			"labels":    map[string]any{"app.kubernetes.io/instance": o.name},
		},
		"spec": map[string]any{
			"replicas": o.replicas,
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec":     map[string]any{"containers": containers},
			},
		},
	}
}

// containerName is the last path component of an image repository.
func containerName(img string) string {
	repo := img
	if i := strings.IndexByte(repo, '@'); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndexByte(repo, ':'); i >= 0 && !strings.Contains(repo[i:], "/") {
		repo = repo[:i]
	}
	return path.Base(repo)
}

// meta reads a field of the rendered object's metadata, falling back to
// the configured value.
func (r *rendered) meta(field, fallback string) string {
	if md, ok := r.object["metadata"].(map[string]any); ok {
		if s, ok := md[field].(string); ok && s != "" {
			return s
		}
	}
	return fallback
}

// withDrift returns a copy of r whose object has field changed as a person
// with kubectl would: a replica count scaled up, an image swapped for a
// hand-built tag, any other field set to a marker string.
func (r *rendered) withDrift(field string) (*rendered, error) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.json), &obj); err != nil {
		return nil, err
	}
	if field == "image" {
		field = "spec.template.spec.containers[0].image"
	}
	if err := setPath(obj, field, func(old any) any {
		switch old := old.(type) {
		case float64:
			return old + 3
		case string:
			if strings.HasSuffix(field, "image") {
				return strings.SplitN(old, "@", 2)[0] + ":hand-patched"
			}
			return old + "-drifted"
		}
		return "drifted-by-hand"
	}); err != nil {
		return nil, err
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return &rendered{revision: r.revision, images: containerImages(obj), object: obj, json: string(b)}, nil
}

// setPath replaces the value at a dotted path with optional list indexes
// ("spec.template.spec.containers[0].image"), creating missing maps.
func setPath(obj map[string]any, p string, change func(old any) any) error {
	parts := strings.Split(p, ".")
	var cur any = obj
	for i, part := range parts {
		key, idx, hasIdx, err := splitIndex(part)
		if err != nil {
			return err
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return fmt.Errorf("drift field %q: %s is not an object", p, strings.Join(parts[:i], "."))
		}
		last := i == len(parts)-1
		if !hasIdx {
			if last {
				m[key] = change(m[key])
				return nil
			}
			next, ok := m[key]
			if !ok || next == nil {
				next = map[string]any{}
				m[key] = next
			}
			cur = next
			continue
		}
		list, ok := m[key].([]any)
		if !ok || idx >= len(list) {
			return fmt.Errorf("drift field %q: %s has no element %d", p, key, idx)
		}
		if last {
			list[idx] = change(list[idx])
			return nil
		}
		cur = list[idx]
	}
	return nil
}

func splitIndex(part string) (key string, idx int, hasIdx bool, err error) {
	open := strings.IndexByte(part, '[')
	if open < 0 {
		return part, 0, false, nil
	}
	if !strings.HasSuffix(part, "]") {
		return "", 0, false, fmt.Errorf("drift field part %q: unclosed index", part)
	}
	if _, err := fmt.Sscanf(part[open+1:len(part)-1], "%d", &idx); err != nil || idx < 0 {
		return "", 0, false, fmt.Errorf("drift field part %q: bad index", part)
	}
	return part[:open], idx, true, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
