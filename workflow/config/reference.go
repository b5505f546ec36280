package config

import (
	"fmt"
	"slices"
	"strings"
)

// The reference of relcap.yaml: for every key the loader accepts (the key
// lists in config.go, environment.go and review.go), its type, default,
// an example and what it is for. docs/CONFIG.md and docs/relcap.schema.json
// are generated from it (reference_render.go, `go generate`), and
// relcap init comments the file it writes with it, so none of them can
// name a key the loader does not read or miss one it does: Reference
// fails on either (reference_test.go runs it).

// Type is what a key's value is.
type Type string

// Types of relcap.yaml values, as the documentation names them.
const (
	TypeString     Type = "string"
	TypePath       Type = "path"
	TypeInteger    Type = "integer"
	TypeNumber     Type = "number"
	TypeBoolean    Type = "boolean"
	TypeDuration   Type = "duration"
	TypeStrings    Type = "list of strings"
	TypeMapping    Type = "mapping"
	TypeList       Type = "list of mappings"
	TypeStringMap  Type = "mapping of strings"
	TypeForbidden  Type = "never set"
	TypeVersionOne Type = "integer (1)"
)

// types are the Types RenderSchema knows.
var types = []Type{TypeString, TypePath, TypeInteger, TypeNumber, TypeBoolean, TypeDuration, TypeStrings,
	TypeMapping, TypeList, TypeStringMap, TypeForbidden, TypeVersionOne}

// Key documents one key of relcap.yaml.
type Key struct {
	// Path names the key from the top, "[]" marking a list's items:
	// environments[].terraform.binary.
	Path     string
	Type     Type
	Required bool
	// Default is what the loader uses when the key is left out ("" when
	// nothing is used, or the key is required).
	Default string
	// Example is a YAML value for the key.
	Example string
	// Enum lists the only values accepted, for string keys that have them.
	Enum []string
	// Doc says what the key is for, in a sentence or two.
	Doc string
}

// Name is the key's own name, the last element of Path.
func (k Key) Name() string { return k.Path[strings.LastIndex(k.Path, ".")+1:] }

// Parent is the Path of the mapping holding the key ("" at the top).
func (k Key) Parent() string {
	if i := strings.LastIndex(k.Path, "."); i >= 0 {
		return k.Path[:i]
	}
	return ""
}

// level is one mapping of relcap.yaml and the keys the loader reads there.
type level struct {
	path string
	keys []string
}

// levels are relcap.yaml's mappings, each with the loader's own key list.
func levels() []level {
	return []level{
		{"", topKeys},
		{"classify", classifyKeys},
		{"effort", effortKeys},
		{"plans", plansKeys},
		{"compatibility", compatKeys},
		{"environments[]", envKeys},
		{"environments[].terraform", terraformKeys},
		{"environments[].registry", registryKeys},
		{"environments[].envrepo", envRepoKeys},
		{"environments[].envrepo.review", reviewKeys},
		{"environments[].argocd", argoCDKeys},
		{"environments[].approvals", approvalKeys},
		{"environments[].approvers", approverKeys},
		{"environments[].rehearsal", rehearsalKeys},
		{"environments[].rehearsal.interrupt", interruptKeys},
		{"environments[].custody", custodyKeys},
	}
}

// Reference lists every key of relcap.yaml in document order (each
// mapping's keys in the loader's order, a key's children right after it).
// It fails when the loader reads a key the reference does not document,
// or the reference documents one the loader does not read.
func Reference() ([]Key, error) {
	byPath := map[string]Key{}
	for _, k := range keyDocs {
		byPath[k.Path] = k
	}
	children := map[string][]string{}
	for _, l := range levels() {
		children[l.path] = l.keys
	}
	var out []Key
	var missing []string
	var walk func(parent string)
	walk = func(parent string) {
		for _, name := range children[parent] {
			p := joinKey(parent, name)
			k, ok := byPath[p]
			if !ok {
				missing = append(missing, p)
				continue
			}
			out = append(out, k)
			delete(byPath, p)
			walk(childLevel(k))
		}
	}
	walk("")
	for _, k := range out {
		if !slices.Contains(types, k.Type) {
			return nil, fmt.Errorf("config reference: %s has type %q, which the schema does not know", k.Path, k.Type)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("config reference: the loader reads %s, which the reference (reference_keys.go) does not document", strings.Join(missing, ", "))
	}
	if len(byPath) > 0 {
		var extra []string
		for p := range byPath {
			extra = append(extra, p)
		}
		slices.Sort(extra)
		return nil, fmt.Errorf("config reference: it documents %s, which the loader does not read", strings.Join(extra, ", "))
	}
	return out, nil
}

// childLevel is the level path of a mapping-valued key's children.
func childLevel(k Key) string {
	if k.Type == TypeList {
		return k.Path + "[]"
	}
	return k.Path
}

func joinKey(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}
