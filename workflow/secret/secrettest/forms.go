package secrettest

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// MinScannable is the shortest text the scanner looks for at all: a value
// of one or two characters (or true/false) is in every file by chance.
const MinScannable = 3

// MinSubstring is the length from which a form is looked for inside other
// text; a shorter one (a four-digit PIN) only as a whole token, not
// inside a longer word or number, or it would be found in every hash.
const MinSubstring = 6

// Form is one way a secret's bytes may be written.
type Form struct {
	Secret   string // the secret's name
	Kind     Kind
	Encoding string // "raw", "json", "line 2 base64 url raw", …
	Text     string
	// Token: matched only where no letter, digit or underscore (nor a '.'
	// or digit around a number) touches it, because it is short.
	Token bool
}

// Exclusion is a form the scanner cannot look for, and why.
type Exclusion struct {
	Secret, Encoding, Text, Why string
}

// Forms lists the encodings a secret's bytes may travel in and the ones
// it cannot look for.
func Forms(s Secret) ([]Form, []Exclusion) {
	var (
		forms []Form
		excl  []Exclusion
		seen  = map[string]bool{}
	)
	add := func(encoding, text string, embedded bool) {
		if text == "" || seen[text] {
			return
		}
		seen[text] = true
		switch {
		case len(text) < MinScannable:
			excl = append(excl, Exclusion{s.Name, encoding, text, fmt.Sprintf("%d byte(s): indistinguishable from ordinary text", len(text))})
		case isBool(text):
			excl = append(excl, Exclusion{s.Name, encoding, text, "true/false: in every JSON document"})
		case embedded && len(text) < MinSubstring:
			excl = append(excl, Exclusion{s.Name, encoding, text, fmt.Sprintf("%d characters inside a longer base64 text: found by chance", len(text))})
		default:
			forms = append(forms, Form{Secret: s.Name, Kind: s.Kind, Encoding: encoding, Text: text, Token: len(text) < MinSubstring})
		}
	}
	for _, p := range pieces(s) {
		if armour(p.text) {
			excl = append(excl, Exclusion{s.Name, p.name, p.text, "a PEM armour line is no secret: every key of its type has it"})
			continue
		}
		for _, e := range encodings(p.text) {
			name := strings.TrimSpace(p.name + " " + e.name)
			if e.name == "raw" && p.name != "" {
				name = p.name
			}
			add(name, e.text, e.embedded)
		}
	}
	return forms, excl
}

// piece is a part of a secret that travels alone: the whole value, each
// line of a multi-line one, its unicode normal forms, a number's
// renderings.
type piece struct{ name, text string }

func pieces(s Secret) []piece {
	ps := []piece{{"", s.Value}}
	if nfc := norm.NFC.String(s.Value); nfc != s.Value {
		ps = append(ps, piece{"nfc", nfc}) // Terraform normalises every string to NFC
	}
	if nfd := norm.NFD.String(s.Value); nfd != s.Value {
		ps = append(ps, piece{"nfd", nfd})
	}
	if strings.ContainsAny(s.Value, "\r\n") {
		ps = append(ps, piece{"lf line ends", strings.ReplaceAll(s.Value, "\r\n", "\n")})
		ps = append(ps, piece{"without final newline", strings.TrimRight(s.Value, "\r\n")})
		for i, line := range strings.Split(strings.ReplaceAll(s.Value, "\r\n", "\n"), "\n") {
			if line = strings.TrimRight(line, "\r"); strings.TrimSpace(line) != "" {
				ps = append(ps, piece{fmt.Sprintf("line %d", i+1), line})
			}
		}
	}
	if s.Kind == Number {
		if f, err := strconv.ParseFloat(s.Value, 64); err == nil {
			for _, r := range []struct{ name, text string }{
				{"number %g", strconv.FormatFloat(f, 'g', -1, 64)},
				{"number %e", strconv.FormatFloat(f, 'e', -1, 64)},
				{"number %E", strconv.FormatFloat(f, 'E', -1, 64)},
				{"number %f", strconv.FormatFloat(f, 'f', -1, 64)},
				{"number %v", fmt.Sprint(f)},
			} {
				ps = append(ps, piece{r.name, r.text})
			}
		}
	}
	return ps
}

type encoded struct {
	name, text string
	embedded   bool // a part of a longer base64 text
}

var percent = regexp.MustCompile(`%[0-9A-F]{2}`)

// lowerHex is a percent-escaped text with lower-case hex digits, as some
// encoders write it.
func lowerHex(s string) string {
	return percent.ReplaceAllStringFunc(s, strings.ToLower)
}

// encodings lists text in each encoding a byte may travel in.
func encodings(text string) []encoded {
	es := []encoded{{"raw", text, false}}
	add := func(name, t string) { es = append(es, encoded{name, t, false}) }
	inner := func(q string) string {
		if len(q) >= 2 {
			return q[1 : len(q)-1]
		}
		return q
	}
	j, _ := json.Marshal(text)
	add("json", inner(string(j)))
	add("json without html escapes", jsonNoHTML(text))
	add("json \\u-escaped non-ascii", jsonASCII(text))
	jj, _ := json.Marshal(inner(string(j)))
	add("json in json (escaped twice)", inner(string(jj)))
	add("go-quoted", inner(strconv.Quote(text)))
	add("go-quoted ascii", inner(strconv.QuoteToASCII(text)))
	add("terraform/hcl string", hclEscaped(text))
	add("postgresql copy text", copyEscaped(text))
	for _, u := range []struct{ name, text string }{
		{"url query", url.QueryEscape(text)},
		{"url path", url.PathEscape(text)},
		{"url userinfo", userinfo(text)},
		{"url every byte escaped", escapeAll(text)},
	} {
		add(u.name, u.text)
		add(u.name+" lower-case hex", lowerHex(u.text))
	}
	add("hex", hex.EncodeToString([]byte(text)))
	add("HEX", strings.ToUpper(hex.EncodeToString([]byte(text))))
	for _, b := range []struct {
		name     string
		pad, raw *base64.Encoding
	}{{"base64 std", base64.StdEncoding, base64.RawStdEncoding}, {"base64 url", base64.URLEncoding, base64.RawURLEncoding}} {
		add(b.name+" padded", b.pad.EncodeToString([]byte(text)))
		add(b.name+" raw", b.raw.EncodeToString([]byte(text)))
		for k, part := range embeddedBase64(b.raw, text) {
			es = append(es, encoded{fmt.Sprintf("%s inside longer base64 at alignment %d", b.name, k), part, true})
		}
	}
	return es
}

func jsonNoHTML(v string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	s := strings.TrimSuffix(b.String(), "\n")
	return s[1 : len(s)-1]
}

// jsonASCII escapes every non-ASCII rune as \uXXXX (surrogate pairs above
// the basic plane), as Python's json and jq -a write JSON.
func jsonASCII(v string) string {
	s := jsonNoHTML(v)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// hclEscaped is v inside a quoted HCL/Terraform string, as Terraform's
// plan output and a var file write it.
func hclEscaped(v string) string {
	var b strings.Builder
	for i, r := range v {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case (r == '$' || r == '%') && strings.HasPrefix(v[i+1:], "{"):
			b.WriteRune(r)
			b.WriteRune(r)
		case !unicode.IsPrint(r) && r != ' ':
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// copyEscaped is v in PostgreSQL's COPY text format (pg_dump's data).
func copyEscaped(v string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(v)
}

// userinfo is v as a URL's password (url.UserPassword's escaping).
func userinfo(v string) string {
	s := url.UserPassword("u", v).String()
	return strings.TrimPrefix(s, "u:")
}

// escapeAll percent-escapes every byte but the unreserved ones.
func escapeAll(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x80 && (unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)) || strings.IndexByte("-._~", c) >= 0) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// embeddedBase64 is the part of v's base64 encoding that is the same
// wherever v starts inside a longer text being encoded, for each of the
// three alignments of v's first byte in a 3-byte group.
func embeddedBase64(raw *base64.Encoding, v string) []string {
	out := make([]string, 3)
	for k := range 3 {
		s := raw.EncodeToString(append(make([]byte, k), v...))
		from := (8*k + 5) / 6
		to := (8 * (k + len(v))) / 6
		if from < to && to <= len(s) {
			out[k] = s[from:to]
		}
	}
	return out
}

// armour reports whether line is a PEM's BEGIN or END line.
func armour(line string) bool {
	return !strings.ContainsAny(line, "\r\n") && (strings.HasPrefix(line, "-----BEGIN ") || strings.HasPrefix(line, "-----END "))
}

func isBool(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false":
		return true
	}
	return false
}
