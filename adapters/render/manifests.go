package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/relcap/relcap/workflow/fault"
	"gopkg.in/yaml.v3"
)

// ParseManifests reads the Kubernetes objects of one manifest file: YAML
// documents separated by ---, or JSON; empty documents are skipped and a
// List's items are its objects. file names it in errors, which say where
// and never quote the content (a manifest may hold a Secret).
func ParseManifests(data []byte, file string) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []map[string]any
	for doc := 1; ; doc++ {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: document %d is not YAML relcap can read; fix it in the environment repository", fault.ErrUsage, file, doc)
		}
		if v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: %s: document %d is not a mapping (a Kubernetes object)", fault.ErrUsage, file, doc)
		}
		objs, err := objectOrList(m, file, doc)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
}

// objectOrList checks m names an object (apiVersion, kind, metadata.name)
// or is a List of them.
func objectOrList(m map[string]any, file string, doc int) ([]map[string]any, error) {
	kind, _ := m["kind"].(string)
	apiVersion, _ := m["apiVersion"].(string)
	if kind == "" || apiVersion == "" {
		return nil, fmt.Errorf("%w: %s: document %d has no apiVersion or kind", fault.ErrUsage, file, doc)
	}
	if kind == "List" || (len(kind) > 4 && kind[len(kind)-4:] == "List" && m["items"] != nil) {
		items, _ := m["items"].([]any)
		var out []map[string]any
		for i, it := range items {
			im, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%w: %s: document %d: item %d is not a Kubernetes object", fault.ErrUsage, file, doc, i)
			}
			objs, err := objectOrList(im, file, doc)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	md, _ := m["metadata"].(map[string]any)
	if name, _ := md["name"].(string); name == "" {
		return nil, fmt.Errorf("%w: %s: document %d (%s) has no metadata.name", fault.ErrUsage, file, doc, kind)
	}
	return []map[string]any{m}, nil
}

// ValuesKeys reads a Helm values file and returns its top-level keys,
// sorted; an empty file has none.
func ValuesKeys(data []byte, file string) ([]string, error) {
	if data == nil {
		return nil, fmt.Errorf("%w: %s does not exist on the branch; fix envrepo.file", fault.ErrUsage, file)
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%w: %s is not YAML relcap can read; fix it in the environment repository", fault.ErrUsage, file)
	}
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a mapping of values", fault.ErrUsage, file)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}
