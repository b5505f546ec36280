package workflow

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// Owner is a tool or controller that writes desired state: "terraform",
// "argocd", or a named third such as "hpa".
type Owner string

// The two managers relcap reads directly.
const (
	OwnerTerraform Owner = "terraform"
	OwnerArgoCD    Owner = "argocd"
)

// OwnershipMap is a loaded ownership.yaml.
type OwnershipMap struct {
	File     string
	Rules    []OwnershipRule
	Handoffs []Handoff
}

// OwnershipRule assigns an owner to the objects its match selects, and
// optionally other owners to single fields of them. The first matching rule
// wins.
type OwnershipRule struct {
	Line   int // line in File, for findings and errors
	Match  Match
	Owner  Owner
	Fields map[string]Owner
}

// Handoff declares that an object is bootstrapped by one owner and then owned
// by another (e.g. Terraform installs Argo CD, Argo CD then manages itself).
type Handoff struct {
	Line  int
	Match Match
	From  Owner
	To    Owner
	Note  string
}

// Match selects managed objects. Empty fields match anything; values are
// glob patterns (path.Match syntax).
type Match struct {
	TerraformType    string `json:"terraform_type,omitempty"`
	TerraformAddress string `json:"terraform_address,omitempty"`
	Group            string `json:"group,omitempty"`
	Kind             string `json:"kind,omitempty"`
	Namespace        string `json:"namespace,omitempty"`
	Name             string `json:"name,omitempty"`
	App              string `json:"app,omitempty"`
}

// IsZero reports whether the match has no criteria (and so matches all).
func (m Match) IsZero() bool { return m == Match{} }

func (m Match) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("terraform_type", m.TerraformType)
	add("terraform_address", m.TerraformAddress)
	add("group", m.Group)
	add("kind", m.Kind)
	add("namespace", m.Namespace)
	add("name", m.Name)
	add("app", m.App)
	if len(parts) == 0 {
		return "{}"
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// Matches reports whether the object satisfies every criterion of m.
// Terraform criteria never match objects that have no Terraform address, and
// Kubernetes criteria never match objects without a Kubernetes identity.
func (m Match) Matches(o ManagedObject) bool {
	return globOK(m.TerraformType, o.TerraformType) &&
		globOK(m.TerraformAddress, o.TerraformAddress) &&
		globOK(m.Group, o.Group) &&
		globOK(m.Kind, o.Kind) &&
		globOK(m.Namespace, o.Namespace) &&
		globOK(m.Name, o.Name) &&
		globOK(m.App, o.App)
}

func globOK(pattern, value string) bool {
	if pattern == "" {
		return true
	}
	if value == "" {
		return false
	}
	ok, err := path.Match(pattern, value)
	return err == nil && ok
}

// ManagedObject is one thing a manager writes: a Terraform resource (with a
// Kubernetes identity when it manages a Kubernetes object) or a resource of
// an Argo CD application.
type ManagedObject struct {
	Manager Owner `json:"manager"`
	// Terraform side.
	TerraformAddress string `json:"terraform_address,omitempty"`
	TerraformType    string `json:"terraform_type,omitempty"`
	// Kubernetes identity; empty Kind means "not a Kubernetes object".
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// App is the Argo CD application managing it.
	App string `json:"app,omitempty"`
	// Fields are the desired-state field paths the manager sets, e.g.
	// "spec.replicas", "spec.template.spec.containers[web].image".
	Fields []string `json:"fields,omitempty"`
}

// KubeKey identifies the Kubernetes object, or "" when there is none.
func (o ManagedObject) KubeKey() string {
	if o.Kind == "" {
		return ""
	}
	g := o.Group
	if g == "" {
		g = "core"
	}
	ns := o.Namespace
	if ns == "" {
		return fmt.Sprintf("%s/%s %s", g, o.Kind, o.Name)
	}
	return fmt.Sprintf("%s/%s %s/%s", g, o.Kind, ns, o.Name)
}

// Subject names the object for findings.
func (o ManagedObject) Subject() string {
	if k := o.KubeKey(); k != "" {
		return k
	}
	return o.TerraformAddress
}

// Via names who manages it and through what, e.g. "terraform kubectl_manifest.web".
func (o ManagedObject) Via() string {
	switch {
	case o.TerraformAddress != "":
		return string(o.Manager) + " " + o.TerraformAddress
	case o.App != "":
		return string(o.Manager) + " app " + o.App
	}
	return string(o.Manager)
}

// RuleFor returns the first rule that matches o, and its index, or -1.
func (m OwnershipMap) RuleFor(o ManagedObject) (OwnershipRule, int) {
	for i, r := range m.Rules {
		if r.Match.Matches(o) {
			return r, i
		}
	}
	return OwnershipRule{}, -1
}

// HandoffFor returns the declared hand-off covering o, if any.
func (m OwnershipMap) HandoffFor(o ManagedObject) (Handoff, bool) {
	for _, h := range m.Handoffs {
		if h.Match.Matches(o) {
			return h, true
		}
	}
	return Handoff{}, false
}

// CheckOwnership is the pure core of the ownership check: every managed
// object must match a rule naming its manager, and no Kubernetes object or
// field may be written by two managers. The richer Argo CD-specific checks
// (ignoreDifferences, self-heal loops) build on this in later steps.
func CheckOwnership(m OwnershipMap, objects []ManagedObject) []Finding {
	var findings []Finding
	used := make([]bool, len(m.Rules))

	byKube := map[string][]ManagedObject{}
	var kubeOrder []string
	for _, o := range objects {
		rule, idx := m.RuleFor(o)
		if idx >= 0 {
			used[idx] = true
		}
		if k := o.KubeKey(); k != "" {
			if _, seen := byKube[k]; !seen {
				kubeOrder = append(kubeOrder, k)
			}
			byKube[k] = append(byKube[k], o)
		}
		switch {
		case idx < 0:
			findings = append(findings, Finding{
				Severity:   Blocker,
				Code:       "ownership.unowned",
				Subject:    o.Subject(),
				Message:    fmt.Sprintf("managed by %s but no rule in %s matches it", o.Via(), m.File),
				NextAction: fmt.Sprintf("add a rule for it to %s naming its one owner", m.File),
			})
		case rule.Owner != o.Manager:
			if h, ok := m.HandoffFor(o); ok && h.From == o.Manager && h.To == rule.Owner {
				// A declared bootstrap hand-off not yet finished.
				findings = append(findings, Finding{
					Severity:   Warning,
					Code:       "ownership.handoff-pending",
					Subject:    o.Subject(),
					Message:    fmt.Sprintf("hand-off %s → %s declared at %s:%d is not complete: still managed by %s", h.From, h.To, m.File, h.Line, o.Via()),
					NextAction: fmt.Sprintf("remove it from %s once %s manages it (e.g. terraform state rm)", h.From, h.To),
				})
				continue
			}
			findings = append(findings, Finding{
				Severity:   Blocker,
				Code:       "ownership.wrong-owner",
				Subject:    o.Subject(),
				Message:    fmt.Sprintf("managed by %s but %s:%d gives it to %s", o.Via(), m.File, rule.Line, rule.Owner),
				NextAction: fmt.Sprintf("stop managing it from %s, or change the rule at %s:%d", o.Manager, m.File, rule.Line),
			})
		}
	}

	for _, k := range kubeOrder {
		findings = append(findings, conflictFindings(m, k, byKube[k])...)
	}

	for i, r := range m.Rules {
		if !used[i] {
			findings = append(findings, Finding{
				Severity:   Warning,
				Code:       "ownership.stale-rule",
				Subject:    fmt.Sprintf("%s:%d", m.File, r.Line),
				Message:    fmt.Sprintf("rule %s → %s matches no managed object", r.Match, r.Owner),
				NextAction: "delete the rule or fix its match",
			})
		}
	}
	SortFindings(findings)
	return findings
}

// conflictFindings reports a Kubernetes object written by more than one
// manager, naming the fields both write. Two writers of one field are a
// conflict even when the rest of the object is split between them.
func conflictFindings(m OwnershipMap, key string, writers []ManagedObject) []Finding {
	managers := map[Owner]bool{}
	for _, w := range writers {
		managers[w.Manager] = true
	}
	if len(managers) < 2 {
		return nil
	}
	fieldWriters := map[string][]string{}
	for _, w := range writers {
		for _, f := range w.Fields {
			fieldWriters[f] = append(fieldWriters[f], w.Via())
		}
	}
	var overlap []string
	for f, ws := range fieldWriters {
		if len(ws) > 1 {
			overlap = append(overlap, f)
		}
	}
	sort.Strings(overlap)
	var vias []string
	for _, w := range writers {
		vias = append(vias, w.Via())
	}
	slices.Sort(vias)
	vias = slices.Compact(vias)

	_, hasHandoff := m.HandoffFor(writers[0])
	msg := fmt.Sprintf("written by %s", strings.Join(vias, " and "))
	ev := map[string]string{"writers": strings.Join(vias, ", ")}
	if len(overlap) > 0 {
		msg += "; both set " + strings.Join(overlap, ", ")
		ev["fields"] = strings.Join(overlap, ", ")
	}
	next := "give the object (or each overlapping field) one owner in " + m.File + " and remove it from the other tool"
	if !hasHandoff {
		next += "; if this is a bootstrap, declare a hand-off"
	}
	return []Finding{{
		Severity:   Blocker,
		Code:       "ownership.conflict",
		Subject:    key,
		Message:    msg,
		NextAction: next,
		Evidence:   ev,
	}}
}
