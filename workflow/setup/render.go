package setup

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/config"
)

// SchemaURL is where editors find relcap.yaml's JSON Schema when relcap
// init is not told a path: the schema in relcap's repository.
const SchemaURL = "https://raw.githubusercontent.com/relcap/relcap/main/" + config.SchemaFile

// item is one key of the file to write: a scalar value, or children.
type item struct {
	key      string
	value    string // YAML scalar, already quoted where needed
	children []item
	list     [][]item // a list of mappings
}

// RenderConfig renders relcap.yaml for p, each key preceded by what it is
// for (from the loader's reference), starting with the line that points
// editors at the schema.
func RenderConfig(p Plan, schema string) (string, error) {
	keys, err := config.Reference()
	if err != nil {
		return "", err
	}
	docs := map[string]config.Key{}
	for _, k := range keys {
		docs[k.Path] = k
	}
	top := []item{
		{key: "version", value: "1"},
		{key: "app", value: scalar(p.App)},
		{key: "ownership", value: OwnershipFile},
	}
	if p.People != "" {
		top = append(top, item{key: "people", value: scalar(p.People)})
	}
	envs := item{key: "environments"}
	for _, e := range p.Envs {
		envs.list = append(envs.list, envItems(p, e))
	}
	top = append(top, envs)

	var b strings.Builder
	fmt.Fprintf(&b, "# yaml-language-server: $schema=%s\n", schema)
	b.WriteString("# relcap.yaml, written by relcap init. Each key says what it is for; every key\n" +
		"# relcap reads, with its type and default, is in relcap's docs/CONFIG.md.\n" +
		"# Check this file with: relcap validate\n\n")
	write(&b, docs, top, "", "")
	return b.String(), nil
}

// envItems are one environment's keys.
func envItems(p Plan, e EnvPlan) []item {
	env := []item{{key: "name", value: scalar(e.Name)}}
	if e.Production {
		env = append(env, item{key: "production", value: "true"})
	}
	env = append(env,
		item{key: "terraform", children: []item{{key: "dir", value: scalar(e.TerraformDir)}}},
		item{key: "registry", children: []item{{key: "repository", value: scalar(e.Repository)}}})
	repo := []item{{key: "path", value: scalar(p.EnvRepo)}}
	if p.Branch != "" {
		repo = append(repo, item{key: "branch", value: scalar(p.Branch)})
	}
	repo = append(repo, item{key: "file", value: scalar(e.File)}, item{key: "image", value: scalar(e.Image)}, item{key: "format", value: scalar(e.Format)})
	if e.Format == workflow.FormatHelmValues {
		repo = append(repo, item{key: "values_path", value: scalar(e.ValuesPath)})
	}
	env = append(env, item{key: "envrepo", children: repo})
	argo := []item{}
	if e.ArgoServer != "" {
		argo = append(argo, item{key: "server", value: scalar(e.ArgoServer)})
	}
	argo = append(argo, item{key: "app", value: scalar(e.ArgoApp)})
	if e.ArgoPlaintext {
		argo = append(argo, item{key: "plaintext", value: "true"})
	}
	env = append(env, item{key: "argocd", children: argo})
	// Production waits for a plan and a promotion approval from someone
	// other than the author; other environments for none.
	approvals := []item{{key: "plan", value: "0"}, {key: "promotion", value: "0"}}
	if e.Production {
		approvals = []item{{key: "plan", value: "1"}, {key: "promotion", value: "1"}, {key: "distinct_from_author", value: "true"}}
	}
	return append(env, item{key: "approvals", children: approvals})
}

// write renders items at indent, each after its documentation comment;
// path is the reference path of their mapping.
func write(b *strings.Builder, docs map[string]config.Key, items []item, path, indent string) {
	for _, it := range items {
		p := it.key
		if path != "" {
			p = path + "." + it.key
		}
		comment(b, docs[p], indent)
		switch {
		case it.list != nil:
			fmt.Fprintf(b, "%s%s:\n", indent, it.key)
			for _, entry := range it.list {
				// The first key (a scalar: name) opens the item.
				comment(b, docs[p+"[]."+entry[0].key], indent+"  ")
				fmt.Fprintf(b, "%s  - %s: %s\n", indent, entry[0].key, entry[0].value)
				write(b, docs, entry[1:], p+"[]", indent+"    ")
			}
		case it.children != nil:
			fmt.Fprintf(b, "%s%s:\n", indent, it.key)
			write(b, docs, it.children, p, indent+"  ")
		default:
			fmt.Fprintf(b, "%s%s: %s\n", indent, it.key, it.value)
		}
	}
}

// comment writes k's documentation as comment lines of at most 80
// columns, with its default when it has one.
func comment(b *strings.Builder, k config.Key, indent string) {
	text := k.Doc
	if k.Default != "" && !k.Required {
		text += " Default: " + k.Default + "."
	}
	line := indent + "#"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 80 && len(line) > len(indent)+1 {
			b.WriteString(line + "\n")
			line = indent + "#"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}

// scalar renders s as a YAML scalar that reads back as the string s.
func scalar(s string) string {
	out, err := yaml.Marshal(s)
	v := strings.TrimSuffix(string(out), "\n")
	if err != nil || strings.Contains(v, "\n") {
		return strconv.Quote(s)
	}
	return v
}

// RenderOwnership renders a first ownership.yaml: Terraform owns what its
// roots declare, Argo CD what each environment's application deploys.
// The ownership check tells where the truth differs.
func RenderOwnership(p Plan) string {
	var b strings.Builder
	b.WriteString(`# ownership.yaml, written by relcap init: who owns each object and field the
# release's tools manage. The first matching rule wins; every managed object
# must match one. relcap's ownership check compares this map with what
# Terraform and Argo CD really manage and says where they differ, so start
# here and refine it (docs/GUIDE.md of relcap describes every key).
version: 1
rules:
  # Every resource the Terraform roots declare.
  - match: {terraform_type: "*"}
    owner: terraform
`)
	seen := map[string]bool{}
	for _, e := range p.Envs {
		if seen[e.ArgoApp] {
			continue
		}
		seen[e.ArgoApp] = true
		fmt.Fprintf(&b, "  # What Argo CD deploys for %s from the environment repository.\n  - match: {app: %s}\n    owner: argocd\n", e.Name, scalar(e.ArgoApp))
	}
	return b.String()
}
