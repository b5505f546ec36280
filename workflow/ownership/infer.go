package ownership

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Inferring the ownership map from what really writes each field, rather
// than from what a person wrote down. Three sources meet per Kubernetes
// object: what Terraform's state says a root sets on it, what Argo CD's
// application desires (its target state), and who holds each field of
// the live object now (metadata.managedFields, read through Argo CD). A
// field more than one owner writes is contested; the proposal gives every
// object one owner, and a field to another owner only where that owner
// alone writes it (or a third manager, such as an HPA, holds a field an
// owner desires). What to do about a contested field is the person's
// decision: the proposal names it, with the evidence, and keeps it with
// the object's owner.

// Inference is what relcap ownership infer proposes for one environment.
type Inference struct {
	// Objects are the Kubernetes objects more than one owner writes,
	// each with its proposed rule, sorted by key.
	Objects []InferredObject
	// Apps are the Argo CD applications whose other objects Argo CD alone
	// writes; Terraform says whether any Terraform resource is left to a
	// catch-all rule for Terraform.
	Apps      []string
	Terraform bool
	// Live says whether the live objects' field managers were read; when
	// not, contested fields are those both tools declare, with no
	// evidence of who holds them, and Unread says why.
	Live   bool
	Unread string
}

// InferredObject is one object written by more than one owner.
type InferredObject struct {
	Key   string
	Match Match
	// Owner is the proposed owner of the object; Fields the fields
	// proposed for another owner.
	Owner  Owner
	Fields map[string]Owner
	// Writers are the evidence: each owner's declaration and each live
	// field manager, in that order.
	Writers   []Writer
	Contested []ContestedField
}

// Writer is one writer of an object: an owner's declaration (Terraform
// state, an Argo CD application; Manager empty) or a live field manager.
type Writer struct {
	Owner Owner  `json:"owner"`
	Via   string `json:"via"`
	// Manager, Operation, Subresource and Time are the managedFields
	// entry's; Why says how relcap tied the manager to its owner.
	Manager     string    `json:"manager,omitempty"`
	Operation   string    `json:"operation,omitempty"`
	Subresource string    `json:"subresource,omitempty"`
	Time        time.Time `json:"time,omitzero"`
	Why         string    `json:"why,omitempty"`
	// Fields counts the fields it declares or holds.
	Fields int `json:"fields"`
}

// How says how a field manager wrote: "Update of scale, last at
// 2026-12-03T18:00:00Z"; "" for a declaration.
func (w Writer) How() string {
	if w.Manager == "" {
		return ""
	}
	s := w.Operation
	if w.Subresource != "" {
		s += " of " + w.Subresource
	}
	if !w.Time.IsZero() {
		s += ", last at " + w.Time.UTC().Format(time.RFC3339)
	}
	return s
}

// ContestedField is a field more than one owner writes.
type ContestedField struct {
	Field  string  `json:"field"`
	Owners []Owner `json:"owners"`
	// Holders are the live managers holding it now; Wanting the owners
	// that declare it without holding it: they write it back at their
	// next apply or sync, so it flips.
	Holders []string `json:"holders,omitempty"`
	Wanting []Owner  `json:"wanting,omitempty"`
}

// Flipping reports whether an owner declares the field while another
// holds it: the tug-of-war, not only a shared field.
func (c ContestedField) Flipping() bool { return len(c.Wanting) > 0 && len(c.Holders) > 0 }

// ManagerOwners names the owner of a field manager a person declared
// (relcap ownership infer --manager NAME=OWNER), ahead of relcap's own
// reading of the manager's name.
type ManagerOwners map[string]Owner

// ownerOfManager says whose writes fm's are on an object Terraform manages
// as tf (nil when it does not), and why relcap thinks so. known is false
// for a manager relcap only names (a person's kubectl edit, a script):
// its fields are contested, never proposed for it.
func ownerOfManager(fm FieldManager, tf *ManagedObject, named ManagerOwners) (owner Owner, why string, known bool) {
	if o, ok := named[fm.Manager]; ok {
		return o, "named with --manager", true
	}
	switch m := fm.Manager; {
	case m == "argocd-controller" || m == "argocd-application-controller":
		return OwnerArgoCD, "Argo CD's controller", true
	case m == "Terraform" || m == "HashiCorp" || strings.HasPrefix(strings.ToLower(m), "terraform"):
		return OwnerTerraform, "the Kubernetes provider of Terraform", true
	case m == "kubectl" && fm.Operation == OperationApply && tf != nil && strings.HasPrefix(tf.TerraformType, "kubectl_"):
		return OwnerTerraform, "the kubectl provider applies server-side as kubectl (" + tf.TerraformAddress + ")", true
	case m == "kube-controller-manager" && fm.Subresource == "scale":
		return "hpa", "a HorizontalPodAutoscaler scales through the scale subresource", true
	}
	return thirdOwner(fm.Manager), "field manager " + fm.Manager, false
}

// thirdOwner names a manager as an owner ownership.yaml accepts:
// lowercase, with anything but letters, digits, '.', '_' and '-' as '-'.
func thirdOwner(manager string) Owner {
	b := []byte(strings.ToLower(manager))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	s := strings.TrimLeft(string(b), "._-")
	if s == "" {
		s = "unnamed-manager"
	}
	return Owner(s)
}

// Infer proposes who owns what from the sources one check reads (s:
// Terraform's objects, Argo CD's live objects with their field managers,
// or, when Argo CD could not be read, the application rendered from the
// environment repository). named are managers a person tied to an owner.
func Infer(s Sources, named ManagerOwners) Inference {
	inf := Inference{Live: s.LiveRan, Unread: s.LiveError}
	type views struct {
		tf, argo []*ManagedObject
	}
	byKey := map[string]*views{}
	apps := map[string]bool{}
	objects := s.Objects()
	for i := range objects {
		o := &objects[i]
		if o.Manager == OwnerArgoCD && o.App != "" {
			apps[o.App] = true
		}
		k := o.KubeKey()
		if k == "" {
			inf.Terraform = inf.Terraform || o.Manager == OwnerTerraform
			continue
		}
		v := byKey[k]
		if v == nil {
			v = &views{}
			byKey[k] = v
		}
		switch o.Manager {
		case OwnerTerraform:
			v.tf = append(v.tf, o)
		case OwnerArgoCD:
			v.argo = append(v.argo, o)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		v := byKey[k]
		if len(v.argo) == 0 {
			inf.Terraform = true
		}
		if obj, ok := inferObject(k, v.tf, v.argo, named); ok {
			inf.Objects = append(inf.Objects, obj)
		}
	}
	inf.Apps = slices.Sorted(maps.Keys(apps))
	return inf
}

// claim is who writes one field of an object: the owners that declare it
// and the managers (with their owners) that hold it live.
type claim struct {
	declared map[Owner]bool
	holders  map[string]Owner
	// delegated are the holders whose owner relcap recognises (an HPA)
	// or a person named: a field they hold may be proposed for them.
	delegated map[Owner]bool
}

// inferObject proposes the rule of one object, reporting false when one
// owner alone writes it (the catch-all rules cover it).
func inferObject(key string, tf, argo []*ManagedObject, named ManagerOwners) (InferredObject, bool) {
	obj := InferredObject{Key: key, Fields: map[string]Owner{}}
	claims := map[string]*claim{}
	at := func(f string) *claim {
		c := claims[f]
		if c == nil {
			c = &claim{declared: map[Owner]bool{}, holders: map[string]Owner{}, delegated: map[Owner]bool{}}
			claims[f] = c
		}
		return c
	}
	declare := func(o *ManagedObject) {
		n := 0
		for _, f := range o.Fields {
			if !ignored(o, f) {
				at(f).declared[o.Manager] = true
				n++
			}
		}
		obj.Writers = append(obj.Writers, Writer{Owner: o.Manager, Via: o.Via(), Fields: n})
	}
	for _, o := range tf {
		declare(o)
	}
	for _, o := range argo {
		declare(o)
	}
	first := func(l []*ManagedObject) *ManagedObject {
		if len(l) == 0 {
			return nil
		}
		return l[0]
	}
	below := declaredAncestors(claims)
	ref := cmp.Or(first(argo), first(tf))
	obj.Match = Match{Group: ref.Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
	declared := slices.Sorted(maps.Keys(claims))
	w := writes{last: map[Owner]time.Time{}, by: map[string]time.Time{}}
	for _, o := range argo {
		for _, fm := range o.Live {
			owner, why, known := ownerOfManager(fm, first(tf), named)
			held := 0
			hold := func(f string) {
				c := at(f)
				c.holders[fm.Manager] = owner
				c.delegated[owner] = c.delegated[owner] || known && !owner.Observed()
			}
			for _, f := range fm.Fields {
				// A manager's field counts when an owner declares it, or
				// when the manager is one of the observed tools: what a
				// controller alone keeps (an annotation of its own) is
				// not desired state anyone must own.
				if !owner.Observed() && !below[f] {
					continue
				}
				hold(f)
				held++
				if !below[f] || strings.HasSuffix(f, "]") {
					continue
				}
				// A field held whole (an atomic selector) holds every
				// declared field below it; a list element held alone is
				// its key, not its fields.
				for _, d := range declared {
					if d != f && FieldCovers(f, d) {
						hold(d)
					}
				}
			}
			w.note(owner, fm)
			if held > 0 {
				obj.Writers = append(obj.Writers, Writer{Owner: owner, Via: fm.Manager, Manager: fm.Manager, Operation: fm.Operation,
					Subresource: fm.Subresource, Time: fm.Time, Why: why, Fields: held})
			}
		}
	}
	owners := map[Owner]bool{}
	for _, c := range claims {
		for o := range c.declared {
			owners[o] = true
		}
		for _, o := range c.holders {
			owners[o] = true
		}
	}
	if len(owners) < 2 {
		return obj, false
	}
	obj.Owner = OwnerTerraform
	if len(argo) > 0 {
		obj.Owner = OwnerArgoCD
	}
	for _, f := range slices.Sorted(maps.Keys(claims)) {
		c := claims[f]
		if give, ok := fieldException(obj.Owner, c); ok {
			obj.Fields[f] = give
		}
		if cf, ok := contested(f, c, w); ok {
			obj.Contested = append(obj.Contested, cf)
		}
	}
	return obj, true
}

// declaredAncestors is every field an owner declares and each of its
// ancestors ("spec", "spec.template", …): a manager holding one of them
// holds something an owner declares.
func declaredAncestors(claims map[string]*claim) map[string]bool {
	out := map[string]bool{}
	for d, c := range claims {
		if len(c.declared) == 0 {
			continue
		}
		var p strings.Builder
		for _, seg := range splitField(d) {
			if p.Len() > 0 && seg[0] != '[' {
				p.WriteByte('.')
			}
			p.WriteString(seg)
			out[p.String()] = true
		}
	}
	return out
}

// fieldException says whether a field goes to another owner than the
// object's: an owner that alone declares it, or a recognised third manager
// holding a field while the object's owner declares it (an HPA's
// replicas).
func fieldException(owner Owner, c *claim) (Owner, bool) {
	if len(c.declared) == 1 && !c.declared[owner] {
		for o := range c.declared {
			return o, true
		}
	}
	if c.declared[owner] {
		for _, m := range slices.Sorted(maps.Keys(c.holders)) {
			if o := c.holders[m]; c.delegated[o] {
				return o, true
			}
		}
	}
	return "", false
}

// writes are when each owner's managers, and each manager, last wrote the
// object.
type writes struct {
	last map[Owner]time.Time
	by   map[string]time.Time
}

func (w writes) note(owner Owner, fm FieldManager) {
	if fm.Time.After(w.last[owner]) {
		w.last[owner] = fm.Time
	}
	if fm.Time.After(w.by[fm.Manager]) {
		w.by[fm.Manager] = fm.Time
	}
}

// contested reports field f when more than one owner writes it. An owner
// that declares it without holding it is wanting it (it flips at that
// owner's next write) unless that owner wrote the object after every
// holder did and left the field to them: then their values agree (a
// server-side apply shares or takes over a field of equal value) and
// nothing flips.
func contested(f string, c *claim, w writes) (ContestedField, bool) {
	owners := map[Owner]bool{}
	holding := map[Owner]bool{}
	for o := range c.declared {
		owners[o] = true
	}
	var heldAt time.Time
	for m, o := range c.holders {
		owners[o], holding[o] = true, true
		if w.by[m].After(heldAt) {
			heldAt = w.by[m]
		}
	}
	if len(owners) < 2 {
		return ContestedField{}, false
	}
	cf := ContestedField{Field: f, Owners: slices.Sorted(maps.Keys(owners))}
	for _, m := range slices.Sorted(maps.Keys(c.holders)) {
		cf.Holders = append(cf.Holders, fmt.Sprintf("%s (%s)", m, c.holders[m]))
	}
	for _, o := range cf.Owners {
		if c.declared[o] && !holding[o] && len(holding) > 0 && !w.last[o].After(heldAt) {
			cf.Wanting = append(cf.Wanting, o)
		}
	}
	return cf, true
}
