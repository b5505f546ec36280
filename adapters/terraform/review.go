package terraform

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// docMeta is what a review reads from a plan document besides the changes.
type docMeta struct {
	formatVersion    string
	terraformVersion string
	hasChanges       bool // resource_changes was present
	hasPlanned       bool // planned_values was present
	hasValues        bool // values was present: a state document
	// variables are the root module's variable values, and sensitiveVars
	// says which the configuration declares sensitive.
	variables     map[string]any
	sensitiveVars map[string]bool
	// What the plan says about itself: complete is false when Terraform
	// could not plan everything; errored when it hit errors.
	complete *bool
	errored  bool
	deferred []tfplan.DeferredChange
	checks   []tfplan.CheckResult
	actions  []tfplan.ActionInvocation
}

// planVariables is the plan's "variables": values in clear, sensitive or
// not.
type planVariables map[string]struct {
	Value any `json:"value"`
}

// planConfiguration is the part of "configuration" a review reads: which
// root variables are sensitive. The rest is skipped as it is scanned.
type planConfiguration struct {
	RootModule struct {
		Variables map[string]struct {
			Sensitive bool `json:"sensitive"`
		} `json:"variables"`
	} `json:"root_module"`
}

// skip decodes a JSON value without keeping it.
type skip struct{}

// UnmarshalJSON implements json.Unmarshaler.
func (*skip) UnmarshalJSON([]byte) error { return nil }

// ReadPlanJSON reads a `terraform show -json PLANFILE` document, such as
// one a CI job uploaded, without running Terraform: the same translation
// as Plan, returned as facts for tfplan.ReviewPlan. The facts have no
// PlanFile, PlanHash or Inputs (so the review has no Fingerprint), because
// a JSON document is not a plan Terraform can apply.
//
// A document that is not JSON, is truncated, or is not a plan of a supported
// format version returns an error wrapping fault.ErrUsage that names the
// input (r's Name(), as *os.File has, or "plan document") and the line,
// column and byte offset where reading failed. Sensitive values in the
// document never reach the facts or an error.
func ReadPlanJSON(r io.Reader, env string, secrets *secret.Set) (tfplan.Facts, error) {
	name := "plan document"
	if n, ok := r.(interface{ Name() string }); ok && n.Name() != "" {
		name = n.Name()
	}
	var buf bytes.Buffer
	// Reading a 50 MB upload by doubling leaves as much again in garbage
	// at the moment of peak memory; size the buffer when the reader can
	// say how much is coming.
	if n := sizeHint(r); n > 0 {
		buf.Grow(n + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return tfplan.Facts{}, fmt.Errorf("reading %s: %w", name, err)
	}
	return readDocument(buf.Bytes(), name, env, secrets)
}

// sizeHint is how many bytes r will yield, if it can tell (a file, a
// bytes.Reader, a strings.Reader), else 0.
func sizeHint(r io.Reader) int {
	switch r := r.(type) {
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := r.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() < 1<<40 {
			return int(fi.Size())
		}
	case interface{ Len() int }:
		return r.Len()
	}
	return 0
}

// readDocument reads a plan document's facts, learning its sensitive
// values and masking them (and every secret already known) in the changes.
func readDocument(data []byte, name, env string, secrets *secret.Set) (tfplan.Facts, error) {
	tr := translator{secrets: secrets}
	meta, err := readPlanDocument(data, name, &tr)
	if err != nil {
		return tfplan.Facts{}, err
	}
	switch {
	case meta.hasValues && !meta.hasPlanned && !meta.hasChanges:
		return tfplan.Facts{}, fmt.Errorf("%w: %s is a Terraform state document, not a plan; produce one with terraform show -json PLANFILE", fault.ErrUsage, name)
	case meta.formatVersion == "" && !meta.hasPlanned && !meta.hasChanges:
		return tfplan.Facts{}, fmt.Errorf("%w: %s is not a Terraform plan document (no format_version, planned_values or resource_changes); produce one with terraform show -json PLANFILE", fault.ErrUsage, name)
	}
	if err := (&tfjson.Plan{FormatVersion: meta.formatVersion}).Validate(); err != nil {
		return tfplan.Facts{}, fmt.Errorf("%w: %s: %w", fault.ErrUsage, name, err)
	}
	for name, sensitive := range meta.sensitiveVars {
		if sensitive {
			learnValue(secrets, meta.variables[name])
		}
	}
	t := tr.t
	maskSecrets(t.changes, secrets)
	for i := range t.drift {
		maskSecrets([]tfplan.ResourceChange{t.drift[i].ResourceChange}, secrets)
	}
	return tfplan.Facts{Env: env, TerraformVersion: meta.terraformVersion,
		Changes: t.changes, Outputs: t.outputs, Drift: t.drift, NoOps: t.noops,
		Imports: t.imports, Moves: t.moves, Forgets: t.forgets,
		Incomplete: meta.complete != nil && !*meta.complete, Errored: meta.errored,
		Deferred: meta.deferred, Checks: meta.checks, Actions: meta.actions}, nil
}

// readPlanDocument streams a `terraform show -json PLANFILE` document: it
// walks the top-level object, decodes resource_changes one element at a time
// into terraform-json's ResourceChange and hands each to tr, and skips
// planned_values, prior_state and configuration without building them. They
// are most of a large document's bytes and none of its review; holding one
// decoded change at a time keeps memory near the document's own size.
//
// It reads with jsontext (go-json-experiment), which skips a value in one
// pass and decodes a value straight from the stream, so no byte is scanned
// twice; terraform-json's types decode with encoding/json's semantics.
func readPlanDocument(data []byte, name string, tr *translator) (docMeta, error) {
	var m docMeta
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	r := planReader{dec: dec, data: data, name: name}
	tok, err := dec.ReadToken()
	if err != nil {
		return m, r.fail(err)
	}
	if tok.Kind() != '{' {
		return m, fmt.Errorf("%w: %s: %s: the document is a JSON %s, want an object (a plan from terraform show -json PLANFILE)", fault.ErrUsage, name, position(data, firstByte(data, 0)), kindName(tok.Kind()))
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return m, r.fail(err)
		}
		key := tok.String()
		switch key {
		case "format_version":
			err = r.decode(&m.formatVersion)
		case "terraform_version":
			err = r.decode(&m.terraformVersion)
		case "resource_changes":
			m.hasChanges = true
			err = r.resourceChanges("resource_changes", tr.resource)
		case "resource_drift":
			err = r.resourceChanges("resource_drift", tr.drifted)
		case "complete":
			err = r.decode(&m.complete)
		case "errored":
			err = r.decode(&m.errored)
		case "deferred_changes":
			var ds []*tfjson.DeferredResourceChange
			if err = r.decode(&ds); err == nil {
				m.deferred = deferredChanges(ds)
			}
		case "checks":
			var cs []tfjson.CheckResultStatic
			if err = r.decode(&cs); err == nil {
				m.checks = checkResults(cs)
			}
		case "action_invocations":
			var as []*tfjson.ActionInvocation
			if err = r.decode(&as); err == nil {
				m.actions = actionInvocations(as)
			}
		case "output_changes":
			var outs map[string]*tfjson.Change
			if err = r.decode(&outs); err == nil {
				if terr := tr.outputs(outs); terr != nil {
					return m, fmt.Errorf("%w: %s is not a plan relcap can review: %w", fault.ErrUsage, name, terr)
				}
			}
		case "variables":
			var vars planVariables
			if err = r.decode(&vars); err == nil {
				m.variables = make(map[string]any, len(vars))
				for k, v := range vars {
					m.variables[k] = v.Value
				}
			}
		case "configuration":
			var cfg planConfiguration
			if err = r.decode(&cfg); err == nil {
				m.sensitiveVars = make(map[string]bool, len(cfg.RootModule.Variables))
				for k, v := range cfg.RootModule.Variables {
					m.sensitiveVars[k] = v.Sensitive
				}
			}
		case "planned_values":
			m.hasPlanned = true
			err = dec.SkipValue()
		case "values":
			m.hasValues = true
			err = dec.SkipValue()
		default:
			err = dec.SkipValue()
		}
		if err != nil {
			return m, r.fail(err)
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return m, r.fail(err)
	}
	end := dec.InputOffset()
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return m, fmt.Errorf("%w: %s: %s: unexpected data after the plan document", fault.ErrUsage, name, position(data, firstByte(data, end)))
	}
	return m, nil
}

// planReader reads one document, and says where it failed.
type planReader struct {
	dec  *jsontext.Decoder
	data []byte
	name string
}

// decodeOptions decode terraform-json's types as encoding/json would,
// numbers kept as written: as float64 a change from 12345678901234567890
// to ...891 would compare equal and vanish.
var decodeOptions = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv2.WithUnmarshalers(jsonv2.UnmarshalFromFunc(readAny)))

// decode reads the next value into v.
func (r planReader) decode(v any) error { return jsonv2.UnmarshalDecode(r.dec, v, decodeOptions) }

// readAny reads any JSON value as encoding/json decodes into an empty
// interface with UseNumber: maps, slices, strings, booleans, nil and
// json.Number.
func readAny(dec *jsontext.Decoder, v *any) error {
	val, err := anyValue(dec)
	if err == nil {
		*v = val
	}
	return err
}

func anyValue(dec *jsontext.Decoder) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			k := tok.String() // before the next read voids tok
			v, err := anyValue(dec)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		_, err := dec.ReadToken()
		return m, err
	case '[':
		l := []any{}
		for dec.PeekKind() != ']' {
			v, err := anyValue(dec)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		_, err := dec.ReadToken()
		return l, err
	case '"':
		return tok.String(), nil
	case '0':
		return json.Number(tok.String()), nil
	case 't', 'f':
		return tok.Bool(), nil
	}
	return nil, nil
}

// resourceChanges reads the array of resource changes under key
// (resource_changes, resource_drift) element by element, handing each to
// take.
func (r planReader) resourceChanges(key string, take func(*tfjson.ResourceChange) error) error {
	switch k := r.dec.PeekKind(); k {
	case 'n':
		_, err := r.dec.ReadToken()
		return err
	case '[':
	default:
		start := firstByte(r.data, r.dec.InputOffset())
		if k == 0 {
			_, err := r.dec.ReadToken() // the syntax error it is
			return err
		}
		return &documentErr{fmt.Errorf("%w: %s: %s: %s is a JSON %s, want an array", fault.ErrUsage, r.name, position(r.data, start), key, kindName(k))}
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	for r.dec.PeekKind() != ']' {
		var rc *tfjson.ResourceChange
		if err := r.decode(&rc); err != nil {
			return err
		}
		if err := take(rc); err != nil {
			return &documentErr{fmt.Errorf("%w: %s is not a plan relcap can review: %w", fault.ErrUsage, r.name, err)}
		}
	}
	_, err := r.dec.ReadToken() // the closing bracket
	return err
}

// fail turns a read error into a usage error saying where: a value of the
// wrong type by its path in the document, and anything that is not JSON by
// line, column and offset, as encoding/json's scanner of the whole document
// reports it (the streaming decoder's offsets differ by path).
func (r planReader) fail(err error) error {
	var de *documentErr
	if errors.As(err, &de) {
		return de.err
	}
	if len(bytes.TrimSpace(r.data)) == 0 {
		return fmt.Errorf("%w: %s is empty, not a plan document", fault.ErrUsage, r.name)
	}
	var typ *jsonv1.UnmarshalTypeError
	if errors.As(err, &typ) {
		field := fieldPath(typ.Field)
		if field == "" {
			field = "document"
		}
		// Only what was expected where: no value from the document is
		// echoed (it may be a secret).
		return fmt.Errorf("%w: %s: %s: %s is a JSON %s, want %s", fault.ErrUsage, r.name, position(r.data, typ.Offset), field, jsonKind(typ.Value), typ.Type)
	}
	var whole *json.SyntaxError
	if errors.As(json.Unmarshal(r.data, &skip{}), &whole) {
		return documentError(r.name, r.data, whole, 0, whole.Offset)
	}
	return fmt.Errorf("%w: %s: %s: %w", fault.ErrUsage, r.name, position(r.data, r.dec.InputOffset()), err)
}

// fieldPath renders the decoder's dotted path of a value the way the
// document's readers say it: resource_changes.0.change becomes
// resource_changes[0].change.
func fieldPath(dotted string) string {
	var b strings.Builder
	for i, seg := range strings.Split(dotted, ".") {
		if _, err := strconv.Atoi(seg); err == nil && i > 0 {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "value"
}

// documentErr carries an error that already says where it happened.
type documentErr struct{ err error }

func (e *documentErr) Error() string { return e.err.Error() }

// firstByte returns the offset of the first byte at or after off that is not
// JSON whitespace or a separator: where the decoder's next value starts.
func firstByte(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ':', ',':
			off++
			continue
		}
		break
	}
	return off
}

// documentError says where a document failed to decode.
//
// A SyntaxError's offset counts from the start of the stream, an
// UnmarshalTypeError's from the start of the value being decoded, which
// starts at valueStart.
func documentError(name string, data []byte, err error, valueStart, inputOffset int64) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF) && len(bytes.TrimSpace(data)) == 0:
		return fmt.Errorf("%w: %s is empty, not a plan document", fault.ErrUsage, name)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%w: %s: %s: truncated: the document ends in the middle of a value", fault.ErrUsage, name, position(data, int64(len(data))))
	case errors.As(err, &syn):
		// The streaming decoder's offsets differ by path (some point at
		// the offending byte, some just past it). Scanning the whole
		// document once more, on this error path only, gives the
		// scanner's consistent one: the bytes read, the offending one
		// included.
		var whole *json.SyntaxError
		if errors.As(json.Unmarshal(data, &skip{}), &whole) {
			if whole.Offset >= int64(len(data)) {
				return fmt.Errorf("%w: %s: %s: truncated: the document ends in the middle of a value", fault.ErrUsage, name, position(data, int64(len(data))))
			}
			syn = whole
		}
		return fmt.Errorf("%w: %s: %s: not valid JSON: %w", fault.ErrUsage, name, position(data, syn.Offset-1), syn)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "document"
		}
		// typ's own message quotes the value for numbers; say only what was
		// expected where, so no value from the document is echoed.
		return fmt.Errorf("%w: %s: %s: %s is a JSON %s, want %s", fault.ErrUsage, name, position(data, valueStart+typ.Offset), field, jsonKind(typ.Value), typ.Type)
	}
	return fmt.Errorf("%w: %s: %s: %w", fault.ErrUsage, name, position(data, inputOffset), err)
}

// jsonKind keeps the kind of an UnmarshalTypeError's value ("number 42"
// becomes "number").
func jsonKind(v string) string {
	if i := strings.IndexByte(v, ' '); i > 0 {
		return v[:i]
	}
	return v
}

// position renders a byte offset as line, column and offset.
func position(data []byte, off int64) string {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return fmt.Sprintf("line %d, column %d (byte offset %d)", line, col, off)
}

// deferredChanges are the changes Terraform put off, by address.
func deferredChanges(ds []*tfjson.DeferredResourceChange) []tfplan.DeferredChange {
	var out []tfplan.DeferredChange
	for _, d := range ds {
		if d == nil {
			continue
		}
		addr := "a resource"
		if d.ResourceChange != nil && d.ResourceChange.Address != "" {
			addr = d.ResourceChange.Address
		}
		reason := d.Reason
		if reason == "" {
			reason = "unknown reason"
		}
		out = append(out, tfplan.DeferredChange{Address: addr, Reason: reason})
	}
	return out
}

// checkResults are the configuration's check results, failed problems
// with their authors' messages.
func checkResults(cs []tfjson.CheckResultStatic) []tfplan.CheckResult {
	out := make([]tfplan.CheckResult, 0, len(cs))
	for _, c := range cs {
		r := tfplan.CheckResult{Address: c.Address.ToDisplay, Kind: string(c.Address.Kind), Status: tfplan.CheckStatus(c.Status)}
		for _, in := range c.Instances {
			for _, p := range in.Problems {
				if p.Message != "" {
					r.Problems = append(r.Problems, p.Message)
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// actionInvocations are the actions the apply will run, with what
// triggers them. Their configuration values are not kept: an action's
// arguments may hold secrets, and the reviewer needs what runs and when.
func actionInvocations(as []*tfjson.ActionInvocation) []tfplan.ActionInvocation {
	var out []tfplan.ActionInvocation
	for _, a := range as {
		if a == nil {
			continue
		}
		inv := tfplan.ActionInvocation{Address: a.Address, Type: a.Type}
		if t := a.LifecycleActionTrigger; t != nil {
			inv.Trigger, inv.Event = t.TriggeringResourceAddress, t.ActionTriggerEvent
		}
		out = append(out, inv)
	}
	return out
}
