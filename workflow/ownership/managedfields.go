package ownership

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Who writes each field of a live object: Kubernetes keeps it in
// metadata.managedFields, one entry per field manager (a controller, a
// Terraform provider, kubectl), each with the set of fields it holds in
// the FieldsV1 form ("f:spec" → {"f:replicas": {}}; list elements keyed
// by "k:{...}", set members by "v:...", indexes by "i:N"; "." the element
// itself). relcap reads them into the field paths of FieldPaths, so that
// what a manager holds compares with what Terraform and Argo CD desire.

// FieldManager is one entry of a live object's metadata.managedFields:
// the manager, how it wrote (Apply, server-side; Update, anything else),
// through which subresource, when it last wrote, and the desired-state
// fields it holds now. Paths only: values never leave the source.
type FieldManager struct {
	Manager     string    `json:"manager"`
	Operation   string    `json:"operation,omitempty"`
	Subresource string    `json:"subresource,omitempty"`
	Time        time.Time `json:"time,omitzero"`
	Fields      []string  `json:"fields,omitempty"`
}

// The operations of a managedFields entry.
const (
	OperationApply  = "Apply"
	OperationUpdate = "Update"
)

// LiveFieldManagers reads the managedFields of live, a live object as
// JSON decodes it, into FieldManagers whose Fields are in FieldPaths'
// scheme (list elements keyed as the live object's lists are). Entries
// of the status subresource, or holding no desired-state field, are
// left out. A malformed entry is skipped: it cannot make a field look
// owned.
func LiveFieldManagers(live map[string]any) []FieldManager {
	md, _ := live["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	var out []FieldManager
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		fm := FieldManager{}
		fm.Manager, _ = m["manager"].(string)
		fm.Operation, _ = m["operation"].(string)
		fm.Subresource, _ = m["subresource"].(string)
		if s, ok := m["time"].(string); ok {
			fm.Time, _ = time.Parse(time.RFC3339, s)
		}
		set, _ := m["fieldsV1"].(map[string]any)
		if fm.Subresource == "status" || set == nil {
			continue
		}
		if fm.Fields = ManagedFieldPaths(set, live); len(fm.Fields) > 0 {
			out = append(out, fm)
		}
	}
	return out
}

// ManagedFieldPaths converts one manager's FieldsV1 set into the field
// paths it holds, sorted, reading live (the object, may be nil) to key
// list elements the way FieldPaths keys the manifest's. apiVersion, kind,
// status and the identifying metadata are left out, as FieldPaths does.
func ManagedFieldPaths(set map[string]any, live map[string]any) []string {
	var out []string
	for k, v := range set {
		name, ok := strings.CutPrefix(k, "f:")
		if !ok {
			continue
		}
		child, _ := v.(map[string]any)
		switch name {
		case "apiVersion", "kind", "status":
			continue
		case "metadata":
			md, _ := live["metadata"].(map[string]any)
			for mk, mv := range child {
				mname, ok := strings.CutPrefix(mk, "f:")
				if !ok || identityMeta[mname] {
					continue
				}
				sub, _ := mv.(map[string]any)
				out = walkFieldSet(out, JoinField("metadata", mname), sub, md[mname])
			}
			continue
		}
		out = walkFieldSet(out, fieldKey(name), child, live[name])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// walkFieldSet appends the leaf paths of set below p; node is the live
// value at p.
func walkFieldSet(out []string, p string, set map[string]any, node any) []string {
	n := len(out)
	for k, v := range set {
		child, _ := v.(map[string]any)
		switch {
		case k == ".":
		case strings.HasPrefix(k, "f:"):
			name := k[2:]
			m, _ := node.(map[string]any)
			out = walkFieldSet(out, JoinField(p, name), child, m[name])
		case strings.HasPrefix(k, "v:"):
			// A member of a set of scalars (finalizers): the list is
			// one field, as FieldPaths has it.
			out = append(out, p)
		case strings.HasPrefix(k, "k:"), strings.HasPrefix(k, "i:"):
			ep, elem, byName, ok := listElement(p, k, node)
			if !ok {
				continue
			}
			inner := make(map[string]any, len(child))
			for ek, ev := range child {
				if !(byName && ek == "f:name") {
					inner[ek] = ev
				}
			}
			out = walkFieldSet(out, ep, inner, elem)
		}
	}
	if len(out) == n {
		out = append(out, p)
	}
	return out
}

// listElement finds the element of the live list node that key ("k:" with
// the element's key fields as JSON, or "i:" with its index) names, and
// returns its path below p as FieldPaths writes it: by name where every
// element has a distinct name, else by index. When the live list does
// not have it (it changed since), a key with a name still names it.
func listElement(p, key string, node any) (path string, elem any, byName bool, ok bool) {
	list, _ := node.([]any)
	names, _ := listNames(list)
	at := -1
	var want map[string]any
	if idx, isIdx := strings.CutPrefix(key, "i:"); isIdx {
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 {
			return "", nil, false, false
		}
		if i < len(list) {
			at = i
		}
	} else {
		if err := json.Unmarshal([]byte(key[2:]), &want); err != nil || len(want) == 0 {
			return "", nil, false, false
		}
		for i, e := range list {
			if m, ok := e.(map[string]any); ok && hasFields(m, want) {
				at = i
				break
			}
		}
	}
	switch {
	case at >= 0 && names != nil:
		return p + "[" + names[at] + "]", list[at], true, true
	case at >= 0:
		return p + "[" + strconv.Itoa(at) + "]", list[at], false, true
	}
	if n, isName := want["name"].(string); isName && n != "" && !strings.ContainsAny(n, `[]"`) && !isIndex(n) {
		return p + "[" + n + "]", nil, true, true
	}
	return "", nil, false, false
}

// hasFields reports whether m holds every key of want with an equal value.
func hasFields(m, want map[string]any) bool {
	for k, v := range want {
		if !reflect.DeepEqual(m[k], v) {
			return false
		}
	}
	return true
}
