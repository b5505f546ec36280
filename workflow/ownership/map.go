package ownership

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// Owner is a tool or controller that writes desired state: "terraform",
// "argocd", or a named third such as "hpa".
type Owner string

// The two managers relcap reads directly.
const (
	OwnerTerraform Owner = "terraform"
	OwnerArgoCD    Owner = "argocd"
)

// Map is a loaded ownership.yaml.
type Map struct {
	File     string
	Rules    []Rule
	Handoffs []Handoff
}

// Rule assigns an owner to the objects its match selects, and
// optionally other owners to single fields of them. The first matching rule
// wins.
type Rule struct {
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
	// "spec.replicas", "spec.template.spec.containers[web].image" (the
	// scheme of FieldPaths). Paths only: values never leave the source.
	Fields []string `json:"fields,omitempty"`
	// IgnoredFields are paths (same scheme; "[*]" matches any list element,
	// a path covers everything below it) the manager sets but does not
	// enforce: Argo CD's ignoreDifferences, kubectl_manifest's
	// ignore_fields. A third owner may change them without a fight.
	IgnoredFields []string `json:"ignored_fields,omitempty"`

	// Live are the field managers of the live object (its
	// metadata.managedFields), where the source read the cluster: who
	// holds each field now. Read by Infer; the check goes by Fields.
	Live []FieldManager `json:"live,omitempty"`

	// Argo CD application facts, copied onto each object of the app so the
	// check needs no second input.

	// Automated, SelfHeal and Prune are the app's automated sync policy.
	Automated bool `json:"automated,omitempty"`
	SelfHeal  bool `json:"self_heal,omitempty"`
	Prune     bool `json:"prune,omitempty"`
	// Revision is the revision of the app's latest sync in its history.
	Revision string `json:"revision,omitempty"`
	// SelfHealSyncs counts automated syncs of Revision that repeat an
	// earlier sync of the same revision within the history Argo CD keeps:
	// each one put Git's state back over someone else's change.
	SelfHealSyncs int `json:"self_heal_syncs,omitempty"`
	// LastSelfHeal is when the latest of those syncs finished.
	LastSelfHeal time.Time `json:"last_self_heal,omitzero"`
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
func (m Map) RuleFor(o ManagedObject) (Rule, int) {
	for i, r := range m.Rules {
		if r.Match.Matches(o) {
			return r, i
		}
	}
	return Rule{}, -1
}

// HandoffFor returns the declared hand-off covering o, if any.
func (m Map) HandoffFor(o ManagedObject) (Handoff, bool) {
	for _, h := range m.Handoffs {
		if h.Match.Matches(o) {
			return h, true
		}
	}
	return Handoff{}, false
}

// FieldOwner returns who owns field of an object matched by r: the owner of
// the most specific entry of r.Fields covering it, else r.Owner.
func (r Rule) FieldOwner(field string) Owner {
	best, owner := -1, r.Owner
	for k, o := range r.Fields {
		if len(k) > best && FieldCovers(k, field) {
			best, owner = len(k), o
		}
	}
	return owner
}

// Observed reports whether relcap reads what this owner writes (Terraform
// state, Argo CD applications). Other owners (an HPA, cert-manager) are
// "third owners": relcap sees only whether the observed managers leave
// their fields alone.
func (o Owner) Observed() bool { return o == OwnerTerraform || o == OwnerArgoCD }
