package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

//go:generate go run ./internal/genreference ../../docs

// SchemaFile and ReferenceFile are where the generated schema and
// reference live in the repository, relative to its root.
const (
	SchemaFile    = "docs/relcap.schema.json"
	ReferenceFile = "docs/CONFIG.md"
)

// durationPattern is what time.ParseDuration reads, without a sign (the
// loader wants a positive duration).
const durationPattern = `^([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))*$`

// RenderReference renders docs/CONFIG.md from keys (Reference).
func RenderReference(keys []Key) []byte {
	var b bytes.Buffer
	b.WriteString(`# relcap.yaml reference

## Generated — do not edit

This file is generated from the configuration loader's own key lists
(` + "`workflow/config`" + `) by ` + "`go generate ./workflow/config`" + `; a test fails when it
and the loader disagree. So is the JSON Schema editors use,
[relcap.schema.json](relcap.schema.json): ` + "`relcap init`" + ` writes the
` + "`# yaml-language-server: $schema=...`" + ` line that makes editors with the YAML
language server pick it up. ` + "`relcap validate`" + ` checks more than the schema can
(that files exist, that names are unique, that a production environment
signs its approvals), and says where, as file:line:col.

Keys are named from the top of the file; ` + "`environments[]`" + ` is each item of the
` + "`environments`" + ` list. Paths are relative to relcap.yaml unless said otherwise.
A complete example is [examples/first-release](../examples/first-release/relcap.yaml).

| Key | Type | Default | Example | What it is for |
|---|---|---|---|---|
`)
	for _, k := range keys {
		def := k.Default
		switch {
		case k.Required:
			def = "required"
		case def == "":
			def = "—"
		default:
			def = "`" + def + "`"
		}
		ex := "—"
		if k.Example != "" {
			ex = "`" + k.Example + "`"
		}
		typ := string(k.Type)
		if len(k.Enum) > 0 {
			typ = "one of " + strings.Join(k.Enum, ", ")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.Path, typ, cell(def), cell(ex), cell(k.Doc))
	}
	return b.Bytes()
}

// cell escapes what would end a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// RenderSchema renders docs/relcap.schema.json from keys (Reference): a
// JSON Schema (2020-12) of relcap.yaml.
func RenderSchema(keys []Key) ([]byte, error) {
	byParent := map[string][]Key{}
	for _, k := range keys {
		byParent[k.Parent()] = append(byParent[k.Parent()], k)
	}
	root := object(byParent, "")
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["title"] = "relcap.yaml"
	root["description"] = "relcap's release configuration; generated from the loader's key list (docs/CONFIG.md)."
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// object is the schema of the mapping at level: its keys, no others.
func object(byParent map[string][]Key, level string) map[string]any {
	props := map[string]any{}
	var required []string
	for _, k := range byParent[level] {
		props[k.Name()] = keySchema(byParent, k)
		if k.Required {
			required = append(required, k.Name())
		}
	}
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	for _, c := range conditions[level] {
		o["allOf"] = append(anySlice(o["allOf"]), c)
	}
	return o
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// conditions are the requirements one key's value puts on another, that
// the loader checks and a schema can say.
var conditions = map[string][]any{
	"environments[].envrepo": {map[string]any{
		"if":   map[string]any{"properties": map[string]any{"format": map[string]any{"const": "helm-values"}}, "required": []string{"format"}},
		"then": map[string]any{"required": []string{"values_path"}},
	}},
	"environments[].envrepo.review": {map[string]any{
		"if":   map[string]any{"properties": map[string]any{"via": map[string]any{"const": "pull_request"}}, "required": []string{"via"}},
		"then": map[string]any{"required": []string{"forge", "url"}},
	}},
}

// keySchema is the schema of one key's value.
func keySchema(byParent map[string][]Key, k Key) any {
	var s map[string]any
	nonEmpty := map[string]any{"type": "string", "minLength": 1}
	switch k.Type {
	case TypeForbidden:
		return false
	case TypeVersionOne:
		s = map[string]any{"const": 1}
	case TypeString, TypePath:
		s = map[string]any{"type": "string"}
		if k.Required {
			s["minLength"] = 1
		}
		if len(k.Enum) > 0 {
			s["enum"] = k.Enum
		}
	case TypeInteger:
		s = map[string]any{"type": "integer", "minimum": 0}
	case TypeNumber:
		s = map[string]any{"type": "number", "minimum": 0}
	case TypeBoolean:
		s = map[string]any{"type": "boolean"}
	case TypeDuration:
		s = map[string]any{"type": "string", "pattern": durationPattern}
	case TypeStrings:
		s = map[string]any{"type": "array", "items": nonEmpty}
	case TypeStringMap:
		s = map[string]any{"type": "object", "additionalProperties": nonEmpty}
	case TypeMapping:
		s = object(byParent, k.Path)
	case TypeList:
		s = map[string]any{"type": "array", "minItems": 1, "items": object(byParent, k.Path+"[]")}
	default: // Reference refuses keys of other types
		return true
	}
	desc := k.Doc
	if k.Default != "" {
		desc += " Default: " + k.Default + "."
	}
	s["description"] = desc
	return s
}
