package workflow

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
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

// OwnershipMatrix lays the managed objects out resource × owner × fields:
// one row per Kubernetes object (all its writers together) or Terraform
// resource without a Kubernetes identity, sorted by subject.
func OwnershipMatrix(m OwnershipMap, objects []ManagedObject) []MatrixRow {
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

// OwnershipReport is the outcome of one environment's ownership check.
type OwnershipReport struct {
	Env string `json:"env"`
	// Objects counts what the sources returned.
	Objects  int         `json:"objects"`
	Matrix   []MatrixRow `json:"matrix"`
	Findings []Finding   `json:"findings"`
}

// Blockers counts the report's Blocker findings.
func (r OwnershipReport) Blockers() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == Blocker {
			n++
		}
	}
	return n
}

// CheckOwnershipEnv runs the ownership check of one environment outside a
// release (relcap ownership check): it reads every OwnershipSource, checks
// the objects against the project's ownership map, records the findings in
// the ledger under "ownership/<env>" (so open conflicts keep their
// first-seen time across runs) and journals the outcome. Blockers are in
// the report, not an error: the caller decides the exit code.
func (s *Service) CheckOwnershipEnv(ctx context.Context, envName string) (OwnershipReport, error) {
	d := s.d
	env, err := d.Project.Env(envName)
	if err != nil {
		return OwnershipReport{}, err
	}
	if len(d.Ownership) == 0 {
		return OwnershipReport{}, missingPort("ownership source")
	}
	var objects []ManagedObject
	for _, src := range d.Ownership {
		objs, err := src.ManagedObjects(ctx, env)
		if err != nil {
			_, _ = d.Journal.Append(context.WithoutCancel(ctx), "ownership.failed", map[string]string{"env": env.Name, "error": err.Error()})
			return OwnershipReport{}, fmt.Errorf("environment %s: read managed objects: %w", env.Name, err)
		}
		objects = append(objects, objs...)
	}
	rep := OwnershipReport{
		Env:      env.Name,
		Objects:  len(objects),
		Matrix:   OwnershipMatrix(d.Project.Ownership, objects),
		Findings: CheckOwnership(d.Project.Ownership, objects),
	}
	if err := d.Ledger.RecordFindings(ctx, "ownership/"+env.Name, d.Clock.Now(), rep.Findings); err != nil {
		return rep, fmt.Errorf("record ownership findings of %s: %w", env.Name, err)
	}
	counts := map[string]int{}
	for _, f := range rep.Findings {
		counts[f.Code]++
	}
	if _, err := d.Journal.Append(ctx, "ownership.checked", map[string]any{
		"env": env.Name, "objects": len(objects), "rows": len(rep.Matrix), "findings": counts, "blockers": rep.Blockers(),
	}); err != nil {
		return rep, err
	}
	return rep, nil
}
