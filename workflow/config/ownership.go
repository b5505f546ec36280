package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/ownership"
)

// Keys of ownership.yaml, per level.
var (
	ownershipKeys = []string{"version", "rules", "handoffs"}
	ruleKeys      = []string{"match", "owner", "fields"}
	handoffKeys   = []string{"match", "from", "to", "note"}
	matchKeys     = []string{"terraform_type", "terraform_address", "group", "kind", "namespace", "name", "app"}
)

// ownerName is what an owner may be called: the check compares owners with
// the managers relcap observes ("terraform", "argocd"), which are lowercase.
var ownerName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// ValidOwner reports whether name may name an owner in ownership.yaml:
// lowercase letters, digits, '.', '_' and '-', starting with a letter or
// digit.
func ValidOwner(name string) bool { return ownerName.MatchString(name) }

// LoadOwnership reads and validates the ownership map at path. The map's
// File is path as given, for messages. The error is an *Errors listing
// every problem, or a read error; both satisfy errors.Is(err,
// fault.ErrUsage).
func LoadOwnership(path string) (ownership.Map, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return ownership.Map{}, fmt.Errorf("%w: %w", fault.ErrUsage, err)
	}
	return ParseOwnership(path, data)
}

// ParseOwnership decodes and validates ownership.yaml content; file names it
// in problem reports and becomes the map's File. The error is an *Errors.
func ParseOwnership(file string, data []byte) (ownership.Map, error) {
	var c collector
	m := (&parser{file: file, probs: &c}).ownership(data)
	if err := c.err(); err != nil {
		return ownership.Map{}, err
	}
	return m, nil
}

// ownership decodes the whole of ownership.yaml: one item at a time when
// its shape allows (ownership_stream.go), else as one document of at most
// maxWholeOwnership bytes.
func (p *parser) ownership(data []byte) ownership.Map {
	om := ownership.Map{File: p.file}
	p.work = baseWork + len(data)
	if !p.checkUTF8(data) {
		return om
	}
	if plan, ok := planStream(data); ok {
		return p.ownershipStreamed(data, plan, om)
	}
	if len(data) > maxWholeOwnership {
		p.tooLargeWhole(len(data))
		return om
	}
	return p.ownershipWhole(data, om)
}

// ownershipWhole decodes ownership.yaml as one document.
func (p *parser) ownershipWhole(data []byte, om ownership.Map) ownership.Map {
	root := p.document(data, "a mapping with version and rules")
	if root == nil {
		return om
	}
	top, ok := p.mapping(root, "", ownershipKeys)
	if !ok {
		return om
	}
	top.version()

	rules, n, ok := top.list("rules")
	switch {
	case ok && len(rules) == 0:
		p.add(n, "rules", "want at least one rule; every managed object must match one")
	case !ok && n == nil:
		top.require("rules", "every managed object must match one rule")
	}
	c := newRuleCollector(p, &om)
	for i, item := range rules {
		if !p.spend() {
			break
		}
		c.rule(item, i)
	}
	handoffs, _, _ := top.list("handoffs")
	for i, item := range handoffs {
		if !p.spend() {
			break
		}
		c.handoff(item, i)
	}
	return om
}

// ruleCollector checks rules and hand-offs one by one into a map, the
// same whether they come from one document or one at a time.
type ruleCollector struct {
	p  *parser
	om *ownership.Map
	// firstLine: a rule whose match repeats an earlier one can never win,
	// since the first match wins.
	firstLine map[ownership.Match]int
}

func newRuleCollector(p *parser, om *ownership.Map) *ruleCollector {
	return &ruleCollector{p: p, om: om, firstLine: map[ownership.Match]int{}}
}

// rule checks the i-th rule, item, and adds it.
func (c *ruleCollector) rule(item *yaml.Node, i int) {
	r, ok := c.p.rule(item, index("rules", i))
	if !ok {
		return
	}
	if line, dup := c.firstLine[r.Match]; dup {
		c.p.add(item, index("rules", i), "same match as the rule at line %d, which wins; this rule is never used", line)
	} else if !r.Match.IsZero() {
		c.firstLine[r.Match] = r.Line
	}
	c.om.Rules = append(c.om.Rules, r)
}

// handoff checks the i-th hand-off, item, and adds it.
func (c *ruleCollector) handoff(item *yaml.Node, i int) {
	if h, ok := c.p.handoff(item, index("handoffs", i)); ok {
		c.om.Handoffs = append(c.om.Handoffs, h)
	}
}

func (p *parser) rule(n *yaml.Node, field string) (ownership.Rule, bool) {
	m, ok := p.mapping(n, field, ruleKeys)
	if !ok {
		return ownership.Rule{}, false
	}
	r := ownership.Rule{Line: n.Line}
	r.Match = m.match()
	r.Owner = m.owner("owner", "e.g. owner: terraform")
	if e, ok := m.get("fields"); ok {
		r.Fields = p.fields(e.val, join(field, "fields"))
	}
	return r, true
}

func (p *parser) handoff(n *yaml.Node, field string) (ownership.Handoff, bool) {
	m, ok := p.mapping(n, field, handoffKeys)
	if !ok {
		return ownership.Handoff{}, false
	}
	h := ownership.Handoff{Line: n.Line}
	h.Match = m.match()
	h.From = m.owner("from", "the owner that bootstraps it, e.g. from: terraform")
	h.To = m.owner("to", "the owner that takes over, e.g. to: argocd")
	if h.From != "" && h.From == h.To {
		e := m.entries["to"]
		p.add(e.val, join(field, "to"), "hand-off from %s to itself; from and to must differ", h.From)
	}
	h.Note, _ = m.str("note")
	return h, true
}

// match reads the required, non-empty match of a rule or hand-off.
func (m *mapNode) match() ownership.Match {
	var x ownership.Match
	e, ok := m.require("match", "e.g. match: {kind: Deployment}")
	if !ok {
		return x
	}
	mm, ok := m.sub("match", matchKeys)
	if !ok {
		return x
	}
	for _, f := range []struct {
		key string
		dst *string
	}{
		{"terraform_type", &x.TerraformType},
		{"terraform_address", &x.TerraformAddress},
		{"group", &x.Group},
		{"kind", &x.Kind},
		{"namespace", &x.Namespace},
		{"name", &x.Name},
		{"app", &x.App},
	} {
		if v, n := mm.str(f.key); n != nil && v != "" {
			m.p.glob(n, join(mm.path, f.key), v)
			*f.dst = v
		}
	}
	// Say "empty" only when nothing was written; an unknown key has been
	// reported already and is the real mistake.
	if x.IsZero() && len(resolve(e.val).Content) == 2*len(mm.entries) {
		m.p.add(e.val, mm.path, "empty match would select every object; name at least one of %s", strings.Join(matchKeys, ", "))
	}
	return x
}

// owner reads a required owner name.
func (m *mapNode) owner(key, hint string) ownership.Owner {
	s, n := m.reqStr(key, hint)
	if n == nil {
		return ""
	}
	if !m.p.checkOwner(n, join(m.path, key), s) {
		return ""
	}
	return ownership.Owner(s)
}

// checkOwner reports an owner name that cannot be right: not lowercase, or a
// near miss of the two managers relcap observes, which would otherwise turn
// every object into a wrong-owner finding.
func (p *parser) checkOwner(n *yaml.Node, field, s string) bool {
	if !ownerName.MatchString(s) {
		if lower := strings.ToLower(s); lower == string(ownership.OwnerTerraform) || lower == string(ownership.OwnerArgoCD) {
			p.add(n, field, "want %q, got %s (owners are lowercase)", lower, quote(s))
		} else {
			p.add(n, field, "want an owner name of lowercase letters, digits, '.', '_' or '-', such as terraform, argocd or hpa, got %s", quote(s))
		}
		return false
	}
	for _, known := range []ownership.Owner{ownership.OwnerTerraform, ownership.OwnerArgoCD} {
		if d := editDistance(s, string(known), 3); len(s) >= 5 && d > 0 && d <= 2 {
			p.add(n, field, "unknown owner %s (did you mean %q?)", quote(s), known)
			return false
		}
	}
	return true
}

// fields reads a rule's per-field owners: desired-state field paths mapped
// to the owner of each.
func (p *parser) fields(n *yaml.Node, field string) map[string]ownership.Owner {
	r := resolve(n)
	if r.Kind != yaml.MappingNode {
		p.add(n, field, "want a mapping of field paths to owners, got %s", describe(n))
		return nil
	}
	out := map[string]ownership.Owner{}
	first := map[string]int{}
	for i := 0; i+1 < len(r.Content); i += 2 {
		if !p.spend() {
			break
		}
		k, v := r.Content[i], r.Content[i+1]
		rk := resolve(k)
		if rk.Kind != yaml.ScalarNode || isNull(rk) || rk.Value == "" {
			p.add(k, field, "want a field path such as spec.replicas as the key, got %s", describe(k))
			continue
		}
		f := join(field, rk.Value)
		if line, dup := first[rk.Value]; dup {
			p.add(k, f, "duplicate key (first at line %d)", line)
			continue
		}
		first[rk.Value] = k.Line
		rv := resolve(v)
		if rv.Kind != yaml.ScalarNode || isNull(rv) || rv.Value == "" {
			p.add(v, f, "want an owner name such as hpa, got %s", describe(v))
			continue
		}
		if p.checkOwner(v, f, rv.Value) {
			out[rk.Value] = ownership.Owner(rv.Value)
		}
	}
	return out
}
