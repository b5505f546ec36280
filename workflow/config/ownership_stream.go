package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow/ownership"
)

// An ownership map may be large (one rule per object of a big estate), and
// yaml.v3 builds a node tree of the whole document, several hundred bytes
// per scalar: a 1,000,000-line map took over a gigabyte. So a map in block
// style, without anchors or aliases (what people write and generators
// emit), is read one list item at a time: the top-level mapping is parsed
// with the lists' bodies blanked (line numbers kept), then each rule and
// hand-off is parsed on its own and checked, and its nodes dropped, before
// the next. Positions stay the file's own lines and columns. A map of
// another shape (flow style at the top, anchors, directives, several
// documents) is parsed whole, up to maxWholeOwnership bytes.

// maxWholeOwnership bounds an ownership map that cannot be read one item at
// a time: its node tree is built whole, and costs memory in proportion.
const maxWholeOwnership = 8 << 20

// yamlAnchorOrAlias finds YAML's & and * indicators where they begin a node
// (after a space, a flow indicator or at a line's start), not inside plain
// scalars such as the glob aws_*.
var yamlAnchorOrAlias = regexp.MustCompile(`(?m)(^|[\s\[\{,:?-])[&*][^\s,\[\]\{\}]`)

// topKey is a top-level key line of a block mapping: the key and whether a
// value follows on the same line.
var topKey = regexp.MustCompile(`^([A-Za-z0-9_.-]+)[ \t]*:(?:[ \t]+(#.*|[^#\s].*))?[ \t]*$`)

// listSection is the body of one top-level list (rules, handoffs): the
// byte ranges of its items, and the line each starts on.
type listSection struct {
	items []itemRange
}

type itemRange struct {
	start, end int // byte offsets in the file
	line       int // 1-based line of start
}

// streamPlan is how a map can be read one item at a time: the file with
// its lists' bodies blanked, and the lists' items.
type streamPlan struct {
	head     []byte
	sections map[string]*listSection
}

// planStream reports whether data can be read one item at a time, and how.
func planStream(data []byte) (streamPlan, bool) {
	if yamlAnchorOrAlias.Match(data) {
		return streamPlan{}, false
	}
	plan := streamPlan{head: make([]byte, 0, 1024), sections: map[string]*listSection{}}
	var cur *listSection // the list whose body the scanner is in
	itemIndent := -1
	line := 0
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		text := bytes.TrimRight(data[off:next], "\r\n")
		line++
		indent := len(text) - len(bytes.TrimLeft(text, " "))
		content := bytes.TrimSpace(text)
		top := indent == 0 && len(content) > 0 && content[0] != '#' && !(content[0] == '-' && (len(content) == 1 || content[1] == ' '))
		switch {
		case top:
			m := topKey.FindSubmatch(text)
			if m == nil || bytes.HasPrefix(text, []byte("---")) {
				return streamPlan{}, false // flow style, a directive, another document
			}
			key := string(m[1])
			cur, itemIndent = nil, -1
			if key == "rules" || key == "handoffs" {
				if len(m[2]) > 0 && m[2][0] != '#' {
					return streamPlan{}, false // an inline list: [..]
				}
				if plan.sections[key] != nil {
					return streamPlan{}, false // a duplicate key: the whole parse says so
				}
				cur = &listSection{}
				plan.sections[key] = cur
			}
			plan.head = append(plan.head, data[off:next]...)
		case cur != nil && len(content) > 0 && content[0] != '#':
			isItem := content[0] == '-' && (len(content) == 1 || content[1] == ' ')
			switch {
			case itemIndent < 0 && !isItem:
				return streamPlan{}, false
			case itemIndent < 0:
				itemIndent = indent
				fallthrough
			case isItem && indent == itemIndent:
				cur.items = append(cur.items, itemRange{start: off, end: next, line: line})
			case indent <= itemIndent:
				return streamPlan{}, false
			default:
				cur.items[len(cur.items)-1].end = next
			}
			plan.head = append(plan.head, '\n')
		case cur != nil:
			// A blank or comment line inside a list: kept with its item.
			if n := len(cur.items); n > 0 {
				cur.items[n-1].end = next
			}
			plan.head = append(plan.head, '\n')
		default:
			if len(content) > 0 && content[0] != '#' {
				return streamPlan{}, false // a nested line outside the lists
			}
			plan.head = append(plan.head, data[off:next]...)
		}
		off = next
	}
	return plan, true
}

// item parses one list item of the file on its own and returns its node,
// positioned in the file, or nil after recording why it cannot be read.
func (p *parser) item(data []byte, it itemRange, field string) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data[it.start:it.end]))
	var doc yaml.Node
	err := p.decode(dec, &doc)
	if err == nil {
		var extra yaml.Node
		if err = p.decode(dec, &extra); errors.Is(err, io.EOF) {
			err = nil
		} else if err == nil {
			err = fmt.Errorf("yaml: line %d: a second YAML document starts here", extra.Line)
		}
	}
	if err != nil {
		p.syntaxAt(err, data[it.start:it.end], it.line-1)
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode || len(doc.Content[0].Content) != 1 {
		p.probs.add(Problem{File: p.file, Line: it.line, Field: field, Message: "want one list item here"})
		return nil
	}
	shiftLines(doc.Content[0].Content[0], it.line-1)
	return doc.Content[0].Content[0]
}

// shiftLines moves n and its descendants down by lines (an item parsed
// apart starts at its own line 1). An item has no aliases (planStream), so
// every node is reached once.
func shiftLines(n *yaml.Node, lines int) {
	n.Line += lines
	for _, c := range n.Content {
		shiftLines(c, lines)
	}
}

// syntaxAt is syntax for a piece of the file that starts after lines
// lines.
func (p *parser) syntaxAt(err error, data []byte, lines int) {
	before := len(p.probs.problems)
	p.syntax(err, data)
	if len(p.probs.problems) > before {
		pr := &p.probs.problems[before]
		pr.Line = max(pr.Line, 1) + lines
	}
}

// ownershipStreamed is ownership for a map planStream accepted.
func (p *parser) ownershipStreamed(data []byte, plan streamPlan, om ownership.Map) ownership.Map {
	root := p.document(plan.head, "a mapping with version and rules")
	p.work = baseWork + len(data) // the whole file's budget, as one document would have
	if root == nil {
		return om
	}
	top, ok := p.mapping(root, "", ownershipKeys)
	if !ok {
		return om
	}
	top.version()
	rules := plan.sections["rules"]
	if rules == nil || len(rules.items) == 0 {
		// Absent, or with no item: as the whole document's parse says.
		top.require("rules", "every managed object must match one rule")
	}
	c := newRuleCollector(p, &om)
	if rules != nil {
		p.eachItem(data, rules.items, "rules", c.rule)
	}
	if handoffs := plan.sections["handoffs"]; handoffs != nil {
		p.eachItem(data, handoffs.items, "handoffs", c.handoff)
	}
	return om
}

// batchBytes is how much of a list is parsed at once: items are parsed in
// batches of about this size (one parser per batch; a parser per item
// costs more than the item), so the nodes alive at a time stay bounded
// whatever the file's size.
const batchBytes = 128 << 10

// eachItem parses items in batches and hands each item's node, positioned
// in the file, to use in order. A batch that does not parse is parsed again
// item by item, so every item's own problem is reported where it is.
func (p *parser) eachItem(data []byte, items []itemRange, list string, use func(*yaml.Node, int)) {
	for first := 0; first < len(items); {
		last := first
		for last+1 < len(items) && items[last+1].end-items[first].start <= batchBytes {
			last++
		}
		batch := items[first : last+1]
		nodes, ok := p.batch(data, batch)
		for k := range batch {
			if !p.spend() {
				return
			}
			i := first + k
			var n *yaml.Node
			if ok {
				n = nodes[k]
			} else {
				n = p.item(data, items[i], index(list, i))
			}
			if n != nil {
				use(n, i)
			}
		}
		first = last + 1
	}
}

// batch parses consecutive items as one list; ok is false when that does
// not give exactly one node per item (a syntax error among them, say).
func (p *parser) batch(data []byte, items []itemRange) ([]*yaml.Node, bool) {
	if len(items) == 1 {
		return nil, false
	}
	dec := yaml.NewDecoder(bytes.NewReader(data[items[0].start:items[len(items)-1].end]))
	var doc, extra yaml.Node
	if p.decode(dec, &doc) != nil || !errors.Is(p.decode(dec, &extra), io.EOF) {
		return nil, false
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode || len(doc.Content[0].Content) != len(items) {
		return nil, false
	}
	nodes := doc.Content[0].Content
	for _, n := range nodes {
		shiftLines(n, items[0].line-1)
	}
	return nodes, true
}

// tooLargeWhole says why a map of another shape is not read.
func (p *parser) tooLargeWhole(size int) {
	p.probs.add(Problem{File: p.file, Message: "this ownership map is " + strconv.Itoa(size>>20) + " MB and uses anchors, aliases, flow style at the top level or several documents; a map above " +
		strconv.Itoa(maxWholeOwnership>>20) + " MB must be block style without anchors (relcap then reads it one rule at a time): expand the anchors or split the shared parts out"})
}
