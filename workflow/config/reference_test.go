package config

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// TestReferenceDocumentsEveryLoaderKey: every key of every mapping the
// loader reads is in the reference, and so in docs/CONFIG.md, and nothing
// else is.
func TestReferenceDocumentsEveryLoaderKey(t *testing.T) {
	keys, err := Reference()
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join(repoRoot, ReferenceFile))
	require.NoError(t, err)
	n := 0
	for _, l := range levels() {
		for _, name := range l.keys {
			p := joinKey(l.path, name)
			require.Containsf(t, string(doc), "| `"+p+"` |", "%s reads %s; docs/CONFIG.md does not document it (go generate ./workflow/config)", ReferenceFile, p)
			n++
		}
	}
	require.Len(t, keys, n, "the reference lists each loader key once")
	require.Greater(t, n, 70)
}

// TestReferenceFailsOnUndocumentedKey: a key the loader reads but the
// reference lacks is an error, naming it.
func TestReferenceFailsOnUndocumentedKey(t *testing.T) {
	saved := keyDocs
	t.Cleanup(func() { keyDocs = saved })
	for i, k := range saved {
		if k.Path == "environments[].terraform.binary" {
			keyDocs = append(append([]Key{}, saved[:i]...), saved[i+1:]...)
		}
	}
	require.Len(t, keyDocs, len(saved)-1)
	_, err := Reference()
	require.ErrorContains(t, err, "the loader reads environments[].terraform.binary, which the reference")

	keyDocs = append(append([]Key{}, saved...), Key{Path: "environments[].terraform.bianry", Type: TypeString})
	_, err = Reference()
	require.ErrorContains(t, err, "documents environments[].terraform.bianry, which the loader does not read")
}

// TestGeneratedReferenceUpToDate: docs/CONFIG.md and
// docs/relcap.schema.json are what the generator makes of today's keys.
func TestGeneratedReferenceUpToDate(t *testing.T) {
	keys, err := Reference()
	require.NoError(t, err)
	schema, err := RenderSchema(keys)
	require.NoError(t, err)
	for file, want := range map[string][]byte{ReferenceFile: RenderReference(keys), SchemaFile: schema} {
		got, err := os.ReadFile(filepath.Join(repoRoot, file))
		require.NoError(t, err)
		require.Truef(t, bytes.Equal(want, got), "%s is stale: run go generate ./workflow/config", file)
	}
}

// compileSchema compiles the committed schema with a maintained validator.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join(repoRoot, SchemaFile))
	require.NoError(t, err)
	return sch
}

// yamlInstance turns YAML into the JSON value a YAML language server
// checks against the schema.
func yamlInstance(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal(data, &v))
	j, err := json.Marshal(v)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	require.NoError(t, err)
	return inst
}

// TestSchemaAcceptsValidConfigurations: the schema accepts DESIGN.md's
// configuration and the example repository's, which validate accepts.
func TestSchemaAcceptsValidConfigurations(t *testing.T) {
	sch := compileSchema(t)
	proj, err := Load(filepath.Join(repoRoot, "examples/first-release/relcap.yaml"))
	require.NoError(t, err, "relcap validate accepts the example repository")
	require.Len(t, proj.Environments, 2)
	example, err := os.ReadFile(filepath.Join(repoRoot, "examples/first-release/relcap.yaml"))
	require.NoError(t, err)
	for name, data := range map[string][]byte{"design": []byte(designConfig), "example": example} {
		_, err := Parse("relcap.yaml", data)
		require.NoError(t, err, name)
		require.NoError(t, sch.Validate(yamlInstance(t, data)), name)
	}
}

// TestSchemaRejectsWhatValidateRejects: an unknown key, a value of the
// wrong type, a missing required key and a bad enum value are refused by
// the loader and by the schema alike.
func TestSchemaRejectsWhatValidateRejects(t *testing.T) {
	sch := compileSchema(t)
	cases := map[string][2]string{
		"unknown top key":        {"app: web\n", "app: web\nrelease_name: web\n"},
		"unknown nested key":     {"workspace: default", "workspace: default, bianry: terraform"},
		"wrong type boolean":     {"require_signature: false", "require_signature: maybe"},
		"wrong type integer":     {"promotion: 0,", "promotion: two,"},
		"negative integer":       {"promotion: 0,", "promotion: -1,"},
		"bad duration":           {"effort: {idle_threshold: 2m", "effort: {idle_threshold: soon"},
		"missing required top":   {"app: web\n", "\n"},
		"missing required env":   {"image: web, format: kustomize}", "format: kustomize}"},
		"bad format enum":        {"format: kustomize}", "format: kustomise}"},
		"wrong version":          {"version: 1\n", "version: 2\n"},
		"helm without values":    {"format: kustomize}", "format: helm-values}"},
		"token in clear":         {"image: web, format: kustomize}", "image: web, format: kustomize, review: {via: pull_request, forge: gitea, url: \"https://git.example.com/a/b\", token: x}}"},
		"string for a list":      {"plan: [alice, bob]", "plan: alice"},
		"empty required string":  {"app: web\n", "app: \"\"\n"},
		"pull request needs url": {"image: web, format: kustomize}", "image: web, format: kustomize, review: {via: pull_request, forge: gitea}}"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			data := edit(t, designConfig, c[0], c[1])
			_, err := Parse("relcap.yaml", []byte(data))
			require.Error(t, err, "validate accepts it")
			require.Error(t, sch.Validate(yamlInstance(t, []byte(data))), "the schema accepts what validate rejects")
		})
	}
}

// TestReferenceExamplesMatchSchema: every example value has its key's
// schema, so the documentation never shows a value of the wrong type.
func TestReferenceExamplesMatchSchema(t *testing.T) {
	keys, err := Reference()
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	for _, k := range keys {
		if k.Example == "" {
			continue
		}
		ptr := ""
		for _, part := range strings.Split(k.Path, ".") {
			name, item := strings.CutSuffix(part, "[]")
			ptr += "/properties/" + name
			if item {
				ptr += "/items"
			}
		}
		sch, err := c.Compile(filepath.Join(repoRoot, SchemaFile) + "#" + ptr)
		require.NoError(t, err, k.Path)
		require.NoError(t, sch.Validate(yamlInstance(t, []byte(k.Example))), "%s: example %s", k.Path, k.Example)
	}
}
