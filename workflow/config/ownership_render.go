package config

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow/ownership"
)

// RenderOwnership writes m as ownership.yaml: head as the file's opening
// comment, notes[i] as the comment above rule i. What it writes reads
// back, through ParseOwnership, as m (rules, fields, hand-offs), or it
// returns the problem: a draft relcap validate would refuse is never
// written.
func RenderOwnership(m ownership.Map, head []string, notes map[int][]string) ([]byte, error) {
	rules := yamlSeq()
	for i, r := range m.Rules {
		item := yamlMapping("match", matchNode(r.Match), "owner", yamlStr(string(r.Owner)))
		if len(r.Fields) > 0 {
			fields := yamlMapping()
			for _, f := range slices.Sorted(maps.Keys(r.Fields)) {
				fields.Content = append(fields.Content, yamlStr(f), yamlStr(string(r.Fields[f])))
			}
			item.Content = append(item.Content, yamlStr("fields"), fields)
		}
		item.HeadComment = yamlComment(notes[i])
		rules.Content = append(rules.Content, item)
	}
	doc := yamlMapping("version", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "1"}, "rules", rules)
	if len(m.Handoffs) > 0 {
		hs := yamlSeq()
		for _, h := range m.Handoffs {
			item := yamlMapping("match", matchNode(h.Match), "from", yamlStr(string(h.From)), "to", yamlStr(string(h.To)))
			if h.Note != "" {
				item.Content = append(item.Content, yamlStr("note"), yamlStr(h.Note))
			}
			hs.Content = append(hs.Content, item)
		}
		doc.Content = append(doc.Content, yamlStr("handoffs"), hs)
	}
	doc.HeadComment = yamlComment(head)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{doc}}); err != nil {
		return nil, fmt.Errorf("render %s: %w", m.File, err)
	}
	back, err := ParseOwnership(m.File, b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("the rendered %s does not read back (a bug in relcap): %w", m.File, err)
	}
	if !sameMap(back, m) {
		return nil, fmt.Errorf("the rendered %s reads back as another map (a bug in relcap)", m.File)
	}
	return b.Bytes(), nil
}

// sameMap compares two maps' rules and hand-offs, not where they were
// read from.
func sameMap(a, b ownership.Map) bool {
	if len(a.Rules) != len(b.Rules) || len(a.Handoffs) != len(b.Handoffs) {
		return false
	}
	for i, r := range a.Rules {
		o := b.Rules[i]
		if r.Match != o.Match || r.Owner != o.Owner || !maps.Equal(r.Fields, o.Fields) {
			return false
		}
	}
	for i, h := range a.Handoffs {
		o := b.Handoffs[i]
		if h.Match != o.Match || h.From != o.From || h.To != o.To || h.Note != o.Note {
			return false
		}
	}
	return true
}

// matchNode writes a match in flow style, as relcap init writes it.
func matchNode(m ownership.Match) *yaml.Node {
	n := yamlMapping()
	n.Style = yaml.FlowStyle
	for _, kv := range [][2]string{{"terraform_type", m.TerraformType}, {"terraform_address", m.TerraformAddress},
		{"group", m.Group}, {"kind", m.Kind}, {"namespace", m.Namespace}, {"name", m.Name}, {"app", m.App}} {
		if kv[1] != "" {
			n.Content = append(n.Content, yamlStr(kv[0]), yamlStr(kv[1]))
		}
	}
	return n
}

func yamlSeq() *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode} }

// yamlMapping is a mapping node of alternating keys and values (a string key
// or a node).
func yamlMapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, x := range kv {
		switch x := x.(type) {
		case string:
			n.Content = append(n.Content, yamlStr(x))
		case *yaml.Node:
			n.Content = append(n.Content, x)
		}
	}
	return n
}

// yamlStr is a string scalar, quoted by the encoder where it must be.
func yamlStr(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// yamlComment joins lines into a comment, one "# " per line. A line's
// own line breaks (any YAML reads as one: CR, LF, NEL, LS, PS) become
// lines of their own and other control characters U+FFFD, so no text
// from a cluster (a manager's name) can end the comment and write YAML.
func yamlComment(lines []string) string {
	var out []string
	for _, l := range lines {
		parts := strings.FieldsFunc(l, func(r rune) bool {
			return r == '\n' || r == '\r' || r == '\u0085' || r == '\u2028' || r == '\u2029'
		})
		if len(parts) == 0 {
			parts = []string{""}
		}
		for _, part := range parts {
			part = strings.Map(func(r rune) rune {
				if unicode.IsControl(r) && r != '\t' {
					return unicode.ReplacementChar
				}
				return r
			}, part)
			out = append(out, strings.TrimRight("# "+part, " \t"))
		}
	}
	return strings.Join(out, "\n")
}
