package argocd

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/ownership"
)

// OwnershipSource returns a workflow.OwnershipSource that reads, for an
// environment, its application (argocd.app in relcap.yaml) and the other
// applications named here, from this adapter's server. Each app's managed
// resources become workflow.ManagedObjects carrying the app's sync policy,
// ignoreDifferences and self-heal history (see AppObjects).
func (a *Adapter) OwnershipSource(apps ...string) workflow.OwnershipSource {
	return &ownershipSource{a: a, apps: apps}
}

type ownershipSource struct {
	a    *Adapter
	apps []string
}

// ManagedObjects reads every application of env in turn; a missing or
// unreadable application is an error, since skipping it would hide its
// objects from the check.
func (s *ownershipSource) ManagedObjects(ctx context.Context, env workflow.Environment) ([]ownership.ManagedObject, error) {
	var names []string
	for _, n := range append([]string{env.ArgoCD.App}, s.apps...) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var out []ownership.ManagedObject
	for _, n := range names {
		objs, err := s.a.AppObjects(ctx, appstate.AppRef{Env: env.Name, Name: n})
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// AppObjects reads one application (Get: spec and history) and its
// managed resources, and translates them with OwnedObjects.
func (a *Adapter) AppObjects(ctx context.Context, ref appstate.AppRef) ([]ownership.ManagedObject, error) {
	app, err := a.getApp(ctx, ref)
	if err != nil {
		return nil, err
	}
	res, err := a.ManagedResources(ctx, ref)
	if err != nil {
		return nil, err
	}
	return OwnedObjects(factsOf(ref.Name, app), res)
}

// AppFacts is what the ownership check needs of an Application besides
// its resources.
type AppFacts struct {
	Name              string
	Policy            SyncPolicy
	IgnoreDifferences []IgnoreDifference
	History           []HistoryEntry
	// LastSync is the application's last sync operation, nil when none
	// is known.
	LastSync *SyncAttempt
}

// SyncAttempt is an Application's last sync operation as far as
// self-heal is concerned. Argo CD 2.x records a self-heal only there, not
// in its history: a self-heal syncs just the out-of-sync resources
// (Partial), and history keeps full syncs alone (found on the lab).
type SyncAttempt struct {
	Revision  string
	Automated bool
	Partial   bool
	// SelfHealAttempts is operation.sync.selfHealAttemptsCount: self-heal
	// syncs of Revision in a row, each within Argo CD's cool-down
	// (--self-heal-backoff-cooldown-seconds, 330 s by default) of the
	// last.
	SelfHealAttempts int
	Succeeded        bool
	FinishedAt       time.Time
	// Unchanged says the sync applied every resource it synced without a
	// change ("deployment.apps/web unchanged"): it put nothing back.
	// Argo CD 3.x starts such a self-heal right after most automated
	// syncs of a new revision, from a comparison made before its cluster
	// cache saw its own apply (found on the lab, 3 of 4 syncs; never on
	// 2.14).
	Unchanged bool
}

// IgnoreDifference is one entry of an Application's
// spec.ignoreDifferences.
type IgnoreDifference struct {
	Group, Kind, Name, Namespace string
	JSONPointers                 []string
	JQPathExpressions            []string
	// ManagedFieldsManagers are trusted field managers; which fields they
	// hold is known only to the cluster, so relcap cannot translate them
	// into field paths and does not count them as ignored.
	ManagedFieldsManagers []string
}

func factsOf(name string, app *v1alpha1.Application) AppFacts {
	f := AppFacts{Name: name}
	if sp := app.Spec.SyncPolicy; sp != nil && sp.Automated != nil {
		f.Policy = SyncPolicy{Automated: true, SelfHeal: sp.Automated.SelfHeal, Prune: sp.Automated.Prune}
	}
	for _, d := range app.Spec.IgnoreDifferences {
		f.IgnoreDifferences = append(f.IgnoreDifferences, IgnoreDifference{
			Group: d.Group, Kind: d.Kind, Name: d.Name, Namespace: d.Namespace,
			JSONPointers: d.JSONPointers, JQPathExpressions: d.JQPathExpressions, ManagedFieldsManagers: d.ManagedFieldsManagers,
		})
	}
	for _, h := range app.Status.History {
		e := HistoryEntry{ID: h.ID, Revision: h.Revision, DeployedAt: h.DeployedAt.Time, Automated: h.InitiatedBy.Automated, Username: h.InitiatedBy.Username}
		if e.Revision == "" && len(h.Revisions) > 0 {
			e.Revision = h.Revisions[0]
		}
		f.History = append(f.History, e)
	}
	if op := app.Status.OperationState; op != nil && op.Operation.Sync != nil {
		last := &SyncAttempt{Revision: op.Operation.Sync.Revision, Automated: op.Operation.InitiatedBy.Automated,
			Partial: len(op.Operation.Sync.Resources) > 0, SelfHealAttempts: int(op.Operation.Sync.SelfHealAttemptsCount),
			Succeeded: op.Phase == "Succeeded"}
		if op.SyncResult != nil && op.SyncResult.Revision != "" {
			last.Revision = op.SyncResult.Revision
		}
		if op.FinishedAt != nil {
			last.FinishedAt = op.FinishedAt.Time
		}
		if op.SyncResult != nil && len(op.SyncResult.Resources) > 0 {
			last.Unchanged = true
			for _, r := range op.SyncResult.Resources {
				last.Unchanged = last.Unchanged && r != nil && strings.HasSuffix(r.Message, " unchanged")
			}
		}
		f.LastSync = last
	}
	return f
}

// OwnedObjects translates an application's managed resources into the
// objects Argo CD writes: identity, the field paths the desired (target)
// manifest sets, in ownership.FieldPaths' scheme, the fields its
// ignoreDifferences leaves alone, and who holds each field of the live
// object (its managedFields, ownership.LiveFieldManagers). A resource Git no longer has (no target
// state) is still managed, with no fields known: Argo CD prunes it or
// shows it as OutOfSync. Every object carries the app's sync policy and
// the number of self-heal syncs in its history (SelfHealSyncs).
func OwnedObjects(app AppFacts, resources []ManagedResource) ([]ownership.ManagedObject, error) {
	rev, heals, lastHeal := selfHeals(app.History, app.LastSync)
	out := make([]ownership.ManagedObject, 0, len(resources))
	for _, r := range resources {
		o := ownership.ManagedObject{
			Manager: ownership.OwnerArgoCD, App: app.Name,
			Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Automated: app.Policy.Automated, SelfHeal: app.Policy.SelfHeal, Prune: app.Policy.Prune,
			Revision: rev, SelfHealSyncs: heals, LastSelfHeal: lastHeal,
		}
		var target map[string]any
		if r.TargetState != "" {
			if err := json.Unmarshal([]byte(r.TargetState), &target); err != nil {
				// Never quote the manifest: a Secret's target state is in it.
				return nil, fmt.Errorf("argo cd application %s: target state of %s %s/%s is not a JSON object", app.Name, r.Kind, r.Namespace, r.Name)
			}
			o.Fields = ownership.FieldPaths(target)
		}
		if r.LiveState != "" {
			var live map[string]any
			if err := json.Unmarshal([]byte(r.LiveState), &live); err != nil {
				return nil, fmt.Errorf("argo cd application %s: live state of %s %s/%s is not a JSON object", app.Name, r.Kind, r.Namespace, r.Name)
			}
			o.Live = ownership.LiveFieldManagers(live)
		}
		for _, d := range app.IgnoreDifferences {
			if !d.matches(r) {
				continue
			}
			for _, p := range d.JSONPointers {
				if f := ownership.JSONPointerField(p, target); f != "" {
					o.IgnoredFields = append(o.IgnoredFields, f)
				}
			}
			for _, e := range d.JQPathExpressions {
				if f, ok := JQPathField(e, target); ok {
					o.IgnoredFields = append(o.IgnoredFields, f)
				}
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// matches applies Argo CD's selection of an ignoreDifferences entry: group
// and kind must match (globs allowed), name and namespace when given.
func (d IgnoreDifference) matches(r ManagedResource) bool {
	glob := func(p, v string) bool {
		if p == v {
			return true
		}
		ok, err := path.Match(p, v)
		return err == nil && ok
	}
	return glob(d.Group, r.Group) && glob(d.Kind, r.Kind) &&
		(d.Name == "" || glob(d.Name, r.Name)) && (d.Namespace == "" || glob(d.Namespace, r.Namespace))
}

// selfHeals returns the revision of the latest sync in history (oldest
// first), how many automated syncs repeated it, and when the latest did.
// Two records count: history, where an automated sync repeating an
// earlier sync of the same revision put Git's state back over a change
// made by someone else (full re-syncs); and the last operation, where
// Argo CD 2.x keeps its self-heal (a partial automated sync of the
// deployed revision, counted in a row by selfHealAttemptsCount).
func selfHeals(history []HistoryEntry, last *SyncAttempt) (rev string, n int, at time.Time) {
	if len(history) > 0 {
		rev = history[len(history)-1].Revision
	}
	seen := false
	for _, h := range history {
		if h.Revision != rev {
			continue
		}
		if seen && h.Automated {
			n++
			at = h.DeployedAt
		}
		seen = true
	}
	if last == nil || !last.Automated || !last.Succeeded || (rev != "" && last.Revision != rev) {
		return rev, n, at
	}
	if last.Partial || last.SelfHealAttempts > 0 {
		heals := max(last.SelfHealAttempts, 1)
		if last.Unchanged {
			// The latest attempt changed nothing: only the ones
			// before it in the row can have put something back.
			heals--
		}
		if heals == 0 {
			return rev, n, at
		}
		if rev == "" {
			rev = last.Revision
		}
		n = max(n, heals)
		if last.FinishedAt.After(at) {
			at = last.FinishedAt
		}
	}
	return rev, n, at
}

// jqSelectName is the one filter in jq path expressions relcap
// understands: selecting a list element by name, as Argo CD's docs do for
// containers.
var jqSelectName = regexp.MustCompile(`^select\(\s*\.name\s*==\s*"([^"]*)"\s*\)$`)

// jqSeg is one step of a jq path: a key, an index, any element (idx -1),
// or the element with a name.
type jqSeg struct {
	key  string
	idx  int
	name string
	kind byte // 'k' key, 'i' index, '*' any element, 'n' named element
}

// JQPathField converts a jq path expression of ignoreDifferences
// (".spec.replicas", `.spec.template.spec.containers[] | select(.name ==
// "web") | .image`, ".metadata.annotations[\"a.b/c\"]") into a field path,
// reading obj (the desired manifest, may be nil) to key indexed elements by
// name. "[]" without a select becomes "[*]". It reports false for an
// expression outside that subset; the field is then not counted as
// ignored, which can only make the check stricter.
func JQPathField(expr string, obj map[string]any) (string, bool) {
	var segs []jqSeg
	for part := range strings.SplitSeq(expr, "|") {
		part = strings.TrimSpace(part)
		if m := jqSelectName.FindStringSubmatch(part); m != nil {
			if len(segs) == 0 || segs[len(segs)-1].kind != '*' {
				return "", false
			}
			segs[len(segs)-1] = jqSeg{kind: 'n', name: m[1]}
			continue
		}
		s, ok := jqPath(part)
		if !ok {
			return "", false
		}
		segs = append(segs, s...)
	}
	if len(segs) == 0 {
		return "", false
	}
	var p string
	var node any = obj
	for _, s := range segs {
		switch s.kind {
		case 'k':
			p = ownership.JoinField(p, s.key)
			m, _ := node.(map[string]any)
			node = m[s.key]
		case '*':
			p += "[*]"
			node = nil
		case 'n':
			p += "[" + s.name + "]"
			node = elementNamed(node, s.name)
		case 'i':
			l, _ := node.([]any)
			name := ""
			if s.idx < len(l) {
				if m, ok := l[s.idx].(map[string]any); ok {
					name, _ = m["name"].(string)
				}
				node = l[s.idx]
			} else {
				node = nil
			}
			if name == "" {
				name = strconv.Itoa(s.idx)
			}
			p += "[" + name + "]"
		}
	}
	return p, p != ""
}

func elementNamed(node any, name string) any {
	l, _ := node.([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

// jqPath parses one path expression: .a.b, ."k", ["k"], [N], [] and
// optional '?' after each step.
func jqPath(s string) ([]jqSeg, bool) {
	var segs []jqSeg
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '?':
			i++
		case c == '.' && i+1 < len(s) && s[i+1] == '"':
			end := strings.IndexByte(s[i+2:], '"')
			if end < 0 {
				return nil, false
			}
			segs = append(segs, jqSeg{kind: 'k', key: s[i+2 : i+2+end]})
			i += end + 3
		case c == '.':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] == '-' || s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
				j++
			}
			if j > i+1 {
				segs = append(segs, jqSeg{kind: 'k', key: s[i+1 : j]})
			}
			i = j
		case c == '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, false
			}
			inner := strings.TrimSpace(s[i+1 : i+end])
			switch {
			case inner == "":
				segs = append(segs, jqSeg{kind: '*'})
			case strings.HasPrefix(inner, `"`) && strings.HasSuffix(inner, `"`) && len(inner) >= 2:
				segs = append(segs, jqSeg{kind: 'k', key: inner[1 : len(inner)-1]})
			default:
				n, err := strconv.Atoi(inner)
				if err != nil || n < 0 {
					return nil, false
				}
				segs = append(segs, jqSeg{kind: 'i', idx: n})
			}
			i += end + 1
		default:
			return nil, false
		}
	}
	return segs, len(segs) > 0
}
