package ownership

import (
	"encoding/json"
	"maps"
	"slices"
	"unicode/utf8"
)

// FieldChange is one desired-state field of a Kubernetes manifest whose
// value changed: Before and After as compact JSON ("" when the field was
// absent on that side), or Masked when they must not be shown.
type FieldChange struct {
	Field  string `json:"field"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	Masked bool   `json:"masked,omitempty"`
}

// maxShownValue is the most of a value a field change shows.
const maxShownValue = 60

// ManifestChanges lists the fields whose values differ between two
// versions of one manifest, in FieldPaths' scheme, sorted by field. A
// Secret's data and stringData are masked, and so is any value mask says
// is secret: a change is named, never its secret value.
func ManifestChanges(before, after map[string]any, mask func(string) bool) []FieldChange {
	b, a := manifestValues(before), manifestValues(after)
	secretKind := kindOf(before) == "Secret" || kindOf(after) == "Secret"
	var out []FieldChange
	for _, f := range slices.Sorted(maps.Keys(union(b, a))) {
		bv, inB := b[f]
		av, inA := a[f]
		if inB && inA && bv == av {
			continue
		}
		c := FieldChange{Field: f, Before: bv, After: av}
		if secretKind && (FieldCovers("data", f) || FieldCovers("stringData", f)) || mask != nil && (mask(bv) || mask(av)) {
			c = FieldChange{Field: f, Masked: true}
		}
		out = append(out, c)
	}
	return out
}

// String renders the change as "spec.replicas 5 → 2".
func (c FieldChange) String() string {
	if c.Masked {
		return c.Field + " changed (value masked)"
	}
	return c.Field + " " + shown(c.Before) + " → " + shown(c.After)
}

func shown(v string) string {
	if v == "" {
		return "(absent)"
	}
	if utf8.RuneCountInString(v) > maxShownValue {
		r := []rune(v)
		return string(r[:maxShownValue-1]) + "…"
	}
	return v
}

func kindOf(obj map[string]any) string {
	k, _ := obj["kind"].(string)
	return k
}

// manifestValues maps each field of obj to its value as compact JSON.
func manifestValues(obj map[string]any) map[string]string {
	out := map[string]string{}
	walkManifest(obj, func(p string, v any) {
		b, err := json.Marshal(v)
		if err == nil {
			out[p] = string(b)
		}
	})
	return out
}

func union(a, b map[string]string) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
