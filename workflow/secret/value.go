package secret

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// AddValue makes a value of any JSON type secret, as Terraform may print
// it: a string as Add does; a number (json.Number, float64 or any Go
// integer or float) in each way Terraform, JSON and Go print it (1000000,
// 1e+06, 1E+06); a list or map leaf by leaf
// and, from MinLen bytes, as its JSON rendering (compact, keys sorted,
// with and without HTML escaping). Booleans and null carry nothing that
// can be masked (see the package documentation). Any other Go value is
// taken as its JSON encoding.
//
// It is the one place that decides how a non-string secret is learnt:
// the Terraform adapter calls it for sensitive variables, outputs and
// attributes.
func (s *Set) AddValue(v any) {
	if s == nil || v == nil {
		return
	}
	switch x := v.(type) {
	case string:
		s.Add(x)
	case bool:
	case json.Number:
		s.Add(numberForms(string(x))...)
	case float64:
		s.Add(floatForms(x)...)
	case float32:
		s.Add(floatForms(float64(x))...)
	case int:
		s.Add(numberForms(strconv.Itoa(x))...)
	case int64:
		s.Add(numberForms(strconv.FormatInt(x, 10))...)
	case int32, int16, int8, uint, uint64, uint32, uint16, uint8:
		b, _ := json.Marshal(x)
		s.Add(numberForms(string(b))...)
	case []any:
		for _, e := range x {
			s.AddValue(e)
		}
		s.addRendering(x)
	case map[string]any:
		for _, e := range x {
			s.AddValue(e)
		}
		s.addRendering(x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var generic any
		if dec.Decode(&generic) == nil {
			s.AddValue(generic)
		}
	}
}

// addRendering adds a collection's JSON text, as jsonencode and Go write
// it, when it is long enough to be told from ordinary text.
func (s *Set) addRendering(v any) {
	html, err := json.Marshal(v)
	if err != nil {
		return
	}
	var plainJSON bytes.Buffer
	enc := json.NewEncoder(&plainJSON)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	for _, r := range []string{string(html), strings.TrimSuffix(plainJSON.String(), "\n")} {
		if len(r) >= MinLen {
			s.Add(r)
		}
	}
}

// numberForms are the texts a number written as lit is printed as.
func numberForms(lit string) []string {
	out := []string{lit}
	if f, err := strconv.ParseFloat(lit, 64); err == nil {
		out = append(out, floatForms(f)...)
	}
	return out
}

// floatForms are the ways f is printed: shortest decimal (Terraform's
// plan), %g and %e (Go's %v: 1e+06), upper-case exponents, and JSON
// (encoding/json: decimal below 1e21).
func floatForms(f float64) []string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	out := []string{
		strconv.FormatFloat(f, 'f', -1, 64),
		strconv.FormatFloat(f, 'g', -1, 64),
		strconv.FormatFloat(f, 'e', -1, 64),
		strconv.FormatFloat(f, 'G', -1, 64),
		strconv.FormatFloat(f, 'E', -1, 64),
	}
	if b, err := json.Marshal(f); err == nil {
		out = append(out, string(b))
	}
	return out
}
