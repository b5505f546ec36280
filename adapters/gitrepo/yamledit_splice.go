package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// The edits themselves: a scalar set, a pair deleted or inserted, each
// applied to the tree and as a splice of the original bytes, and the
// re-encoded tree when the splices do not say exactly what it says.

// renderScalar renders a string scalar on one line, in style if yaml.v3
// allows it and quoted where a plain scalar would change its meaning.
func renderScalar(value string, style yaml.Style) (string, bool) {
	if !utf8.ValidString(value) {
		return "", false
	}
	out, err := yaml.Marshal(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Style: style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle)})
	if err != nil {
		return "", false
	}
	s := strings.TrimSuffix(string(out), "\n")
	if s == "" || strings.ContainsAny(s, "\r\n") {
		return "", false
	}
	return s, true
}

func strNode(value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
}

func (f *yamlFile) addSplice(start, end int, text string) {
	f.splices = append(f.splices, splice{start: start, end: end, text: text, seq: len(f.splices)})
}

// setScalar sets the scalar n to value, keeping its quoting style.
func (f *yamlFile) setScalar(n *yaml.Node, value string) {
	if n.Kind == yaml.ScalarNode && n.Value == value && n.ShortTag() == "!!str" {
		return
	}
	f.changed = true
	style := n.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle)
	if f.inPlace {
		start, end, ok := f.scalarSpan(n)
		text, rok := renderScalar(value, style)
		if ok && rok {
			f.addSplice(start, end, text)
		} else {
			f.inPlace = false
		}
	}
	*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Style: style,
		HeadComment: n.HeadComment, LineComment: n.LineComment, FootComment: n.FootComment, Line: n.Line, Column: n.Column}
}

// deletePair removes the pair whose key is m.Content[i]; in place, it
// deletes the pair's line and the comment lines just above it that yaml.v3
// attached to the key.
func (f *yamlFile) deletePair(m *yaml.Node, i int) {
	k, v := m.Content[i], m.Content[i+1]
	m.Content = slices.Delete(m.Content, i, i+2)
	f.changed = true
	if !f.inPlace {
		return
	}
	ks, _, kok := f.scalarSpan(k)
	_, ve, vok := f.scalarSpan(v)
	ls, lok := f.lineStart(k.Line)
	if !kok || !vok || !lok || v.Line != k.Line || strings.TrimSpace(string(f.src[ls:ks])) != "" || !f.restOfLineIsComment(ve, v.Line) {
		f.inPlace = false
		return
	}
	start := ls
	if k.HeadComment != "" {
		want := 0
		for l := range strings.SplitSeq(k.HeadComment, "\n") {
			if strings.TrimSpace(l) != "" {
				want++
			}
		}
		got, line := 0, k.Line-1
		for ; line >= 1 && got < want; line-- {
			s, _ := f.lineStart(line)
			if t := strings.TrimSpace(string(f.src[s:f.lineEnd(line)])); !strings.HasPrefix(t, "#") {
				break
			}
			got++
		}
		if got == want {
			start, _ = f.lineStart(line + 1)
		}
	}
	f.addSplice(start, f.nextLine(k.Line), "")
}

// insertPair inserts keys[0]: {keys[1]: {… : value}} into mapping m after
// the pair whose key is m.Content[after] (after < 0: at the end), creating
// the intermediate maps. It returns the new value node.
func (f *yamlFile) insertPair(m *yaml.Node, after int, keys []string, value string) *yaml.Node {
	if after < 0 || after+1 >= len(m.Content) {
		after = len(m.Content) - 2
	}
	f.changed = true
	leaf := strNode(value)
	top := leaf
	for j := len(keys) - 1; j > 0; j-- {
		top = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{strNode(keys[j]), top}}
	}
	if f.inPlace {
		f.inPlace = f.spliceInsert(m, after, keys, value, top)
	}
	m.Content = slices.Insert(m.Content, after+2, strNode(keys[0]), top)
	return leaf
}

// spliceInsert writes the lines of an inserted pair; it reports false when
// the insertion point cannot be found in the source.
func (f *yamlFile) spliceInsert(m *yaml.Node, after int, keys []string, value string, top *yaml.Node) bool {
	if m.Style&yaml.FlowStyle != 0 || m.Anchor != "" {
		return false
	}
	var at, col int
	switch {
	case after >= 0 && after+1 < len(m.Content):
		off, ok := f.pairEnd(m.Content[after+1])
		if !ok {
			return false
		}
		at, col = off, m.Content[0].Column-1
		if col < 0 {
			return false // the first key is new too
		}
	case len(m.Content) == 0 && m.Line == 0:
		// A top-level map created for an empty file: append.
		at, col = len(f.src), 0
	default:
		return false
	}
	var b strings.Builder
	if at == len(f.src) && at > 0 && f.src[at-1] != '\n' {
		b.WriteString(f.eol)
	}
	for j, k := range keys {
		ks, ok := renderScalar(k, 0)
		if !ok {
			return false
		}
		b.WriteString(strings.Repeat(" ", col+j*f.indent) + ks + ":")
		if j == len(keys)-1 {
			vs, ok := renderScalar(value, 0)
			if !ok {
				return false
			}
			b.WriteString(" " + vs)
		}
		b.WriteString(f.eol)
	}
	f.addSplice(at, at, b.String())
	f.inserted[top] = at
	return true
}

// bytes returns the edited stream: the spliced source when the splices say
// exactly what the edited tree says, else the re-encoded tree.
func (f *yamlFile) bytes() ([]byte, error) {
	if !f.changed {
		return f.src, nil
	}
	if f.inPlace {
		if out, ok := f.applySplices(); ok && sameDocs(out, f.docs) {
			return out, nil
		}
	}
	return f.encode()
}

func (f *yamlFile) applySplices() ([]byte, bool) {
	sp := slices.Clone(f.splices)
	slices.SortStableFunc(sp, func(a, b splice) int {
		if a.start != b.start {
			return a.start - b.start
		}
		// At one offset, insertions go before a deletion that starts
		// there: a line inserted after a pair lands where a deleted
		// line of the next pair was.
		if ai, bi := a.start == a.end, b.start == b.end; ai != bi {
			if ai {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
	var out bytes.Buffer
	pos := 0
	for _, s := range sp {
		if s.start < pos || s.end < s.start || s.end > len(f.src) {
			return nil, false
		}
		out.Write(f.src[pos:s.start])
		out.WriteString(s.text)
		pos = s.end
	}
	out.Write(f.src[pos:])
	return out.Bytes(), true
}

// sameDocs reports whether data decodes to the same documents as docs.
func sameDocs(data []byte, docs []*yaml.Node) bool {
	g, err := parseYAML(data)
	if err != nil {
		return false
	}
	a, b := nonEmpty(g.docs), nonEmpty(docs)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		va, err := decodeAny(a[i])
		if err != nil {
			return false
		}
		vb, err := decodeAny(b[i])
		if err != nil || !reflect.DeepEqual(va, vb) {
			return false
		}
	}
	return true
}

func nonEmpty(docs []*yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	for _, d := range docs {
		if content(d) != nil {
			out = append(out, d)
		}
	}
	return out
}

// encode re-encodes the edited tree with the file's indentation, keeping an
// explicit document start marker and the document separators.
func (f *yamlFile) encode() (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("re-encoding YAML: %v", r)
		}
	}()
	var buf bytes.Buffer
	if startsWithMarker(f.src) {
		buf.WriteString("---\n")
	}
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(f.indent)
	for _, d := range nonEmpty(f.docs) {
		if err := enc.Encode(d); err != nil {
			return nil, fmt.Errorf("re-encoding YAML: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("re-encoding YAML: %w", err)
	}
	out = buf.Bytes()
	if f.eol == "\r\n" {
		out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
	}
	if !sameDocs(out, f.docs) {
		return nil, errors.New("re-encoding YAML changed its meaning; edit the file by hand")
	}
	return out, nil
}

// startsWithMarker reports whether the first line that is not blank or a
// comment is a "---" document start marker.
func startsWithMarker(src []byte) bool {
	for line := range strings.SplitSeq(string(src), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "%") {
			continue
		}
		return t == "---" || strings.HasPrefix(t, "--- ") || strings.HasPrefix(t, "---\t")
	}
	return false
}
