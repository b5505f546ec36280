package terraform

import (
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"

	"github.com/relcap/relcap/workflow/custody"
)

// Reading a module's configuration as Terraform selects and merges it
// (internal/configs in Terraform 1.11), for the two things custody needs:
// the backend block and the terraform_remote_state data sources. Nothing
// is evaluated beyond literals; backend blocks allow nothing more.

// sourceFile is one configuration file of a module, read whole.
type sourceFile struct {
	path     string // as opened; diagnostics name it
	src      []byte
	override bool // override.tf, *_override.tf and their .tf.json forms
}

func (f sourceFile) isJSON() bool { return strings.HasSuffix(f.path, ".tf.json") }

// moduleFiles reads the configuration files of the module in dir as
// Terraform selects them: *.tf and *.tf.json of dir itself, without
// hidden files and editor backups, primary files in name order and then
// the override files in name order (they are merged last).
func moduleFiles(dir string) ([]sourceFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the configuration in %s: %w", dir, err)
	}
	var primary, override []sourceFile
	for _, e := range entries {
		name := e.Name()
		base, isConfig := strings.CutSuffix(name, ".tf")
		if !isConfig {
			base, isConfig = strings.CutSuffix(name, ".tf.json")
		}
		ignored := strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") ||
			strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#")
		if !isConfig || ignored || e.IsDir() {
			continue
		}
		path := filepath.Join(dir, name)
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		f := sourceFile{path: path, src: src, override: base == "override" || strings.HasSuffix(base, "_override")}
		if f.override {
			override = append(override, f)
		} else {
			primary = append(primary, f)
		}
	}
	return append(primary, override...), nil
}

// parsed is a configuration file parsed by its syntax.
type parsed struct {
	sourceFile
	body hcl.Body
}

func parseFiles(files []sourceFile) ([]parsed, error) {
	out := make([]parsed, 0, len(files))
	for _, f := range files {
		var file *hcl.File
		var diags hcl.Diagnostics
		if f.isJSON() {
			file, diags = hcljson.Parse(f.src, f.path)
		} else {
			file, diags = hclsyntax.ParseConfig(f.src, f.path, hcl.InitialPos)
		}
		if err := diagError(diags); err != nil {
			return nil, err
		}
		out = append(out, parsed{sourceFile: f, body: file.Body})
	}
	return out, nil
}

// diagError is the first error of diags as file:line:col and its summary.
// The detail is left out: it may quote the source, and a source line may
// hold a credential.
func diagError(diags hcl.Diagnostics) error {
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		if d.Subject == nil {
			return fmt.Errorf("configuration: %s", d.Summary)
		}
		return fmt.Errorf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary)
	}
	return nil
}

var terraformBlockSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "terraform"}}}

var backendBlockSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "backend", LabelNames: []string{"type"}},
	{Type: "cloud"},
}}

// declared is a backend (or cloud) block and where it is.
type declared struct {
	kind string // the backend type, "cloud" for a cloud block
	body hcl.Body
	at   hcl.Range
}

// declaredBackend finds the backend a module's files configure, merged as
// Terraform merges them: one backend or cloud block among the primary
// files, and an override file's block replacing it whole. found is false
// when no file has one.
func declaredBackend(files []parsed) (b declared, found bool, err error) {
	var backend, cloud *declared
	for _, f := range files {
		content, _, diags := f.body.PartialContent(terraformBlockSchema)
		if err := diagError(diags); err != nil {
			return declared{}, false, err
		}
		var backends, clouds []declared
		for _, tb := range content.Blocks {
			inner, _, diags := tb.Body.PartialContent(backendBlockSchema)
			if err := diagError(diags); err != nil {
				return declared{}, false, err
			}
			for _, blk := range inner.Blocks {
				d := declared{kind: "cloud", body: blk.Body, at: blk.DefRange}
				if blk.Type == "backend" {
					d.kind = blk.Labels[0]
					backends = append(backends, d)
				} else {
					clouds = append(clouds, d)
				}
			}
		}
		if f.override {
			// An override file may hold one of each kind; its block
			// replaces the module's whole.
			if len(backends) > 1 || len(clouds) > 1 {
				return declared{}, false, fmt.Errorf("%s: an override file may have only one backend or cloud block", f.path)
			}
			if len(backends) == 1 {
				backend, cloud = &backends[0], nil
			}
			if len(clouds) == 1 {
				backend, cloud = nil, &clouds[0]
			}
			continue
		}
		for i := range backends {
			if backend != nil {
				return declared{}, false, fmt.Errorf("%s: duplicate backend configuration: a backend is configured at %s already", backends[i].at, backend.at)
			}
			backend = &backends[i]
		}
		for i := range clouds {
			if cloud != nil {
				return declared{}, false, fmt.Errorf("%s: duplicate cloud configuration: a cloud block is at %s already", clouds[i].at, cloud.at)
			}
			cloud = &clouds[i]
		}
	}
	switch {
	case backend != nil && cloud != nil:
		return declared{}, false, fmt.Errorf("%s: both a backend block and a cloud block (%s) are configured", backend.at, cloud.at)
	case backend != nil:
		return *backend, true, nil
	case cloud != nil:
		return *cloud, true, nil
	}
	return declared{}, false, nil
}

// configuredBackend is the backend files configure: its type ("cloud"
// for a cloud block) and its literal settings, not yet redacted.
func configuredBackend(files []sourceFile) (kind string, settings map[string]string, found bool, err error) {
	parsedFiles, err := parseFiles(files)
	if err != nil {
		return "", nil, false, err
	}
	d, found, err := declaredBackend(parsedFiles)
	if err != nil || !found {
		return "", nil, false, err
	}
	return d.kind, blockSettings(d.body), true, nil
}

// blockSettings are a backend block's settings, each evaluated as
// Terraform evaluates backend configuration: with no variables and no
// functions (a nil EvalContext), so a JSON string is taken literally.
func blockSettings(body hcl.Body) map[string]string {
	out := map[string]string{}
	if native, ok := body.(*hclsyntax.Body); ok {
		addNativeBody("", native, out)
		return out
	}
	// In JSON a nested block is an object property, which flattens the same.
	attrs, _ := body.JustAttributes()
	for name, attr := range attrs {
		addExpr(name, attr.Expr, nil, out)
	}
	return out
}

func addNativeBody(prefix string, body *hclsyntax.Body, out map[string]string) {
	for name, attr := range body.Attributes {
		addExpr(joinKey(prefix, name), attr.Expr, nil, out)
	}
	for _, blk := range body.Blocks {
		p := joinKey(prefix, blk.Type)
		for _, l := range blk.Labels {
			p = joinKey(p, l)
		}
		addNativeBody(p, blk.Body, out)
	}
}

// addExpr flattens expr's literal value into out under key. A part that
// is not a literal becomes custody.Unknown: an object constructor item by
// item, anything else whole ("*" when key is empty).
func addExpr(key string, expr hcl.Expression, ctx *hcl.EvalContext, out map[string]string) {
	v, diags := expr.Value(ctx)
	if !diags.HasErrors() && v.IsWhollyKnown() {
		flatten(key, v, out)
		return
	}
	pairs, diags := hcl.ExprMap(expr)
	if diags.HasErrors() {
		out[orAll(key)] = custody.Unknown
		return
	}
	for _, p := range pairs {
		k, diags := p.Key.Value(ctx)
		if diags.HasErrors() || !k.IsKnown() || k.IsNull() || k.Type() != cty.String {
			out[joinKey(key, "*")] = custody.Unknown
			continue
		}
		addExpr(joinKey(key, k.AsString()), p.Value, ctx, out)
	}
}

// flatten writes v into out: objects and maps as dotted keys, lists of
// scalars joined with commas, a list of one object as that object (a
// nested block in JSON or in init's record), scalars as text. Nulls are
// left out.
func flatten(key string, v cty.Value, out map[string]string) {
	v, _ = v.Unmark()
	if v.IsNull() {
		return
	}
	if !v.IsWhollyKnown() {
		out[orAll(key)] = custody.Unknown
		return
	}
	ty := v.Type()
	switch {
	case ty.IsObjectType() || ty.IsMapType():
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			flatten(joinKey(key, k.AsString()), e, out)
		}
		return
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		elems := v.AsValueSlice()
		var texts []string
		for _, e := range elems {
			s, ok := scalarText(e)
			if !ok {
				texts = nil
				break
			}
			if !e.IsNull() {
				texts = append(texts, s)
			}
		}
		switch {
		case texts != nil || len(elems) == 0 || allNull(elems):
			out[orAll(key)] = strings.Join(texts, ",")
		case len(elems) == 1:
			flatten(key, elems[0], out)
		default:
			for i, e := range elems {
				flatten(joinKey(key, strconv.Itoa(i)), e, out)
			}
		}
		return
	}
	if key == "" {
		out["*"] = custody.Unknown // a configuration that is not an object
		return
	}
	if s, ok := scalarText(v); ok {
		out[key] = s
		return
	}
	out[key] = custody.Unknown
}

// scalarText is a string, number or bool as text (numbers in their
// shortest decimal form); ok is false for anything else.
func scalarText(v cty.Value) (string, bool) {
	v, _ = v.Unmark()
	if v.IsNull() {
		return "", v.Type().IsPrimitiveType() || v.Type() == cty.DynamicPseudoType
	}
	switch v.Type() {
	case cty.String:
		return v.AsString(), true
	case cty.Bool:
		return strconv.FormatBool(v.True()), true
	case cty.Number:
		return numberText(v.AsBigFloat()), true
	}
	return "", false
}

// numberText is f in its shortest decimal form. Beyond 2^±128 (no
// setting is) it is float64's shortest form, or else big.Float's exact
// binary form: converting an exponent of millions of bits to decimal
// takes big.Float.Text seconds, and 1e10000000 is a valid literal.
func numberText(f *big.Float) string {
	if exp := f.MantExp(nil); exp <= 128 && exp >= -128 {
		return f.Text('f', -1)
	}
	if v, _ := f.Float64(); v != 0 && !math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return f.Text('p', 0)
}

func allNull(vs []cty.Value) bool {
	for _, v := range vs {
		if !v.IsNull() {
			return false
		}
	}
	return true
}

func joinKey(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func orAll(key string) string {
	if key == "" {
		return "*"
	}
	return key
}

var moduleSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "data", LabelNames: []string{"type", "name"}},
	{Type: "module", LabelNames: []string{"name"}},
}}

var remoteStateSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "backend"}, {Name: "config"}, {Name: "workspace"},
}}

var moduleCallSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "source"}}}

// noVariables evaluates a data source's arguments: Terraform evaluates
// them with the module's variables and functions, so a reference or call
// is not an error here but an unknown. Unlike a nil context, it parses a
// JSON string as the template Terraform reads there.
var noVariables = &hcl.EvalContext{}

// moduleRemoteStates reads one module's terraform_remote_state data
// sources, with the outputs its expressions use from each, and the
// directories of the local modules it calls. rel names a file for
// RemoteState.File.
func moduleRemoteStates(dir string, files []parsed, rel func(string) string) (states []custody.RemoteState, calls []string, err error) {
	index := map[string]int{}
	uses := map[string]map[string]bool{}
	for _, f := range files {
		content, _, diags := f.body.PartialContent(moduleSchema)
		if err := diagError(diags); err != nil {
			return nil, nil, err
		}
		for _, blk := range content.Blocks {
			switch {
			case blk.Type == "module":
				if d, ok := localModuleDir(dir, blk); ok {
					calls = append(calls, d)
				}
			case blk.Labels[0] == "terraform_remote_state":
				name := blk.Labels[1]
				i, seen := index[name]
				if !seen || !f.override {
					index[name] = len(states)
					i = len(states)
					states = append(states, custody.RemoteState{Name: name, File: rel(f.path), Line: blk.DefRange.Start.Line, Settings: map[string]string{}})
				}
				readRemoteState(&states[i], blk.Body)
			}
		}
		walkTraversals(f, func(tr hcl.Traversal) { noteOutputUse(tr, uses) })
	}
	for i := range states {
		for out := range uses[states[i].Name] {
			states[i].Outputs = append(states[i].Outputs, out)
		}
		slices.Sort(states[i].Outputs)
	}
	return states, calls, nil
}

// readRemoteState sets the arguments body gives; an override file's block
// replaces only those it sets, as Terraform merges overrides.
func readRemoteState(rs *custody.RemoteState, body hcl.Body) {
	content, _, _ := body.PartialContent(remoteStateSchema)
	if a, ok := content.Attributes["backend"]; ok {
		rs.Backend = literalString(a.Expr)
	}
	if a, ok := content.Attributes["workspace"]; ok {
		rs.Workspace = literalString(a.Expr)
	}
	if a, ok := content.Attributes["config"]; ok {
		rs.Settings = map[string]string{}
		addExpr("", a.Expr, noVariables, rs.Settings)
		for k, v := range rs.Settings {
			rs.Settings[k] = redactSetting(k, v)
		}
	}
}

// literalString is expr's value when it is a literal string, else
// custody.Unknown.
func literalString(expr hcl.Expression) string {
	v, diags := expr.Value(noVariables)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return custody.Unknown
	}
	return v.AsString()
}

// localModuleDir is the directory of a module call whose source is a
// local path: Terraform requires a literal there, starting ./ or ../.
func localModuleDir(dir string, blk *hcl.Block) (string, bool) {
	content, _, _ := blk.Body.PartialContent(moduleCallSchema)
	a, ok := content.Attributes["source"]
	if !ok {
		return "", false
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return "", false
	}
	src := v.AsString()
	for _, prefix := range []string{"./", "../", ".\\", "..\\"} {
		if strings.HasPrefix(src, prefix) {
			return filepath.Join(dir, filepath.FromSlash(src)), true
		}
	}
	return "", false
}

// walkTraversals calls fn with every variable reference in f: every
// attribute of every block at any depth (locals, resources, module
// arguments, outputs, providers, dynamic blocks), inside templates, for
// expressions and function calls. In JSON, strings are templates, so the
// whole document is read as one expression whose strings are parsed
// as Terraform parses them. depends_on is left out: it orders, it does
// not read.
func walkTraversals(f parsed, fn func(hcl.Traversal)) {
	if f.isJSON() {
		expr, diags := hcljson.ParseExpression(f.src, f.path)
		if diags.HasErrors() {
			return
		}
		for _, tr := range expr.Variables() {
			fn(tr)
		}
		return
	}
	if body, ok := f.body.(*hclsyntax.Body); ok {
		walkNative(body, fn)
	}
}

func walkNative(body *hclsyntax.Body, fn func(hcl.Traversal)) {
	for name, attr := range body.Attributes {
		if name == "depends_on" {
			continue
		}
		for _, tr := range attr.Expr.Variables() {
			fn(tr)
		}
	}
	for _, blk := range body.Blocks {
		walkNative(blk.Body, fn)
	}
}

// noteOutputUse records in uses which outputs of which remote state tr
// reads: data.terraform_remote_state.NAME.outputs.X or .outputs["X"]
// (after any instance key) reads X; the outputs object itself, an index
// that is not a literal string, or the data source whole reads all of
// them. Its other attributes (backend, config, workspace) read none.
func noteOutputUse(tr hcl.Traversal, uses map[string]map[string]bool) {
	if len(tr) < 3 || tr.RootName() != "data" || attrName(tr[1]) != "terraform_remote_state" {
		return
	}
	name := attrName(tr[2])
	if name == "" {
		return
	}
	rest := tr[3:]
	for len(rest) > 0 {
		if _, ok := rest[0].(hcl.TraverseIndex); !ok {
			break
		}
		rest = rest[1:] // count.index or each.key
	}
	use := func(out string) {
		if uses[name] == nil {
			uses[name] = map[string]bool{}
		}
		uses[name][out] = true
	}
	switch {
	case len(rest) == 0:
		use(custody.AllOutputs)
	case attrName(rest[0]) != "outputs":
		return
	case len(rest) == 1:
		use(custody.AllOutputs)
	default:
		if out := attrName(rest[1]); out != "" {
			use(out)
			return
		}
		if ix, ok := rest[1].(hcl.TraverseIndex); ok && ix.Key.IsKnown() && !ix.Key.IsNull() && ix.Key.Type() == cty.String {
			use(ix.Key.AsString())
			return
		}
		use(custody.AllOutputs)
	}
}

func attrName(t hcl.Traverser) string {
	if a, ok := t.(hcl.TraverseAttr); ok {
		return a.Name
	}
	return ""
}
