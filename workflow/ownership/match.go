package ownership

import (
	"fmt"
	"path"
	"strings"
)

// The ownership map compiled for checking: its globs, matches, and the
// rule and hand-off that apply to an object.

// glob is a precompiled Match pattern. Most patterns are literals,
// prefixes ("aws_*") or suffixes; comparing those directly instead of
// calling path.Match for every rule and object keeps a 20,000-object check
// in milliseconds.
type glob struct {
	kind globKind
	a    string
}

type globKind uint8

const (
	globAny    globKind = iota // empty pattern: matches anything, even ""
	globLit                    // no metacharacters
	globStar                   // "*": any non-empty value without '/'
	globPrefix                 // "abc*"
	globSuffix                 // "*abc"
	globPath                   // anything else: path.Match
)

func compileGlob(p string) glob {
	switch {
	case p == "":
		return glob{kind: globAny}
	case !strings.ContainsAny(p, `*?[\`):
		return glob{kind: globLit, a: p}
	case p == "*":
		return glob{kind: globStar}
	}
	if strings.Count(p, "*") == 1 && !strings.ContainsAny(p, `?[\`) {
		if strings.HasSuffix(p, "*") {
			return glob{kind: globPrefix, a: p[:len(p)-1]}
		}
		if strings.HasPrefix(p, "*") {
			return glob{kind: globSuffix, a: p[1:]}
		}
	}
	return glob{kind: globPath, a: p}
}

// match has the semantics of globOK: a criterion never matches an empty
// value, and '*' never crosses '/', as in path.Match.
func (g glob) match(v string) bool {
	switch g.kind {
	case globAny:
		return true
	case globLit:
		return v == g.a
	}
	if v == "" {
		return false
	}
	switch g.kind {
	case globStar:
		return !strings.Contains(v, "/")
	case globPrefix:
		return strings.HasPrefix(v, g.a) && !strings.Contains(v[len(g.a):], "/")
	case globSuffix:
		return strings.HasSuffix(v, g.a) && !strings.Contains(v[:len(v)-len(g.a)], "/")
	}
	ok, err := path.Match(g.a, v)
	return err == nil && ok
}

// compiledMatch is a Match with each criterion precompiled, in the order
// terraform_type, terraform_address, group, kind, namespace, name, app.
type compiledMatch [7]glob

func compileMatch(m Match) compiledMatch {
	return compiledMatch{
		compileGlob(m.TerraformType), compileGlob(m.TerraformAddress), compileGlob(m.Group),
		compileGlob(m.Kind), compileGlob(m.Namespace), compileGlob(m.Name), compileGlob(m.App),
	}
}

func (c *compiledMatch) matches(o *ManagedObject) bool {
	return c[3].match(o.Kind) && c[5].match(o.Name) && c[4].match(o.Namespace) &&
		c[0].match(o.TerraformType) && c[1].match(o.TerraformAddress) &&
		c[2].match(o.Group) && c[6].match(o.App)
}

// compiledMap is an OwnershipMap ready for many lookups.
type compiledMap struct {
	m        Map
	rules    []compiledMatch
	handoffs []compiledMatch
}

func compileMap(m Map) *compiledMap {
	c := &compiledMap{m: m, rules: make([]compiledMatch, len(m.Rules)), handoffs: make([]compiledMatch, len(m.Handoffs))}
	for i, r := range m.Rules {
		c.rules[i] = compileMatch(r.Match)
	}
	for i, h := range m.Handoffs {
		c.handoffs[i] = compileMatch(h.Match)
	}
	return c
}

// ruleFor returns the index of the first rule matching o, or -1.
func (c *compiledMap) ruleFor(o *ManagedObject) int {
	for i := range c.rules {
		if c.rules[i].matches(o) {
			return i
		}
	}
	return -1
}

// handoffFor returns the index of the first hand-off matching o, or -1.
func (c *compiledMap) handoffFor(o *ManagedObject) int {
	for i := range c.handoffs {
		if c.handoffs[i].matches(o) {
			return i
		}
	}
	return -1
}

func (c *compiledMap) at(line int) string { return fmt.Sprintf("%s:%d", c.m.File, line) }
