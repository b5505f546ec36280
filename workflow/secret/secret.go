// Package secret masks secrets by value, as CI systems mask secrets in
// their logs: every secret relcap learns (values of Terraform variables
// declared sensitive, values Terraform marks sensitive, sensitive outputs,
// the Argo CD token, registry and Git credentials, environment variables
// the configuration names) is added to one Set, and everything relcap
// prints, journals, records or reports passes through Set.Scrub first.
//
// Terraform's own marks are not enough: a value derived from a sensitive
// variable by a provider (terraform_data's output mirroring its input) is
// unmarked, and Terraform's plan output prints it. Matching by value
// catches it wherever it goes.
//
// Each secret is masked in the forms it travels in: as written, escaped
// inside a JSON or Go string, URL-escaped, and base64-encoded (standard
// and URL alphabets, padded or not, and inside a longer base64 text at any
// of the three byte alignments, as GitHub Actions does). A secret of fewer
// than MinLen characters would be confused with ordinary text ("admin" in
// "administrator"), so it is masked only as a whole quoted value ("admin"
// or 'admin'); one of fewer than 3 characters is not masked at all.
// Masks never reveal a length or a hash: every form becomes Mask.
package secret

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// Mask replaces a secret wherever it appears.
const Mask = "(sensitive)"

// MinLen is the length from which a secret is masked wherever it appears,
// inside other text too; shorter secrets are masked only as a whole quoted
// value.
const MinLen = 6

// tooShort is the length under which a value is not a secret relcap can
// mask without destroying ordinary text (an empty password, "1").
const tooShort = 3

// Set is the secrets one relcap process knows. The zero value is empty
// and ready; a nil *Set masks nothing. It is safe for concurrent use.
type Set struct {
	mu      sync.RWMutex
	values  map[string]bool
	matcher *matcher // nil when values changed since it was built
}

// NewSet returns a Set holding values.
func NewSet(values ...string) *Set {
	s := &Set{}
	s.Add(values...)
	return s
}

// Add makes values secret from now on. Values too short to mask (under 3
// characters) and blank ones are ignored.
func (s *Set) Add(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) < tooShort || strings.TrimSpace(v) == "" || v == Mask || s.values[v] {
			continue
		}
		if s.values == nil {
			s.values = map[string]bool{}
		}
		s.values[v] = true
		s.matcher = nil
	}
}

// Len is how many secrets the Set holds.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.values)
}

// Scrub returns text with every form of every secret replaced by Mask.
func (s *Set) Scrub(text string) string {
	m := s.current()
	if m == nil {
		return text
	}
	return m.replace(text)
}

// ScrubBytes is Scrub for bytes; b itself is never modified.
func (s *Set) ScrubBytes(b []byte) []byte {
	m := s.current()
	if m == nil || !m.contains(string(b)) {
		return b
	}
	return []byte(m.replace(string(b)))
}

// Contains reports whether text holds any form of a secret.
func (s *Set) Contains(text string) bool {
	m := s.current()
	return m != nil && m.contains(text)
}

// current returns the matcher of the Set's secrets, building it after a
// change; nil when there is nothing to mask.
func (s *Set) current() *matcher {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	m, n := s.matcher, len(s.values)
	s.mu.RUnlock()
	if m != nil || n == 0 {
		return m
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.matcher == nil && len(s.values) > 0 {
		patterns := map[string]string{}
		for v := range s.values {
			for _, p := range forms(v) {
				patterns[p.old] = p.new
			}
		}
		s.matcher = newMatcher(patterns)
	}
	return s.matcher
}

type pattern struct{ old, new string }

// forms lists the texts v travels as and what each becomes.
func forms(v string) []pattern {
	if len(v) < MinLen {
		// Only whole quoted values: the quotes stay, so JSON stays JSON.
		var ps []pattern
		for _, q := range []string{`"`, `'`, `\"`} {
			ps = append(ps, pattern{q + v + q, q + Mask + q})
		}
		if esc := jsonEscaped(v); esc != v {
			ps = append(ps, pattern{`"` + esc + `"`, `"` + Mask + `"`}, pattern{`\"` + esc + `\"`, `\"` + Mask + `\"`})
		}
		return ps
	}
	ps := make([]pattern, 0, 16)
	add := func(s string) {
		if len(s) < MinLen {
			return
		}
		for _, p := range ps {
			if p.old == s {
				return
			}
		}
		ps = append(ps, pattern{s, Mask})
	}
	add(v)
	if plain(v) {
		// Nothing to escape: the escaped forms are v itself. Most secrets
		// (tokens, generated passwords) take this path, which matters when
		// a plan teaches tens of thousands of them.
	} else {
		add(jsonEscaped(v))
		add(jsonEscapedNoHTML(v))
		add(jsonEscaped(jsonEscaped(v))) // JSON inside a JSON string (a journal entry's data)
		if q := strconv.Quote(v); len(q) >= 2 {
			add(q[1 : len(q)-1])
		}
		add(url.QueryEscape(v))
		add(url.PathEscape(v))
	}
	for _, enc := range base64s {
		add(enc.padded.EncodeToString([]byte(v)))
		add(enc.raw.EncodeToString([]byte(v)))
		for _, inner := range embeddedBase64(enc.raw, v) {
			add(inner)
		}
	}
	return ps
}

// base64s are the alphabets a secret may be encoded in, padded or not.
var base64s = []struct{ padded, raw *base64.Encoding }{
	{base64.StdEncoding, base64.RawStdEncoding},
	{base64.URLEncoding, base64.RawURLEncoding},
}

// plain reports whether v is the same escaped in JSON (with or without
// HTML escaping), quoted in Go and escaped in a URL: letters, digits and
// the few punctuation marks none of them touch.
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

// Writer returns a writer that scrubs what it writes to w. Each write is
// scrubbed on its own; relcap's writers write whole lines or whole frames,
// and what they write was scrubbed at its source already. When w is a
// file (a terminal), so is the writer: its Fd, Read and Close are w's, so
// terminal detection and raw mode still see the terminal.
func (s *Set) Writer(w io.Writer) io.Writer {
	if s == nil {
		return w
	}
	sw := &writer{s: s, w: w}
	if f, ok := w.(file); ok {
		return fileWriter{writer: sw, f: f}
	}
	return sw
}

// file is what terminal libraries look for: an *os.File or its like.
type file interface {
	io.ReadWriteCloser
	Fd() uintptr
}

type writer struct {
	s *Set
	w io.Writer
}

// Write scrubs p and reports all of p written when the scrubbed text was.
func (w *writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.s.ScrubBytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

type fileWriter struct {
	*writer
	f file
}

func (f fileWriter) Read(p []byte) (int, error) { return f.f.Read(p) }
func (f fileWriter) Close() error               { return f.f.Close() }
func (f fileWriter) Fd() uintptr                { return f.f.Fd() }
