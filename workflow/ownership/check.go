package ownership

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow/finding"
)

// Ownership finding codes. They are stable: the ledger keys open findings
// by code and subject, so drift age survives across runs.
const (
	// CodeConflict: one Kubernetes object written by more than one
	// writer without a split the map declares (Blocker).
	CodeConflict = "ownership.conflict"
	// CodeWrongOwner: managed, or fields of it set, by a tool the
	// map does not name for it (Blocker).
	CodeWrongOwner = "ownership.wrong-owner"
	// CodeUnowned: managed but matched by no rule (Blocker).
	CodeUnowned = "ownership.unowned"
	// CodeStaleRule: a rule that matches nothing (Warning).
	CodeStaleRule = "ownership.stale-rule"
	// CodeThirdOwnerIgnored: a field the map gives to a third
	// owner (an HPA) that a manager still sets and will put back (Warning).
	CodeThirdOwnerIgnored = "ownership.third-owner-ignored"
	// CodeDriftLoop: repeated automated syncs of one revision,
	// the footprint of two writers taking turns (Warning).
	CodeDriftLoop = "ownership.drift-loop"
	// CodeSelfHealed: Argo CD put Git's state back over a live
	// change fewer times than a drift loop takes (Info): drift that
	// happened and was undone, kept visible.
	CodeSelfHealed = "ownership.self-healed"
	// CodeHandoffPending: a declared hand-off whose old owner
	// still manages the object (Warning).
	CodeHandoffPending = "ownership.handoff-pending"
	// CodeHandoffUndeclared: a bootstrap resource managed by both
	// Terraform and Argo CD with no hand-off declared (Warning).
	CodeHandoffUndeclared = "ownership.handoff-undeclared"
)

// DriftLoopThreshold is how many repeated automated syncs of one revision
// make a drift loop. One is a person's kubectl edit being healed; three in
// the ten syncs Argo CD keeps is a pattern.
const DriftLoopThreshold = 3

// maxListed bounds the fields named in a finding's message; the evidence
// always has them all.
const maxListed = 20

// verdict is what the check concluded about one object on its own.
type verdict struct {
	rule    int  // index of its rule, -1 when unowned
	pending bool // the old owner of a declared, unfinished hand-off
	// unsplit: it writes fields its rule does not give to its manager (or
	// no field is known), so sharing the object is not a declared split.
	unsplit bool
	// effective are the fields it sets and enforces (Fields minus
	// IgnoredFields).
	effective []string
}

// Check is the pure core of the ownership check. Every managed
// object must match a rule (first match wins) that names its manager, or
// whose fields: map gives the manager every field it sets; no field of a
// Kubernetes object may have two writers; a field given to a third owner
// must be left alone (ignored) by the managers relcap reads; declared
// hand-offs must finish; and an Argo CD app must not keep re-syncing one
// revision. Findings come back sorted, Blockers (conflict, wrong-owner,
// unowned) first; the codes are the Code* constants.
func Check(m Map, objects []ManagedObject) []finding.Finding {
	c := compileMap(m)
	fs := &findingSet{index: map[[2]string]int{}}
	used := make([]bool, len(m.Rules))
	verdicts := make([]verdict, len(objects))

	byKube := make(map[string][]int, len(objects))
	var kubeOrder []string
	// Argo CD objects by namespace, for the Helm bootstrap check.
	argoByNS := map[string][]int{}
	var helm []int
	for i := range objects {
		o := &objects[i]
		v := &verdicts[i]
		v.rule = c.ruleFor(o)
		if v.rule >= 0 {
			used[v.rule] = true
		}
		if k := o.KubeKey(); k != "" {
			if _, seen := byKube[k]; !seen {
				kubeOrder = append(kubeOrder, k)
			}
			byKube[k] = append(byKube[k], i)
		}
		switch {
		case o.Manager == OwnerArgoCD && o.Kind != "":
			argoByNS[o.Namespace] = append(argoByNS[o.Namespace], i)
		case o.TerraformType == "helm_release":
			helm = append(helm, i)
		}
		c.judge(o, v, fs)
	}
	for _, k := range kubeOrder {
		c.conflict(k, objects, verdicts, byKube[k], fs)
	}
	c.helmBootstraps(objects, verdicts, helm, argoByNS, fs)
	c.driftLoops(objects, byKube, fs)
	for i, r := range m.Rules {
		if !used[i] {
			fs.add(finding.Finding{
				Severity:   finding.Warning,
				Code:       CodeStaleRule,
				Subject:    c.at(r.Line),
				Message:    fmt.Sprintf("rule %s → %s matches no managed object", r.Match, r.Owner),
				NextAction: "delete the rule or fix its match",
			})
		}
	}
	out := fs.list
	finding.Sort(out)
	return out
}

// judge checks one object against its rule and any hand-off.
func (c *compiledMap) judge(o *ManagedObject, v *verdict, fs *findingSet) {
	if v.rule < 0 {
		v.unsplit = true
		fs.add(finding.Finding{
			Severity:   finding.Blocker,
			Code:       CodeUnowned,
			Subject:    o.Subject(),
			Message:    fmt.Sprintf("managed by %s but no rule in %s matches it", o.Via(), c.m.File),
			NextAction: fmt.Sprintf("add a rule for it to %s naming its one owner", c.m.File),
		})
		return
	}
	r := c.m.Rules[v.rule]
	if h := c.handoffFor(o); h >= 0 {
		if ho := c.m.Handoffs[h]; ho.From == o.Manager && ho.To != o.Manager {
			v.pending = true
			msg := fmt.Sprintf("hand-off %s → %s declared at %s is not complete: still managed by %s", ho.From, ho.To, c.at(ho.Line), o.Via())
			if ho.Note != "" {
				msg += " (" + ho.Note + ")"
			}
			fs.add(finding.Finding{
				Severity:   finding.Warning,
				Code:       CodeHandoffPending,
				Subject:    o.Subject(),
				Message:    msg,
				NextAction: handoffAction(o, ho),
				Facts:      finding.Facts{finding.Of("from", string(ho.From)), finding.Of("handoff", c.at(ho.Line)), finding.Of("to", string(ho.To)), finding.Of("writer", o.Via())},
			})
			return
		}
	}

	var mine, foreign, third []string
	for _, f := range o.Fields {
		switch owner := r.FieldOwner(f); {
		case owner == o.Manager:
			mine = append(mine, f)
		case owner.Observed():
			foreign = append(foreign, f+" ("+string(owner)+")")
		case !ignored(o, f):
			third = append(third, f+" ("+string(owner)+")")
		}
	}
	for _, f := range o.Fields {
		if !ignored(o, f) {
			v.effective = append(v.effective, f)
		}
	}
	v.unsplit = len(o.Fields) == 0 || len(foreign) > 0 || (o.Manager != r.Owner && len(mine) == 0)
	rule := c.at(r.Line)
	if o.Manager != r.Owner && len(mine) == 0 {
		fs.add(finding.Finding{
			Severity:   finding.Blocker,
			Code:       CodeWrongOwner,
			Subject:    o.Subject(),
			Message:    fmt.Sprintf("managed by %s but %s gives it to %s", o.Via(), rule, r.Owner),
			NextAction: fmt.Sprintf("stop managing it from %s, or change the rule at %s", o.Manager, rule),
			Facts:      finding.Facts{finding.Of("owner", string(r.Owner)), finding.Of("rule", rule), finding.Of("writer", o.Via())},
		})
		return
	}
	if len(foreign) > 0 {
		fs.add(finding.Finding{
			Severity: finding.Blocker,
			Code:     CodeWrongOwner,
			Subject:  o.Subject(),
			Message:  fmt.Sprintf("%s sets fields %s gives to another owner: %s", o.Via(), rule, listed(foreign)),
			NextAction: fmt.Sprintf("remove those fields from what %s applies (%s), or change fields: at %s",
				o.Manager, writerSource(o), rule),
			Facts: finding.Facts{finding.Of("fields", strings.Join(foreign, ", ")), finding.Of("rule", rule), finding.Of("writer", o.Via())},
		})
	}
	if len(third) > 0 {
		fs.add(thirdOwnerFinding(o, rule, third))
	}
}

// ignored reports whether o's manager leaves f alone.
func ignored(o *ManagedObject, f string) bool {
	for _, p := range o.IgnoredFields {
		if FieldCovers(p, f) {
			return true
		}
	}
	return false
}

func thirdOwnerFinding(o *ManagedObject, rule string, fields []string) finding.Finding {
	var msg, next string
	switch o.Manager {
	case OwnerArgoCD:
		how := "overwrites the other owner's value at every sync"
		if o.SelfHeal {
			how = "reverts the other owner's changes within seconds (selfHeal is on)"
		}
		msg = fmt.Sprintf("argo cd app %s sets %s, which %s gives to another owner, and does not ignore it: it %s", o.App, listed(fields), rule, how)
		next = fmt.Sprintf("remove the field from the manifest in Git, or add it to app %s's spec.ignoreDifferences (%s) with the sync option RespectIgnoreDifferences=true",
			o.App, ignoreHint(o, fields))
	default:
		msg = fmt.Sprintf("%s sets %s, which %s gives to another owner: every apply puts its own value back", o.Via(), listed(fields), rule)
		next = fmt.Sprintf("remove the field from %s, or have Terraform ignore it (kubectl_manifest ignore_fields, lifecycle ignore_changes)", o.TerraformAddress)
	}
	return finding.Finding{
		Severity:   finding.Warning,
		Code:       CodeThirdOwnerIgnored,
		Subject:    o.Subject(),
		Message:    msg,
		NextAction: next,
		Facts:      finding.Facts{finding.Of("fields", strings.Join(fields, ", ")), finding.Of("rule", rule), finding.Of("writer", o.Via())},
	}
}

// ignoreHint writes the ignoreDifferences entry that would ignore fields
// (each "path (owner)"): JSON pointers where the path has no named list
// element, jq path expressions where it has.
func ignoreHint(o *ManagedObject, fields []string) string {
	var ptrs, jq []string
	for _, f := range fields {
		f, _, _ = strings.Cut(f, " (")
		if p, ok := fieldPointer(f); ok {
			ptrs = append(ptrs, p)
		} else {
			jq = append(jq, fieldJQ(f))
		}
	}
	s := "group: " + o.Group + ", kind: " + o.Kind
	if len(ptrs) > 0 {
		s += ", jsonPointers: [" + strings.Join(ptrs, ", ") + "]"
	}
	if len(jq) > 0 {
		s += ", jqPathExpressions: [" + strings.Join(jq, ", ") + "]"
	}
	return s
}

// fieldPointer converts a field path to a JSON pointer when it names no
// list element by name.
func fieldPointer(f string) (string, bool) {
	var b strings.Builder
	for _, s := range splitField(f) {
		switch {
		case strings.HasPrefix(s, `["`):
			k := strings.ReplaceAll(strings.Trim(s, `[]"`), `\"`, `"`)
			b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"))
		case strings.HasPrefix(s, "["):
			if !isIndex(s[1 : len(s)-1]) {
				return "", false
			}
			b.WriteString("/" + s[1:len(s)-1])
		default:
			b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
		}
	}
	return b.String(), true
}

// fieldJQ converts a field path to the jq path expression Argo CD's
// ignoreDifferences takes.
func fieldJQ(f string) string {
	var b strings.Builder
	for _, s := range splitField(f) {
		switch {
		case strings.HasPrefix(s, `["`):
			b.WriteString(s)
		case s == "[*]":
			b.WriteString("[]")
		case strings.HasPrefix(s, "["):
			if n := s[1 : len(s)-1]; isIndex(n) {
				b.WriteString(s)
			} else {
				b.WriteString(`[] | select(.name == "` + n + `") | `)
			}
		default:
			b.WriteString("." + s)
		}
	}
	return b.String()
}

// writerSource names where a writer's desired state lives.
func writerSource(o *ManagedObject) string {
	switch {
	case o.TerraformAddress != "":
		return o.TerraformAddress
	case o.App != "":
		return "the Git source of app " + o.App
	}
	return string(o.Manager)
}

func handoffAction(o *ManagedObject, h Handoff) string {
	if o.Manager == OwnerTerraform && o.TerraformAddress != "" {
		return fmt.Sprintf("once %s manages it, remove %s from Terraform state without destroying it (terraform state rm %s, or a removed block)", h.To, o.TerraformAddress, o.TerraformAddress)
	}
	return fmt.Sprintf("once %s manages it, stop managing it from %s (%s) without deleting it", h.To, h.From, writerSource(o))
}

// writer is one distinct writer of a Kubernetes object.
type writer struct {
	o *ManagedObject
	v *verdict
}

// conflict reports a Kubernetes object written by more than one writer.
// Two writers of one field are a conflict even when the rest is split; a
// split the map declares (fields: gives each writer what it writes, and
// no field has two) is not.
func (c *compiledMap) conflict(key string, objects []ManagedObject, verdicts []verdict, idx []int, fs *findingSet) {
	if len(idx) < 2 {
		return
	}
	var ws []writer
	seen := map[string]bool{}
	for _, i := range idx {
		if verdicts[i].pending {
			continue // reported as a pending hand-off
		}
		via := objects[i].Via()
		if seen[via] {
			continue
		}
		seen[via] = true
		ws = append(ws, writer{&objects[i], &verdicts[i]})
	}
	if len(ws) < 2 {
		return
	}
	slices.SortFunc(ws, func(a, b writer) int { return strings.Compare(a.o.Via(), b.o.Via()) })

	count := map[string]int{}
	for _, w := range ws {
		for _, f := range w.v.effective {
			count[f]++
		}
	}
	var overlap []string
	for f, n := range count {
		if n > 1 {
			overlap = append(overlap, f)
		}
	}
	slices.Sort(overlap)

	// Writers whose rules give the same object to different owners: the
	// map contradicts itself.
	ruleOwners := map[Owner]string{}
	unsplit := false
	for _, w := range ws {
		unsplit = unsplit || w.v.unsplit
		if w.v.rule >= 0 {
			r := c.m.Rules[w.v.rule]
			ruleOwners[r.Owner] = c.at(r.Line)
		}
	}
	contradictory := len(ruleOwners) > 1
	if len(overlap) == 0 && !unsplit && !contradictory {
		return // a split declared in the map, each writer on its own fields
	}

	vias := make([]string, len(ws))
	for i, w := range ws {
		vias[i] = w.o.Via()
	}
	msg := "written by " + strings.Join(vias, " and ")
	ev := finding.Facts{finding.Of("writers", strings.Join(vias, ", "))}
	switch {
	case len(overlap) > 0:
		msg += "; both set " + listed(overlap)
		ev = ev.With("fields", strings.Join(overlap, ", "))
	case contradictory:
		var rs []string
		for o, at := range ruleOwners {
			rs = append(rs, at+" → "+string(o))
		}
		slices.Sort(rs)
		msg += "; the map gives it to more than one owner (" + strings.Join(rs, ", ") + ")"
	default:
		msg += "; the map does not split its fields between them"
	}

	next := "give the object (or each overlapping field) one owner in " + c.m.File + " and remove it from the other tool"
	if len(overlap) > 0 && ws[0].v.rule >= 0 {
		// Say who the map already names for each overlapping field, so
		// the captain knows which side to change.
		r := c.m.Rules[ws[0].v.rule]
		byOwner := map[Owner][]string{}
		for _, f := range overlap {
			o := r.FieldOwner(f)
			byOwner[o] = append(byOwner[o], f)
		}
		var parts []string
		for _, o := range slices.Sorted(maps.Keys(byOwner)) {
			var others []string
			for _, w := range ws {
				if w.o.Manager != o {
					others = append(others, w.o.Via())
				}
			}
			parts = append(parts, fmt.Sprintf("%s gives %s to %s: remove them from %s", c.at(r.Line), listed(byOwner[o]), o, strings.Join(others, " and ")))
			ev = ev.With("owner "+string(o), strings.Join(byOwner[o], ", "))
		}
		next = strings.Join(parts, "; ") + " (or change the map)"
	}
	bootstrap := false
	hasTF, hasArgo := false, false
	for _, w := range ws {
		hasTF = hasTF || w.o.Manager == OwnerTerraform
		hasArgo = hasArgo || w.o.Manager == OwnerArgoCD
		bootstrap = bootstrap || isBootstrapKind(w.o)
	}
	declared := slices.ContainsFunc(ws, func(w writer) bool { return c.handoffFor(w.o) >= 0 })
	if hasTF && hasArgo && bootstrap && !declared {
		next += "; if Terraform only bootstraps it, declare a hand-off"
		fs.add(finding.Finding{
			Severity: finding.Warning,
			Code:     CodeHandoffUndeclared,
			Subject:  key,
			Message:  fmt.Sprintf("a bootstrap object of Argo CD is managed by both %s with no hand-off declared in %s", strings.Join(vias, " and "), c.m.File),
			NextAction: fmt.Sprintf("declare a hand-off in %s (from: terraform, to: argocd), then remove it from Terraform state once Argo CD manages it",
				c.m.File),
			Facts: finding.Facts{finding.Of("writers", strings.Join(vias, ", "))},
		})
	}
	fs.add(finding.Finding{
		Severity:   finding.Blocker,
		Code:       CodeConflict,
		Subject:    key,
		Message:    msg,
		NextAction: next,
		Facts:      ev,
	})
}

// listed joins up to maxListed items for a message.
func listed(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(items)-maxListed)
}

// findingSet merges findings with the same code and subject into one, as
// the ledger keys them: two wrong writers of one object are one finding
// naming both.
type findingSet struct {
	list  []finding.Finding
	index map[[2]string]int
}

func (s *findingSet) add(f finding.Finding) {
	k := [2]string{f.Code, f.Subject}
	i, ok := s.index[k]
	if !ok {
		f.Facts = byName(f.Facts)
		s.index[k] = len(s.list)
		s.list = append(s.list, f)
		return
	}
	g := &s.list[i]
	g.Severity = max(g.Severity, f.Severity)
	if f.Message != g.Message {
		g.Message += "; " + f.Message
	}
	if f.NextAction != "" && !strings.Contains(g.NextAction, f.NextAction) {
		g.NextAction += "; " + f.NextAction
	}
	for _, fact := range f.Facts {
		if old, ok := g.Facts.Get(fact.Name); ok && old != fact.Value {
			g.Facts = g.Facts.With(fact.Name, old+"; "+fact.Value)
		} else {
			g.Facts = g.Facts.With(fact.Name, fact.Value)
		}
	}
	g.Facts = byName(g.Facts)
}

// byName orders an ownership finding's facts by name, whichever check or
// merged finding brought them, so a finding always reads the same.
func byName(fs finding.Facts) finding.Facts {
	slices.SortStableFunc(fs, func(a, b finding.Fact) int { return strings.Compare(a.Name, b.Name) })
	return fs
}
