package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

const (
	// baseWork bounds the mapping entries and list items one file may make
	// the decoder visit, on top of one per input byte (so no file without
	// aliases can reach it). Aliases let a small file name the same large
	// node many times (the "billion laughs" shape); yaml.v3 guards this when
	// it decodes into Go values but not for the Node API, so we count.
	baseWork = 1 << 18
	// maxMergeDepth bounds merge keys that merge mappings that merge.
	maxMergeDepth = 16
)

// parser decodes one YAML file through the Node API, recording problems with
// their positions instead of stopping at the first.
type parser struct {
	file  string
	probs *collector
	work  int // units left; set by document
	spent bool
	// people caches the people file's principals (see principals).
	people    *[]string
	peopleErr bool
}

// add records a problem at n's position (none when n is nil).
func (p *parser) add(n *yaml.Node, field, format string, args ...any) {
	if p.probs.full() {
		p.probs.dropped++
		return
	}
	pr := Problem{File: p.file, Field: field, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		pr.Line, pr.Col = n.Line, n.Column
	}
	p.probs.add(pr)
}

// spend counts one unit of work and reports whether the budget allows it.
func (p *parser) spend() bool {
	if p.spent {
		return false
	}
	p.work--
	if p.work < 0 {
		p.spent = true
		p.probs.stop(Problem{File: p.file, Message: "aliases expand this document too far; stopped checking"})
		return false
	}
	return true
}

// yamlLine finds the line number in yaml.v3's error text, which carries no
// structured position ("yaml: line 3: could not find expected ':'").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// document parses data and returns the root node of its single document, or
// nil after recording why there is none.
func (p *parser) document(data []byte, want string) *yaml.Node {
	p.work = baseWork + len(data)
	if !p.checkUTF8(data) {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := p.decode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.add(nil, "", "file is empty; want %s", want)
		} else {
			p.syntax(err, data)
		}
		return nil
	}
	var extra yaml.Node
	switch err := p.decode(dec, &extra); {
	case err == nil:
		p.add(&extra, "", "a second YAML document starts here; want a single document")
	case !errors.Is(err, io.EOF):
		p.syntax(err, data)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		p.add(nil, "", "file is empty; want %s", want)
		return nil
	}
	return doc.Content[0]
}

// decode wraps yaml.v3's decoder so that a panic inside it, on input nobody
// anticipated, becomes a problem report instead of crashing relcap.
func (p *parser) decode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(n)
}

// parserProblems are the messages of yaml.v3's parser, as opposed to its
// scanner. yaml.v3 v3.0.1 turns the 0-based line into a 1-based one for
// scanner errors only (parser.fail in its decode.go), so parser errors come
// out a line early.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// syntax records a YAML syntax error, with the line yaml.v3 puts in its
// message when there is one.
func (p *parser) syntax(err error, data []byte) {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
		if slices.Contains(parserProblems, msg) {
			// Errors found at the end of input point past the last line;
			// the last line with content is where the unfinished node is.
			line = min(line+1, lineCount(data))
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	p.probs.add(Problem{File: p.file, Line: line, Message: "invalid YAML: " + msg})
}

// lineCount is the number of the last line that has any content.
func lineCount(data []byte) int {
	data = bytes.TrimRight(data, " \t\r\n")
	return bytes.Count(data, []byte("\n")) + 1
}

// resolve follows an alias to the node it names. yaml.v3 rejects unknown
// and self-containing anchors, so one hop suffices. Nil (never produced by
// yaml.v3, but cheap to survive) becomes a null.
func resolve(n *yaml.Node) *yaml.Node {
	if n == nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
		}
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what a node is, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	n = resolve(n)
	switch {
	case isNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode:
		return quote(n.Value)
	}
	return "an unsupported YAML node"
}

// quote quotes s for a message, shortening it so one bad value cannot drown
// the report.
func quote(s string) string {
	const max = 60
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	return strconv.Quote(s)
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func index(parent string, i int) string { return fmt.Sprintf("%s[%d]", parent, i) }

// entry is one key and its value in a mapping.
type entry struct {
	key, val *yaml.Node
}

// mapNode is a checked mapping: only known keys, no duplicates, merge keys
// applied.
type mapNode struct {
	p       *parser
	node    *yaml.Node
	path    string
	entries map[string]entry
}

// mapping checks that n is a mapping whose keys are all in known, reporting
// unknown keys with a suggestion and duplicate keys with the first
// occurrence. Merge keys (<<: *base) are applied, explicit keys winning, so
// environments can share a common block as YAML users expect.
func (p *parser) mapping(n *yaml.Node, field string, known []string) (*mapNode, bool) {
	r := resolve(n)
	if r.Kind != yaml.MappingNode {
		p.add(n, field, "want a mapping, got %s", describe(n))
		return nil, false
	}
	m := &mapNode{p: p, node: n, path: field, entries: map[string]entry{}}
	p.collect(m, r, known, 0)
	return m, true
}

func (p *parser) collect(m *mapNode, n *yaml.Node, known []string, depth int) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !p.spend() {
			return
		}
		k, v := n.Content[i], n.Content[i+1]
		rk := resolve(k)
		if rk.Kind == yaml.ScalarNode && rk.Value == "<<" && rk.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if rk.Kind != yaml.ScalarNode {
			p.add(k, m.path, "want a plain key, got %s", describe(k))
			continue
		}
		name := rk.Value
		if prev, dup := m.entries[name]; dup {
			// Keys arriving through a merge lose to explicit ones silently;
			// only a key written twice in one mapping is a mistake.
			if depth == 0 {
				p.add(k, join(m.path, name), "duplicate key (first at line %d)", prev.key.Line)
			}
			continue
		}
		if !slices.Contains(known, name) {
			p.add(k, join(m.path, name), "%s", unknownKey(name, known))
			continue
		}
		m.entries[name] = entry{key: k, val: v}
	}
	for _, v := range merges {
		if depth >= maxMergeDepth {
			p.add(v, m.path, "merge keys nested too deeply")
			return
		}
		r := resolve(v)
		switch r.Kind {
		case yaml.MappingNode:
			p.collect(m, r, known, depth+1)
		case yaml.SequenceNode:
			for _, item := range r.Content {
				if ri := resolve(item); ri.Kind == yaml.MappingNode {
					p.collect(m, ri, known, depth+1)
				} else {
					p.add(item, m.path, "merge key wants a mapping, got %s", describe(item))
				}
			}
		default:
			p.add(v, m.path, "merge key wants a mapping or a list of mappings, got %s", describe(v))
		}
	}
}

// get returns the entry for key when it is present and not null.
func (m *mapNode) get(key string) (entry, bool) {
	e, ok := m.entries[key]
	if !ok || isNull(e.val) {
		return e, false
	}
	return e, true
}

// valueNode is key's value, nil when absent or null, for reporting a
// problem at it.
func (m *mapNode) valueNode(key string) *yaml.Node {
	if e, ok := m.get(key); ok {
		return e.val
	}
	return nil
}

// require reports a missing or null required key and returns whether it is
// usable.
func (m *mapNode) require(key, hint string) (entry, bool) {
	e, ok := m.get(key)
	if ok {
		return e, true
	}
	if hint != "" {
		hint = " (" + hint + ")"
	}
	if _, present := m.entries[key]; present {
		m.p.add(e.key, join(m.path, key), "must not be empty%s", hint)
	} else {
		m.p.add(m.node, m.path, "missing required key %q%s", key, hint)
	}
	return e, false
}

// scalar returns e's value as a scalar node, or nil after reporting what
// was there instead.
func (m *mapNode) scalar(e entry, field, want string) *yaml.Node {
	r := resolve(e.val)
	if r.Kind != yaml.ScalarNode {
		m.p.add(e.val, field, "want %s, got %s", want, describe(e.val))
		return nil
	}
	return r
}

// str reads an optional string. Any scalar is accepted as its literal text,
// so "branch: 2024" is the branch "2024".
func (m *mapNode) str(key string) (string, *yaml.Node) {
	e, ok := m.get(key)
	if !ok {
		return "", nil
	}
	r := m.scalar(e, join(m.path, key), "a string")
	if r == nil {
		return "", nil
	}
	return r.Value, e.val
}

// reqStr reads a required, non-empty string.
func (m *mapNode) reqStr(key, hint string) (string, *yaml.Node) {
	if _, ok := m.require(key, hint); !ok {
		return "", nil
	}
	s, n := m.str(key)
	if n != nil && s == "" {
		m.p.add(n, join(m.path, key), "must not be empty")
		return "", nil
	}
	return s, n
}

// nonNegInt reads an optional integer that must be zero or more.
func (m *mapNode) nonNegInt(key string) (int, *yaml.Node) {
	e, ok := m.get(key)
	if !ok {
		return 0, nil
	}
	const want = "a non-negative integer"
	field := join(m.path, key)
	r := m.scalar(e, field, want)
	if r == nil {
		return 0, nil
	}
	var v int64
	if r.ShortTag() != "!!int" || r.Decode(&v) != nil || v < 0 || v > math.MaxInt32 {
		m.p.add(e.val, field, "want %s, got %s", want, quote(r.Value))
		return 0, nil
	}
	return int(v), e.val
}

// boolean reads an optional true or false.
func (m *mapNode) boolean(key string) bool {
	e, ok := m.get(key)
	if !ok {
		return false
	}
	field := join(m.path, key)
	r := m.scalar(e, field, "true or false")
	if r == nil {
		return false
	}
	var v bool
	if r.ShortTag() != "!!bool" || r.Decode(&v) != nil {
		m.p.add(e.val, field, "want true or false, got %s", quote(r.Value))
		return false
	}
	return v
}

// optBoolean reads an optional true or false, reporting whether it was
// given at all, for keys whose default depends on other keys.
func (m *mapNode) optBoolean(key string) (set, v bool) {
	if _, ok := m.get(key); !ok {
		return false, false
	}
	return true, m.boolean(key)
}

// nonNegNumber reads an optional finite number that must be zero or more.
func (m *mapNode) nonNegNumber(key string) float64 {
	e, ok := m.get(key)
	if !ok {
		return 0
	}
	const want = "a non-negative number"
	field := join(m.path, key)
	r := m.scalar(e, field, want)
	if r == nil {
		return 0
	}
	var v float64
	tag := r.ShortTag()
	if tag != "!!int" && tag != "!!float" || r.Decode(&v) != nil ||
		v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		m.p.add(e.val, field, "want %s, got %s", want, quote(r.Value))
		return 0
	}
	return v
}

// duration reads an optional positive Go duration, returning def when the
// key is absent.
func (m *mapNode) duration(key string, def time.Duration) time.Duration {
	e, ok := m.get(key)
	if !ok {
		return def
	}
	const want = "a Go duration like 2m or 1h30m"
	field := join(m.path, key)
	r := m.scalar(e, field, want)
	if r == nil {
		return def
	}
	d, err := time.ParseDuration(r.Value)
	if err != nil {
		m.p.add(e.val, field, "want %s, got %s", want, quote(r.Value))
		return def
	}
	if d <= 0 {
		m.p.add(e.val, field, "want a positive duration like 2m or 1h30m, got %s", quote(r.Value))
		return def
	}
	return d
}

// strList reads an optional list of strings; present reports whether the
// key was there at all, so an explicit empty list can differ from a default.
func (m *mapNode) strList(key string) (items []string, nodes []*yaml.Node, present bool) {
	e, ok := m.get(key)
	if !ok {
		return nil, nil, false
	}
	field := join(m.path, key)
	r := resolve(e.val)
	if r.Kind != yaml.SequenceNode {
		m.p.add(e.val, field, "want a list of strings, got %s", describe(e.val))
		return nil, nil, true
	}
	items = []string{}
	for i, it := range r.Content {
		if !m.p.spend() {
			break
		}
		ri := resolve(it)
		if ri.Kind != yaml.ScalarNode || isNull(ri) {
			m.p.add(it, index(field, i), "want a string, got %s", describe(it))
			continue
		}
		if ri.Value == "" {
			m.p.add(it, index(field, i), "must not be empty")
			continue
		}
		items = append(items, ri.Value)
		nodes = append(nodes, it)
	}
	return items, nodes, true
}

// sub reads an optional nested mapping.
func (m *mapNode) sub(key string, known []string) (*mapNode, bool) {
	e, ok := m.get(key)
	if !ok {
		return nil, false
	}
	return m.p.mapping(e.val, join(m.path, key), known)
}

// reqSub reads a required nested mapping.
func (m *mapNode) reqSub(key string, known []string) (*mapNode, bool) {
	if _, ok := m.require(key, ""); !ok {
		return nil, false
	}
	return m.sub(key, known)
}

// list reads a list, returning its items (unresolved, for positions).
func (m *mapNode) list(key string) ([]*yaml.Node, *yaml.Node, bool) {
	e, ok := m.get(key)
	if !ok {
		return nil, nil, false
	}
	r := resolve(e.val)
	if r.Kind != yaml.SequenceNode {
		m.p.add(e.val, join(m.path, key), "want a list, got %s", describe(e.val))
		return nil, e.val, false
	}
	return r.Content, e.val, true
}

// version checks the required "version: 1".
func (m *mapNode) version() {
	e, ok := m.require("version", "want version: 1")
	if !ok {
		return
	}
	r := m.scalar(e, "version", "1")
	if r == nil {
		return
	}
	var v int64
	switch {
	case r.ShortTag() != "!!int" || r.Decode(&v) != nil:
		m.p.add(e.val, "version", "want 1, got %s", quote(r.Value))
	case v != 1:
		m.p.add(e.val, "version", "unsupported version %d; this relcap reads version 1", v)
	}
}

// glob reports a pattern that path.Match cannot use. Matching against the
// empty name still parses the whole pattern (Go 1.16+), so bad syntax
// anywhere in it shows up.
func (p *parser) glob(n *yaml.Node, field, pattern string) {
	if _, err := path.Match(pattern, ""); err != nil {
		p.add(n, field, "invalid glob pattern %s: %v", quote(pattern), err)
	}
}

// stringPairs walks the mapping under key: each entry whose key is a
// non-empty scalar is handed to each with its value node and field path,
// in the order written; a key that is not, or a value that is not a
// mapping, is said with want (what the mapping holds, e.g. "a mapping of
// forge accounts to principals, e.g. users: {bob-gh: bob}") and keyWant.
// present is false when the key is absent.
func (m *mapNode) stringPairs(key, want, keyWant string, each func(k string, kn, v *yaml.Node, at string)) (present bool) {
	e, ok := m.get(key)
	if !ok {
		return false
	}
	field := join(m.path, key)
	r := resolve(e.val)
	if r.Kind != yaml.MappingNode {
		m.p.add(e.val, field, "want %s, got %s", want, describe(e.val))
		return true
	}
	for i := 0; i+1 < len(r.Content); i += 2 {
		if !m.p.spend() {
			break
		}
		k := resolve(r.Content[i])
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			m.p.add(r.Content[i], field, "want %s, got %s", keyWant, describe(r.Content[i]))
			continue
		}
		each(k.Value, r.Content[i], resolve(r.Content[i+1]), join(field, k.Value))
	}
	return true
}
