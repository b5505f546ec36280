package terraform

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// knownAfterApply is how an unknown planned value is shown, in Terraform's
// own words.
const knownAfterApply = "(known after apply)"

// translation is a plan's changes in workflow terms, before the review.
type translation struct {
	changes []tfplan.ResourceChange
	outputs []tfplan.OutputChange
	// noops counts resource changes that do nothing; they are not listed
	// (a 10,000-resource plan that touches three would bury them) but are
	// reported in PlanCounts.NoOp.
	noops int
	// imports, moves and forgets ride on actions the domain has no name
	// for; tfplan.ReviewPlan makes findings of them.
	imports []string
	moves   []tfplan.Move
	forgets []string
	// drift are the resources Terraform's refresh found changed outside
	// it (resource_drift).
	drift []tfplan.DriftedResource
}

// A translator turns Terraform's resource and output changes into
// workflow types. Plan (its saved plan's JSON) and ReadPlanJSON (an uploaded
// document) both stream through one, so both review exactly the same way.
// No value that Terraform marks sensitive is copied into the result:
// sensitive subtrees are replaced by tfplan.SensitiveMask before anything
// is rendered.

// translator accumulates a translation one resource change at a time, so a
// streaming reader never holds more than one decoded change.
type translator struct {
	t translation
	n int // resource changes seen, for messages
	d differ
	// secrets learns every value Terraform marks sensitive, so the same
	// value is masked where Terraform did not mark it (a provider's
	// computed copy) and wherever else relcap would show it.
	secrets *secret.Set
}

func (tr *translator) resource(rc *tfjson.ResourceChange) error {
	i := tr.n
	tr.n++
	t := &tr.t
	if rc == nil || rc.Change == nil {
		return fmt.Errorf("resource_changes[%d]: no change object", i)
	}
	addr := rc.Address
	if addr == "" {
		return fmt.Errorf("resource_changes[%d]: no address", i)
	}
	if rc.DeposedKey != "" {
		// A deposed object shares its address with the current one;
		// Terraform's UI names it by its deposed key.
		addr += " (deposed object " + rc.DeposedKey + ")"
	}
	action, forget, err := mapActions(rc.Change.Actions)
	if err != nil {
		return fmt.Errorf("resource_changes[%d] (%s): %w", i, addr, err)
	}
	if rc.Change.Importing != nil {
		t.imports = append(t.imports, addr)
	}
	if rc.PreviousAddress != "" && rc.PreviousAddress != rc.Address {
		t.moves = append(t.moves, tfplan.Move{Address: addr, From: rc.PreviousAddress})
	}
	if forget {
		t.forgets = append(t.forgets, addr)
	}
	if action == tfplan.ActionNoop {
		t.noops++
		return nil
	}
	ch := rc.Change
	learnSensitive(tr.secrets, ch.Before, ch.BeforeSensitive)
	learnSensitive(tr.secrets, ch.After, ch.AfterSensitive)
	c := tfplan.ResourceChange{
		Address:      addr,
		Type:         rc.Type,
		Name:         rc.Name,
		Module:       rc.ModuleAddress,
		Action:       action,
		ReplacePaths: replacePaths(ch.ReplacePaths, ch.BeforeSensitive, ch.AfterSensitive),
	}
	tr.d.out = nil
	tr.d.walk("", ch.Before, ch.After, ch.BeforeSensitive, ch.AfterSensitive, ch.AfterUnknown)
	c.Attributes = tr.d.out
	if before := asMap(ch.Before); action.Destructive() && before != nil && rc.Mode == tfjson.ManagedResourceMode {
		// What a deletion takes from the cluster, for the hand-off guard
		// (tfplan.ReviewHandoffs).
		if o, err := objectOf(&tfjson.StateResource{Address: rc.Address, Mode: rc.Mode, Type: rc.Type, Name: rc.Name, AttributeValues: before}); err == nil && o.Kind != "" {
			c.Object = &o
		}
	}
	t.changes = append(t.changes, c)
	return nil
}

func (tr *translator) outputs(outs map[string]*tfjson.Change) error {
	names := make([]string, 0, len(outs))
	for n := range outs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		ch := outs[n]
		if ch == nil {
			continue
		}
		action, _, err := mapActions(ch.Actions)
		if err != nil {
			return fmt.Errorf("output_changes.%s: %w", n, err)
		}
		if action == tfplan.ActionNoop {
			continue
		}
		// Only the name, the action and whether it is sensitive: an
		// output's value is never carried, sensitive or not, so it cannot
		// leak through a later change of its sensitivity. A sensitive
		// value is a secret to mask wherever else it turns up.
		learnSensitive(tr.secrets, ch.Before, ch.BeforeSensitive)
		learnSensitive(tr.secrets, ch.After, ch.AfterSensitive)
		tr.t.outputs = append(tr.t.outputs, tfplan.OutputChange{
			Name:      n,
			Action:    action,
			Sensitive: isTrue(ch.BeforeSensitive) || isTrue(ch.AfterSensitive),
		})
	}
	return nil
}

// mapActions maps Terraform's action list to a tfplan.Action. forget is
// true for Terraform's "forget" (a removed block with destroy = false); the
// domain has no action for it, so it is counted as the nearest destructive
// action and a plan.forget finding explains it. Unknown combinations are an
// error: relcap refuses to review what it does not understand.
func mapActions(a tfjson.Actions) (action tfplan.Action, forget bool, err error) {
	switch {
	case a.NoOp():
		return tfplan.ActionNoop, false, nil
	case a.Create():
		return tfplan.ActionCreate, false, nil
	case a.Read():
		return tfplan.ActionRead, false, nil
	case a.Update():
		return tfplan.ActionUpdate, false, nil
	case a.Delete():
		return tfplan.ActionDelete, false, nil
	case a.DestroyBeforeCreate():
		return tfplan.ActionReplaceDeleteFirst, false, nil
	case a.CreateBeforeDestroy():
		return tfplan.ActionReplaceCreateFirst, false, nil
	case a.Forget():
		return tfplan.ActionDelete, true, nil
	case len(a) == 2 && a[0] == tfjson.ActionCreate && a[1] == tfjson.ActionForget:
		return tfplan.ActionReplaceCreateFirst, true, nil
	}
	parts := make([]string, len(a))
	for i, x := range a {
		parts[i] = strconv.Quote(string(x))
	}
	return "", false, fmt.Errorf("unknown action [%s]", strings.Join(parts, ", "))
}

// replacePaths renders Terraform's replace_paths. A path that runs through a
// sensitive value is cut at that value, so a sensitive map key never shows.
func replacePaths(paths []any, beforeSens, afterSens any) []string {
	var out []string
	for _, p := range paths {
		steps, ok := p.([]any)
		if !ok || len(steps) == 0 {
			continue
		}
		path := ""
		bs, as := beforeSens, afterSens
		for _, s := range steps {
			if isTrue(bs) || isTrue(as) {
				break
			}
			switch s := s.(type) {
			case string:
				path = childKey(path, s)
				bs, as = subKey(bs, s), subKey(as, s)
			case json.Number:
				i, err := strconv.Atoi(string(s))
				if err != nil || i < 0 {
					continue
				}
				path = childIndex(path, i)
				bs, as = subIndex(bs, i), subIndex(as, i)
			case float64:
				i := int(s)
				if float64(i) != s || i < 0 {
					continue
				}
				path = childIndex(path, i)
				bs, as = subIndex(bs, i), subIndex(as, i)
			default:
				// Not a path step; stop rather than guess.
			}
		}
		if path != "" && !slices.Contains(out, path) {
			out = append(out, path)
		}
	}
	return out
}

// differ walks a resource's before and after values in step and records the
// leaves that differ.
type differ struct {
	out []tfplan.AttributeChange
	buf []byte
}

// walk compares b and a at path. bs and as are the before/after sensitivity
// shapes and unk the after-unknown shape: JSON values that mirror the value,
// where true at a node means that node and everything below it is sensitive
// (or unknown). The walk stops descending at such a node, so nothing below a
// sensitive node, not even a map key, reaches the output.
func (d *differ) walk(path string, b, a, bs, as, unk any) {
	bSens, aSens, unknown := isTrue(bs), isTrue(as), isTrue(unk)
	if !bSens && !aSens && !unknown {
		bm, bIsMap := b.(map[string]any)
		am, aIsMap := a.(map[string]any)
		if (bIsMap || b == nil) && (aIsMap || a == nil) && (bIsMap || aIsMap) {
			if len(bm) == 0 && len(am) == 0 && !hasTrueKey(unk) {
				if bIsMap != aIsMap {
					d.leaf(path, b, a, bs, as, false, false, false)
				}
				return
			}
			keys := make([]string, 0, len(bm)+len(am))
			for k := range bm {
				keys = append(keys, k)
			}
			for k := range am {
				if _, ok := bm[k]; !ok {
					keys = append(keys, k)
				}
			}
			if um, ok := unk.(map[string]any); ok {
				for k, v := range um {
					_, inB := bm[k]
					_, inA := am[k]
					if !inB && !inA && v != false && v != nil {
						keys = append(keys, k)
					}
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				d.walk(childKey(path, k), bm[k], am[k], subKey(bs, k), subKey(as, k), subKey(unk, k))
			}
			return
		}
		bl, bIsList := b.([]any)
		al, aIsList := a.([]any)
		if (bIsList || b == nil) && (aIsList || a == nil) && (bIsList || aIsList) {
			n := max(len(bl), len(al))
			if ul, ok := unk.([]any); ok {
				n = max(n, len(ul))
			}
			if n == 0 {
				if bIsList != aIsList {
					d.leaf(path, b, a, bs, as, false, false, false)
				}
				return
			}
			for i := range n {
				d.walk(childIndex(path, i), index(bl, i), index(al, i), subIndex(bs, i), subIndex(as, i), subIndex(unk, i))
			}
			return
		}
	}
	d.leaf(path, b, a, bs, as, bSens, aSens, unknown)
}

// leaf records one attribute change unless both sides are equal.
func (d *differ) leaf(path string, b, a, bs, as any, bSens, aSens, unknown bool) {
	if !unknown && bSens == aSens && equal(b, a) {
		return
	}
	if path == "" {
		path = "(value)"
	}
	c := tfplan.AttributeChange{Path: path, Sensitive: bSens || aSens, Unknown: unknown}
	if bSens {
		c.Before = tfplan.SensitiveMask
	} else {
		c.Before = d.render(b, bs)
	}
	switch {
	case unknown:
		c.After = knownAfterApply
	case aSens:
		c.After = tfplan.SensitiveMask
	default:
		c.After = d.render(a, as)
	}
	d.out = append(d.out, c)
}

// render writes v as compact JSON, masking its sensitive subtrees.
func (d *differ) render(v, sens any) string {
	d.buf = appendValue(d.buf[:0], v, sens)
	return string(d.buf)
}

func appendValue(buf []byte, v, sens any) []byte {
	if isTrue(sens) {
		return append(buf, tfplan.SensitiveMask...)
	}
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...)
	case string:
		return strconv.AppendQuote(buf, v)
	case json.Number:
		return append(buf, v...)
	case float64:
		return strconv.AppendFloat(buf, v, 'g', -1, 64)
	case bool:
		return strconv.AppendBool(buf, v)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendQuote(buf, k)
			buf = append(buf, ':')
			buf = appendValue(buf, v[k], subKey(sens, k))
		}
		return append(buf, '}')
	case []any:
		buf = append(buf, '[')
		for i, e := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendValue(buf, e, subIndex(sens, i))
		}
		return append(buf, ']')
	}
	// Decoded JSON holds no other types; never print what we cannot vouch for.
	return append(buf, "(unrenderable)"...)
}

// equal compares decoded JSON values.
func equal(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case string:
		b, ok := b.(string)
		return ok && a == b
	case json.Number:
		b, ok := b.(json.Number)
		return ok && a == b
	case float64:
		b, ok := b.(float64)
		return ok && a == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !equal(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equal(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return false
}

func isTrue(v any) bool {
	b, ok := v.(bool)
	return ok && b
}

// hasTrueKey reports whether an unknown-shape map marks some key unknown.
func hasTrueKey(unk any) bool {
	m, ok := unk.(map[string]any)
	if !ok {
		return false
	}
	for _, v := range m {
		if v != false && v != nil {
			return true
		}
	}
	return false
}

func subKey(shape any, k string) any {
	if m, ok := shape.(map[string]any); ok {
		return m[k]
	}
	return nil
}

func subIndex(shape any, i int) any {
	if l, ok := shape.([]any); ok && i < len(l) {
		return l[i]
	}
	return nil
}

func index(l []any, i int) any {
	if i < len(l) {
		return l[i]
	}
	return nil
}

// childKey appends an attribute or map key to a path: `tags.env` for keys
// that read as identifiers, `tags["a b"]` for the rest. Terraform's JSON does
// not say whether a string step is an attribute or a map key, so one rule
// serves both, and attribute diffs and replace paths read alike.
func childKey(path, k string) string {
	if isIdent(k) {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	return path + "[" + strconv.Quote(k) + "]"
}

func childIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && (r == '-' || r >= '0' && r <= '9'):
		default:
			return false
		}
	}
	return true
}

// learnSensitive adds to secrets every value in v that the sensitivity
// shape sens marks: true marks a whole subtree; a map or list of the
// shape marks parts. It follows the shape, not the value, so a change
// without sensitive parts costs nothing.
func learnSensitive(secrets *secret.Set, v, sens any) {
	if secrets == nil || sens == nil || sens == false {
		return
	}
	switch sh := sens.(type) {
	case bool:
		learnValue(secrets, v)
	case map[string]any:
		if m, ok := v.(map[string]any); ok {
			for k, s := range sh {
				learnSensitive(secrets, m[k], s)
			}
		}
	case []any:
		if l, ok := v.([]any); ok {
			for i, s := range sh {
				if i < len(l) {
					learnSensitive(secrets, l[i], s)
				}
			}
		}
	}
}

// maskSecrets replaces every attribute value that holds a secret with the
// mask, after the whole plan was read: a value Terraform did not mark
// (terraform_data's output mirroring a sensitive input, a base64 or JSON
// encoding of one) is masked because the same secret was marked elsewhere
// or came from a sensitive variable.
func maskSecrets(changes []tfplan.ResourceChange, secrets *secret.Set) {
	if secrets.Len() == 0 {
		return
	}
	for i := range changes {
		for j := range changes[i].Attributes {
			a := &changes[i].Attributes[j]
			if a.Before != tfplan.SensitiveMask && secrets.Contains(a.Before) {
				a.Before, a.Sensitive = tfplan.SensitiveMask, true
			}
			if a.After != tfplan.SensitiveMask && a.After != knownAfterApply && secrets.Contains(a.After) {
				a.After, a.Sensitive = tfplan.SensitiveMask, true
			}
		}
	}
}
