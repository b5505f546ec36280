package ownership

import (
	"slices"
	"strconv"
	"strings"
)

// Field paths name the desired-state fields a manager sets, in one scheme
// shared by every source so that Terraform's and Argo CD's paths compare
// equal: map keys joined by dots ("spec.replicas"), list elements that carry
// a name keyed by that name ("spec.template.spec.containers[web].image"),
// other list elements by index ("spec.rules[0].host"), and map keys that
// contain '.', '[', ']' or '"' quoted (`metadata.labels["app.kubernetes.io/name"]`).
// Keying containers by name rather than index keeps a path stable when a
// sidecar is inserted, and is what a person reads in a manifest. A list of
// scalars (args, finalizers) is one field. In ownership.yaml and in ignore
// lists, "[*]" matches any list element, and a path covers every field
// below it.

// identityMeta are the metadata keys that name an object or are written by
// the API server; they are not desired state anyone "owns".
var identityMeta = map[string]bool{
	"name": true, "namespace": true, "generateName": true, "uid": true, "resourceVersion": true,
	"generation": true, "creationTimestamp": true, "deletionTimestamp": true,
	"deletionGracePeriodSeconds": true, "managedFields": true, "selfLink": true, "ownerReferences": true,
}

// FieldPaths flattens a Kubernetes manifest into the desired-state field
// paths it sets, sorted. apiVersion, kind, status and the identifying or
// server-written metadata are left out; only paths are returned, never
// values, so a Secret's data yields its key names and nothing else.
func FieldPaths(obj map[string]any) []string {
	var out []string
	walkManifest(obj, func(p string, _ any) { out = append(out, p) })
	slices.Sort(out)
	return slices.Compact(out)
}

// walkManifest calls leaf with each desired-state field path of obj and
// its value, in FieldPaths' scheme (an empty map or list, and a list of
// scalars, is one field with its value).
func walkManifest(obj map[string]any, leaf func(path string, v any)) {
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind", "status":
			continue
		case "metadata":
			md, ok := v.(map[string]any)
			if !ok {
				continue
			}
			for mk, mv := range md {
				if identityMeta[mk] {
					continue
				}
				flatten(JoinField("metadata", mk), mv, leaf)
			}
			continue
		}
		flatten(fieldKey(k), v, leaf)
	}
}

// flatten calls leaf with the leaf paths of v below p and their values.
func flatten(p string, v any, leaf func(string, any)) {
	switch v := v.(type) {
	case nil:
		return
	case map[string]any:
		if len(v) == 0 {
			leaf(p, v)
			return
		}
		for k, c := range v {
			flatten(JoinField(p, k), c, leaf)
		}
		return
	case []any:
		if len(v) == 0 {
			leaf(p, v)
			return
		}
		names, objects := listNames(v)
		if !objects {
			leaf(p, v) // a list of scalars is one value
			return
		}
		for i, e := range v {
			m := e.(map[string]any)
			if names != nil {
				ep := p + "[" + names[i] + "]"
				n := 0
				for k, c := range m {
					if k != "name" {
						flatten(JoinField(ep, k), c, func(p string, v any) { n++; leaf(p, v) })
					}
				}
				if n == 0 {
					leaf(ep, m) // only a name: the element itself is the field
				}
				continue
			}
			flatten(p+"["+strconv.Itoa(i)+"]", m, leaf)
		}
		return
	}
	leaf(p, v)
}

// listNames reports whether every element of l is an object and, when every
// object has a distinct, non-empty string name usable in a path, returns
// those names.
func listNames(l []any) (names []string, objects bool) {
	names = make([]string, len(l))
	seen := make(map[string]bool, len(l))
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		n, _ := m["name"].(string)
		if names == nil || n == "" || seen[n] || strings.ContainsAny(n, `[]"`) || isIndex(n) {
			names = nil
			continue
		}
		seen[n] = true
		names[i] = n
	}
	return names, true
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// fieldKey writes a map key as a path segment, quoting it when it would
// otherwise read as more than one segment.
func fieldKey(k string) string {
	if k == "" || strings.ContainsAny(k, `.[]"`) {
		return `["` + strings.ReplaceAll(k, `"`, `\"`) + `"]`
	}
	return k
}

// JoinField appends map key k to field path p, quoting k when it would
// otherwise read as more than one segment.
func JoinField(p, k string) string {
	k = fieldKey(k)
	if p == "" {
		return k
	}
	if k[0] == '[' {
		return p + k
	}
	return p + "." + k
}

// writeKey appends map key k to the path being built in b.
func writeKey(b *strings.Builder, k string) {
	k = fieldKey(k)
	if b.Len() > 0 && k[0] != '[' {
		b.WriteByte('.')
	}
	b.WriteString(k)
}

// JSONPointerField converts an RFC 6901 JSON pointer (as Argo CD's
// ignoreDifferences.jsonPointers holds) into a field path, reading obj (the
// desired manifest, may be nil) to key list elements by name where the
// element has one: "/spec/template/spec/containers/0/image" becomes
// "spec.template.spec.containers[web].image" when the first container is
// named web. It returns "" for the empty pointer.
func JSONPointerField(ptr string, obj map[string]any) string {
	if ptr == "" || ptr == "/" {
		return ""
	}
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var b strings.Builder
	var node any = obj
	for _, raw := range toks {
		tok := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				b.WriteString("[" + tok + "]")
				node = nil
				continue
			}
			if names, _ := listNames(n); names != nil {
				b.WriteString("[" + names[i] + "]")
			} else {
				b.WriteString("[" + tok + "]")
			}
			node = n[i]
		case map[string]any:
			writeKey(&b, tok)
			node = n[tok]
		default:
			// Past what the manifest holds: a number is most likely an
			// index, anything else a key.
			if isIndex(tok) && b.Len() > 0 {
				b.WriteString("[" + tok + "]")
			} else {
				writeKey(&b, tok)
			}
			node = nil
		}
	}
	return b.String()
}

// FieldCovers reports whether pattern names field or one of its ancestors.
// "[*]" in pattern matches any one list element.
func FieldCovers(pattern, field string) bool {
	if !strings.Contains(pattern, "[*]") {
		return strings.HasPrefix(field, pattern) &&
			(len(field) == len(pattern) || field[len(pattern)] == '.' || field[len(pattern)] == '[')
	}
	ps, fs := splitField(pattern), splitField(field)
	if len(ps) > len(fs) {
		return false
	}
	for i, p := range ps {
		if p == "[*]" {
			if !strings.HasPrefix(fs[i], "[") {
				return false
			}
			continue
		}
		if p != fs[i] {
			return false
		}
	}
	return true
}

// splitField splits a field path into segments: "a.b[c].d" into "a", "b",
// "[c]", "d". Quoted keys keep their brackets and quotes.
func splitField(p string) []string {
	var segs []string
	start := 0
	inBracket, inQuote := false, false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case inQuote:
			if c == '\\' {
				i++
			} else if c == '"' {
				inQuote = false
			}
		case c == '"' && inBracket:
			inQuote = true
		case c == '[' && !inBracket:
			if i > start {
				segs = append(segs, p[start:i])
			}
			start, inBracket = i, true
		case c == ']' && inBracket:
			segs = append(segs, p[start:i+1])
			start, inBracket = i+1, false
		case c == '.' && !inBracket:
			if i > start {
				segs = append(segs, p[start:i])
			}
			start = i + 1
		}
	}
	if start < len(p) {
		segs = append(segs, p[start:])
	}
	return segs
}

// GroupOf returns the API group of an apiVersion: "apps" for "apps/v1", ""
// (the core group) for "v1".
func GroupOf(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}
