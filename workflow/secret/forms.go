package secret

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// escaper turns a text into the form it takes inside some other text.
type escaper func(string) string

// escapers are the ways a value is escaped on its way to an output: inside
// a JSON string (by Go and Terraform, which escape <, > and &, and by
// encoders that do not), inside a Go-quoted string (%q, strconv.Quote),
// in a URL: query-escaped ('+' for a space), fully escaped with %20
// (Python's quote(safe=""), curl), path-escaped, and as url.UserPassword
// writes a password into a URL's user information; and with only its
// backslashes and control characters escaped; and as a quoted Terraform
// string.
var escapers = []escaper{
	jsonEscaped,
	jsonEscapedNoHTML,
	goQuoted,
	url.QueryEscape,
	fullyEscaped,
	url.PathEscape,
	userinfoEscaped,
	backslashEscaped,
	hclEscaped,
}

// hclEscaped is a value inside a quoted Terraform (HCL) string, as
// Terraform's plan and apply output print it: quotes, backslashes and
// control characters escaped, and a template sequence's "${" and "%{"
// doubled ("$${", "%%{"). A value with none of these is unchanged.
func hclEscaped(v string) string {
	if !strings.ContainsAny(v, "\\\"{") && !strings.ContainsFunc(v, unicode.IsControl) {
		return v
	}
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
		case unicode.IsControl(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// backslashEscaped is a value as text formats that escape only the
// backslash and control characters write it, quotes left as they are:
// PostgreSQL's COPY text (pg_dump, psql's \copy), a sed or shell
// replacement. A value without a backslash or control character is
// unchanged, so it costs nothing.
func backslashEscaped(v string) string {
	if !strings.ContainsAny(v, "\\\t\n\r") {
		return v
	}
	return strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n", "\r", "\\r").Replace(v)
}

// escapeDepth is how many escapers are applied one over the other: twice
// covers a JSON string inside a JSON string (a journal entry's data), a
// URL-escaped value escaped again (%2540), a Go-quoted JSON text, a JSON
// text in a URL. Each form with percent escapes is also masked with their
// hex digits in lower case, which RFC 3986 allows and some encoders write.
// A secret with characters to escape has at most 7 + 7×7 text forms and
// their lower-case variants, in practice 10 to 40 distinct ones; a plain
// secret (letters, digits, - _ . ~) has only itself, which keeps the tens
// of thousands of tokens a plan may teach cheap. See BenchmarkLearn10k.
const escapeDepth = 2

// textForms returns v and every distinct escaped form of it, up to
// escapeDepth escapers deep, v first.
func textForms(v string) []string {
	out := []string{v}
	if plain(v) {
		return out
	}
	seen := map[string]bool{v: true}
	add := func(e string) bool {
		if seen[e] {
			return false
		}
		seen[e] = true
		out = append(out, e)
		return true
	}
	level := []string{v}
	for range escapeDepth {
		var next []string
		for _, t := range level {
			for _, esc := range escapers {
				if e := esc(t); add(e) {
					next = append(next, e)
				}
			}
		}
		level = next
	}
	// JSON three deep: a journaled line of output that held a JSON text
	// inside a JSON string.
	add(jsonEscaped(jsonEscaped(jsonEscaped(v))))
	for _, f := range out {
		if strings.Contains(f, "%") {
			add(lowerHex(f))
		}
	}
	return out
}

// forms lists the patterns v is masked as. A value of MinLen bytes or more
// is masked wherever its forms appear; a shorter one only where a form
// stands as a whole token, lest "admin" be masked in "administrator".
func forms(v string) []pattern {
	token := len(v) < MinLen
	var ps []pattern
	seen := map[string]bool{}
	addAs := func(s string, token bool) {
		if seen[s] || len(s) < tooShort || !token && len(s) < MinLen {
			return
		}
		seen[s] = true
		ps = append(ps, pattern{old: s, new: Mask, token: token})
	}
	add := func(s string) { addAs(s, token) }
	// A short value's base64 is as long as a long value's ("4711" is
	// "NDcxMQ=="): as likely to stand inside other text (a header, a
	// docker auth, a JSON blob), and as unlikely to be ordinary text.
	addEncoded := func(s string) { addAs(s, token && len(s) < MinLen) }
	texts := textForms(v)
	for _, t := range texts {
		add(t)
	}
	// Base64 of the value, and of the value inside a JSON document (a
	// Kubernetes secret's data, a config file in user_data), alone or
	// inside a longer encoded text.
	encoded := []string{v}
	if len(texts) > 1 {
		encoded = append(encoded, jsonEscaped(v))
	}
	for _, t := range encoded {
		for _, enc := range base64s {
			addEncoded(enc.padded.EncodeToString([]byte(t)))
			addEncoded(enc.raw.EncodeToString([]byte(t)))
			if token {
				continue // a few bytes' worth of base64 inside a longer text is any base64
			}
			for _, inner := range embeddedBase64(enc.raw, t) {
				add(inner)
			}
		}
	}
	return ps
}

// base64s are the alphabets a secret may be encoded in, padded or not.
var base64s = []struct{ padded, raw *base64.Encoding }{
	{base64.StdEncoding, base64.RawStdEncoding},
	{base64.URLEncoding, base64.RawURLEncoding},
}

// plain reports whether v is the same under every escaper: letters,
// digits and the few punctuation marks none of them touch.
func plain(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
		default:
			return false
		}
	}
	return true
}

// jsonEscaped is v as it stands inside a JSON string, without the quotes.
func jsonEscaped(v string) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) < 2 {
		return v
	}
	return string(b[1 : len(b)-1])
}

// jsonEscapedNoHTML is v inside a JSON string by an encoder that leaves
// <, > and & as they are (most encoders but Go's and Terraform's).
func jsonEscapedNoHTML(v string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return v
	}
	s := strings.TrimSuffix(b.String(), "\n")
	if len(s) < 2 {
		return v
	}
	return s[1 : len(s)-1]
}

// goQuoted is v inside a Go-quoted string, without the quotes.
func goQuoted(v string) string {
	q := strconv.Quote(v)
	return q[1 : len(q)-1]
}

// fullyEscaped is v with every byte but letters, digits and - _ . ~
// percent-escaped, a space as %20.
func fullyEscaped(v string) string {
	return strings.ReplaceAll(url.QueryEscape(v), "+", "%20")
}

// userinfoEscaped is v as url.UserPassword writes a password into a URL:
// it leaves $ & + , ; = ! * ' ( ) as they are.
func userinfoEscaped(v string) string {
	return strings.TrimPrefix(url.UserPassword("", v).String(), ":")
}

// lowerHex returns s with the hex digits of its percent escapes in lower
// case.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' && isHex(b[i+1]) && isHex(b[i+2]) {
			b[i+1], b[i+2] = lower(b[i+1]), lower(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// embeddedBase64 is the part of v's base64 encoding (raw, unpadded) that
// is the same wherever v starts inside a longer text being encoded: for
// each of the three alignments of v's first byte in a 3-byte group, the
// characters that depend on v's bytes alone.
func embeddedBase64(raw *base64.Encoding, v string) []string {
	var out []string
	for k := range 3 {
		b := append(make([]byte, k), v...)
		s := raw.EncodeToString(b)
		from := (8*k + 5) / 6        // chars touching the k prefix bytes
		to := (8 * (k + len(v))) / 6 // chars holding only known bits
		if to-from >= MinLen && to <= len(s) {
			out = append(out, s[from:to])
		}
	}
	return out
}
