package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// yamlFile is a parsed YAML stream that remembers its source text, so that an
// edit can be made in place.
//
// Every edit is applied twice: to the yaml.v3 node tree, and, where the
// source positions allow it, as a splice of the original bytes. Re-encoding
// the node tree is what yaml.v3 offers, but it drops blank lines, re-indents
// block sequences and respaces comments, so a one-line pin would show up in
// review as a diff of the whole file. The splices change only the lines that
// pin; they are kept only if the spliced text decodes to exactly what the
// edited node tree decodes to. Otherwise (flow collections, multi-line
// scalars, anchors, unusual line breaks) the node tree is re-encoded with the
// file's own indentation, which keeps comments and key order but not blank
// lines.
type yamlFile struct {
	src  []byte
	docs []*yaml.Node // document nodes; a document may have no content
	// lines holds the byte offset at which each line starts.
	lines  []int
	eol    string
	indent int

	// inPlace is true while every edit so far has a splice.
	inPlace bool
	changed bool
	splices []splice
	// inserted maps a value node added by an edit to the offset of the
	// splice that wrote it, so a later insertion after it lands behind it.
	inserted map[*yaml.Node]int
}

// splice replaces src[start:end] with text; seq orders insertions at one
// offset.
type splice struct {
	start, end int
	text       string
	seq        int
}

// parseYAML parses data as a stream of YAML documents and checks that each
// decodes (which catches duplicate keys, as every YAML consumer would).
func parseYAML(data []byte) (*yamlFile, error) {
	f := &yamlFile{src: data, eol: "\n", inserted: map[*yaml.Node]int{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		n := &yaml.Node{}
		err := dec.Decode(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &EditError{Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
		}
		if _, err := decodeAny(n); err != nil {
			return nil, &EditError{Line: n.Line, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
		}
		f.docs = append(f.docs, n)
	}
	f.inPlace = positionsTrusted(data)
	if f.inPlace {
		f.lines = append(f.lines, 0)
		for i, c := range data {
			if c == '\n' {
				f.lines = append(f.lines, i+1)
			}
		}
		if bytes.Contains(data, []byte("\r\n")) {
			f.eol = "\r\n"
		}
	}
	f.indent = detectIndent(f.docs)
	return f, nil
}

// positionsTrusted reports whether yaml.v3's line and column numbers can be
// mapped back to byte offsets by counting '\n' and runes: yaml.v3 also breaks
// lines at a lone '\r' and at NEL, LS and PS, and does not count a byte order
// mark.
func positionsTrusted(data []byte) bool {
	if !utf8.Valid(data) || bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return false
	}
	if bytes.ContainsAny(data, "\u0085\u2028\u2029") {
		return false
	}
	for i, c := range data {
		if c == '\r' && (i+1 == len(data) || data[i+1] != '\n') {
			return false
		}
	}
	return true
}

// detectIndent returns the indentation of the first nested block mapping,
// so a re-encoded file keeps its 2 or 4 spaces; 2 when nothing says.
func detectIndent(docs []*yaml.Node) int {
	var walk func(n *yaml.Node, depth int) int
	walk = func(n *yaml.Node, depth int) int {
		if n == nil || depth > 100 {
			return 0
		}
		if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
					if d := v.Content[0].Column - k.Column; d >= 2 && d <= 8 && v.Content[0].Line > k.Line {
						return d
					}
				}
			}
		}
		for _, c := range n.Content {
			if d := walk(c, depth+1); d != 0 {
				return d
			}
		}
		return 0
	}
	for _, d := range docs {
		if i := walk(d, 0); i != 0 {
			return i
		}
	}
	return 2
}

// decodeAny decodes n into plain Go values, turning a panic inside yaml.v3
// into an error: whatever a file holds must not crash relcap.
func decodeAny(n *yaml.Node) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	err = n.Decode(&v)
	return v, err
}

// content returns the single node a document holds, or nil.
func content(doc *yaml.Node) *yaml.Node {
	if doc == nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

// lookup returns the index of key in mapping m (the index of the key node in
// m.Content) and its value, or -1 and nil.
func lookup(m *yaml.Node, key string) (int, *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return -1, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return i, m.Content[i+1]
		}
	}
	return -1, nil
}

// scalarValue returns the value of key in m when it is a scalar.
func scalarValue(m *yaml.Node, key string) (string, bool) {
	_, v := lookup(m, key)
	if v == nil || v.Kind != yaml.ScalarNode {
		return "", false
	}
	return v.Value, true
}

// isNull reports whether n is an explicit or implicit YAML null.
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// kindName names a node's kind for error messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return "a scalar"
	}
	return "empty"
}

// lineStart returns the offset of the first byte of 1-based line.
func (f *yamlFile) lineStart(line int) (int, bool) {
	if line < 1 || line > len(f.lines) {
		return 0, false
	}
	return f.lines[line-1], true
}

// lineEnd returns the offset of the line break ending line (before any
// '\r'), or the end of the source.
func (f *yamlFile) lineEnd(line int) int {
	end := len(f.src)
	if line < len(f.lines) {
		end = f.lines[line] - 1
	}
	if end > 0 && end <= len(f.src) && f.src[end-1] == '\r' {
		end--
	}
	return end
}

// nextLine returns the offset just after line's line break, or the end of
// the source.
func (f *yamlFile) nextLine(line int) int {
	if line < len(f.lines) {
		return f.lines[line]
	}
	return len(f.src)
}

// offset maps yaml.v3's 1-based line and rune column to a byte offset.
func (f *yamlFile) offset(line, col int) (int, bool) {
	start, ok := f.lineStart(line)
	if !ok || col < 1 {
		return 0, false
	}
	end := f.lineEnd(line)
	off := start
	for i := 1; i < col; i++ {
		if off >= end {
			return 0, false
		}
		_, size := utf8.DecodeRune(f.src[off:end])
		off += size
	}
	return off, true
}

// scalarSpan returns the byte range of a single-line scalar in the source.
// It refuses what it cannot delimit for certain: anchors, tags, block and
// multi-line scalars, and empty values.
func (f *yamlFile) scalarSpan(n *yaml.Node) (int, int, bool) {
	if !f.inPlace || n.Kind != yaml.ScalarNode || n.Anchor != "" || n.Value == "" ||
		n.Style&(yaml.TaggedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.FlowStyle) != 0 {
		return 0, 0, false
	}
	start, ok := f.offset(n.Line, n.Column)
	if !ok {
		return 0, 0, false
	}
	text := f.src[start:f.lineEnd(n.Line)]
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		if len(text) == 0 || text[0] != '"' {
			return 0, 0, false
		}
		for i := 1; i < len(text); i++ {
			switch text[i] {
			case '\\':
				i++
			case '"':
				return start, start + i + 1, true
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		if len(text) == 0 || text[0] != '\'' {
			return 0, 0, false
		}
		for i := 1; i < len(text); i++ {
			if text[i] == '\'' {
				if i+1 < len(text) && text[i+1] == '\'' {
					i++
					continue
				}
				return start, start + i + 1, true
			}
		}
	default:
		// A plain scalar ends at a comment or, as a key, at ": "; in a
		// flow collection also at a flow indicator. Whichever reading
		// gives back exactly the value is the scalar; one that continues
		// on the next line matches neither.
		if end := plainEnd(text, false); string(text[:end]) == n.Value {
			return start, start + end, true
		}
		if end := plainEnd(text, true); string(text[:end]) == n.Value {
			return start, start + end, true
		}
	}
	return 0, 0, false
}

// plainEnd returns the length of the plain scalar that starts text, with
// trailing blanks trimmed.
func plainEnd(text []byte, flow bool) int {
	end := len(text)
	for i := 1; i < len(text); i++ {
		c, prev := text[i], text[i-1]
		if c == '#' && (prev == ' ' || prev == '\t') {
			end = i
			break
		}
		if prev == ':' && (c == ' ' || c == '\t' || flow && strings.IndexByte(",[]{}", c) >= 0) {
			end = i - 1
			break
		}
		if flow && strings.IndexByte(",[]{}", c) >= 0 {
			end = i
			break
		}
	}
	if end == len(text) && end > 0 && text[end-1] == ':' {
		end--
	}
	return len(bytes.TrimRight(text[:end], " \t"))
}

// restOfLineIsComment reports whether only blanks or a comment follow off on
// its line.
func (f *yamlFile) restOfLineIsComment(off, line int) bool {
	rest := bytes.TrimLeft(f.src[off:f.lineEnd(line)], " \t")
	return len(rest) == 0 || rest[0] == '#'
}

// pairEnd returns the offset just after the last line of the value v, where
// a following pair of the same mapping can be inserted.
func (f *yamlFile) pairEnd(v *yaml.Node) (int, bool) {
	if off, ok := f.inserted[v]; ok {
		return off, true
	}
	last := v
	for (last.Kind == yaml.MappingNode || last.Kind == yaml.SequenceNode) && len(last.Content) > 0 {
		if last.Style&yaml.FlowStyle != 0 || last.Anchor != "" {
			return 0, false
		}
		last = last.Content[len(last.Content)-1]
	}
	_, end, ok := f.scalarSpan(last)
	if !ok || !f.restOfLineIsComment(end, last.Line) {
		return 0, false
	}
	return f.nextLine(last.Line), true
}
