package ownership

import (
	"maps"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow/finding"
)

// MatrixRow is one resource of the ownership matrix: who the map says owns
// it and its fields, and who actually writes what.
type MatrixRow struct {
	// Subject is the Kubernetes key ("apps/Deployment web/web") or, for a
	// resource without one, the Terraform address.
	Subject string `json:"subject"`
	// Rule is the file:line of the rule matching the first writer, "" when
	// no rule matches; Owner is that rule's owner.
	Rule  string `json:"rule,omitempty"`
	Owner Owner  `json:"owner,omitempty"`
	// FieldOwners are the rule's per-field owners (fields: in the map).
	FieldOwners map[string]Owner `json:"field_owners,omitempty"`
	// Writers are the managers writing it, sorted by Via.
	Writers []MatrixWriter `json:"writers"`
}

// MatrixWriter is one manager writing a resource.
type MatrixWriter struct {
	Manager Owner `json:"manager"`
	// Via names it: "terraform kubectl_manifest.web", "argocd app web".
	Via string `json:"via"`
	// Rule and Owner are what the map says for this writer's view of the
	// object (rules can match on terraform_type or app, so two writers of
	// one object may match different rules).
	Rule   string   `json:"rule,omitempty"`
	Owner  Owner    `json:"owner,omitempty"`
	Fields []string `json:"fields,omitempty"`
	// IgnoredFields are the fields it leaves to others.
	IgnoredFields []string `json:"ignored_fields,omitempty"`
}

// Matrix lays the managed objects out resource × owner × fields:
// one row per Kubernetes object (all its writers together) or Terraform
// resource without a Kubernetes identity, sorted by subject.
func Matrix(m Map, objects []ManagedObject) []MatrixRow {
	c := compileMap(m)
	rows := make(map[string]*MatrixRow, len(objects))
	for i := range objects {
		o := &objects[i]
		subject := o.Subject()
		row := rows[subject]
		ri := c.ruleFor(o)
		w := MatrixWriter{Manager: o.Manager, Via: o.Via(), Fields: o.Fields, IgnoredFields: o.IgnoredFields}
		if ri >= 0 {
			w.Rule, w.Owner = c.at(m.Rules[ri].Line), m.Rules[ri].Owner
		}
		if row == nil {
			row = &MatrixRow{Subject: subject, Rule: w.Rule, Owner: w.Owner}
			if ri >= 0 && len(m.Rules[ri].Fields) > 0 {
				row.FieldOwners = maps.Clone(m.Rules[ri].Fields)
			}
			rows[subject] = row
		}
		row.Writers = append(row.Writers, w)
	}
	out := make([]MatrixRow, 0, len(rows))
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		r := rows[k]
		slices.SortStableFunc(r.Writers, func(a, b MatrixWriter) int { return strings.Compare(a.Via, b.Via) })
		out = append(out, *r)
	}
	return out
}

// Report is the outcome of one environment's ownership check.
type Report struct {
	Env string `json:"env"`
	// Objects counts what the sources returned.
	Objects  int               `json:"objects"`
	Matrix   []MatrixRow       `json:"matrix"`
	Findings []finding.Finding `json:"findings"`
	// Sources says how Argo CD's side was read when the live check did
	// not run (rendered offline, or not needed); empty when it ran.
	Sources string `json:"sources,omitempty"`
}

// Blockers counts the report's Blocker findings.
func (r Report) Blockers() int { return finding.Blockers(r.Findings) }
