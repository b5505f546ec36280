package ownership

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Map is the proposed ownership map: a rule per object more than one
// owner writes (first, so it wins), then one rule per application for
// what Argo CD alone deploys and one for every Terraform resource; the
// hand-offs of current are carried over, since no source observes a
// decision to hand an object over. file names the draft.
func (inf Inference) Map(file string, current Map) Map {
	m := Map{File: file, Handoffs: slices.Clone(current.Handoffs)}
	for _, o := range inf.Objects {
		r := Rule{Match: o.Match, Owner: o.Owner}
		if len(o.Fields) > 0 {
			r.Fields = maps.Clone(o.Fields)
		}
		m.Rules = append(m.Rules, r)
	}
	for _, a := range inf.Apps {
		m.Rules = append(m.Rules, Rule{Match: Match{App: a}, Owner: OwnerArgoCD})
	}
	if inf.Terraform || len(m.Rules) == 0 {
		m.Rules = append(m.Rules, Rule{Match: Match{TerraformType: "*"}, Owner: OwnerTerraform})
	}
	return m
}

// Change is one difference between two maps for an object the sources
// read, or one of its fields.
type Change struct {
	Subject string `json:"subject"`
	// Via is the writer whose view of the object the maps judge
	// differently (a rule may match one writer's view and not another's).
	Via   string `json:"via"`
	Field string `json:"field,omitempty"`
	// Now is the owner the current map gives ("" when no rule matches),
	// NowAt the rule's place; Proposed the proposal's owner.
	Now      Owner  `json:"now,omitempty"`
	NowAt    string `json:"now_at,omitempty"`
	Proposed Owner  `json:"proposed"`
}

func (c Change) String() string {
	what := c.Subject + " (" + c.Via + ")"
	if c.Field != "" {
		what += " " + c.Field
	}
	now := "no rule"
	if c.Now != "" {
		now = fmt.Sprintf("%s (%s)", c.Now, c.NowAt)
	}
	return fmt.Sprintf("%s: %s → %s", what, now, c.Proposed)
}

// Diff lists where proposed gives an object the sources read, or a field
// one of its writers sets or either map names, another owner than
// current, one change per subject and field, sorted.
func Diff(current, proposed Map, objects []ManagedObject) []Change {
	seen := map[string]bool{}
	var out []Change
	add := func(c Change) {
		k := c.Subject + "\x00" + c.Via + "\x00" + c.Field
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	for _, o := range objects {
		now, ni := current.RuleFor(o)
		prop, pi := proposed.RuleFor(o)
		if pi < 0 {
			continue
		}
		at := ""
		if ni >= 0 {
			at = fmt.Sprintf("%s:%d", current.File, now.Line)
		}
		if ni < 0 || now.Owner != prop.Owner {
			add(Change{Subject: o.Subject(), Via: o.Via(), Now: now.Owner, NowAt: at, Proposed: prop.Owner})
		}
		if ni < 0 {
			continue
		}
		// When the object changes owner, its fields follow it; only the
		// fields either map names apart are worth a line of their own.
		fields := slices.Concat(slices.Collect(maps.Keys(prop.Fields)), slices.Collect(maps.Keys(now.Fields)))
		if now.Owner == prop.Owner {
			fields = append(fields, o.Fields...)
		}
		for _, f := range fields {
			if n, p := now.FieldOwner(f), prop.FieldOwner(f); n != p {
				add(Change{Subject: o.Subject(), Via: o.Via(), Field: f, Now: n, NowAt: at, Proposed: p})
			}
		}
	}
	slices.SortFunc(out, func(a, b Change) int {
		if a.Subject != b.Subject {
			return strings.Compare(a.Subject, b.Subject)
		}
		if a.Via != b.Via {
			return strings.Compare(a.Via, b.Via)
		}
		return strings.Compare(a.Field, b.Field)
	})
	return out
}
