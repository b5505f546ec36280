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
	"cmp"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"slices"
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
	mu       sync.RWMutex
	values   map[string]bool
	replacer *strings.Replacer // nil when values changed since it was built
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
		s.replacer = nil
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
	r := s.current()
	if r == nil {
		return text
	}
	return r.Replace(text)
}

// ScrubBytes is Scrub for bytes; b itself is never modified.
func (s *Set) ScrubBytes(b []byte) []byte {
	r := s.current()
	if r == nil {
		return b
	}
	out := r.Replace(string(b))
	if len(out) == len(b) && out == string(b) {
		return b
	}
	return []byte(out)
}

// Contains reports whether text holds any form of a secret.
func (s *Set) Contains(text string) bool {
	r := s.current()
	return r != nil && r.Replace(text) != text
}

// current returns the replacer of the Set's secrets, building it after a
// change; nil when there is nothing to mask.
func (s *Set) current() *strings.Replacer {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	r, n := s.replacer, len(s.values)
	s.mu.RUnlock()
	if r != nil || n == 0 {
		return r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replacer == nil && len(s.values) > 0 {
		s.replacer = build(s.values)
	}
	return s.replacer
}

// build makes one replacer of every form of every secret, longest first:
// strings.Replacer tries patterns in argument order at each position, so a
// secret that contains another is masked whole.
func build(values map[string]bool) *strings.Replacer {
	patterns := map[string]string{}
	for v := range values {
		for _, p := range forms(v) {
			patterns[p.old] = p.new
		}
	}
	olds := make([]string, 0, len(patterns))
	for o := range patterns {
		olds = append(olds, o)
	}
	slices.SortFunc(olds, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	args := make([]string, 0, 2*len(olds))
	for _, o := range olds {
		args = append(args, o, patterns[o])
	}
	return strings.NewReplacer(args...)
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
	seen := map[string]bool{}
	var ps []pattern
	add := func(s string) {
		if len(s) >= MinLen && !seen[s] {
			seen[s] = true
			ps = append(ps, pattern{s, Mask})
		}
	}
	add(v)
	add(jsonEscaped(v))
	add(jsonEscapedNoHTML(v))
	add(jsonEscaped(jsonEscaped(v))) // JSON inside a JSON string (a journal entry's data)
	if q := strconv.Quote(v); len(q) >= 2 {
		add(q[1 : len(q)-1])
	}
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		add(enc.EncodeToString([]byte(v)))
		add(enc.WithPadding(base64.NoPadding).EncodeToString([]byte(v)))
		for _, inner := range embeddedBase64(enc, v) {
			add(inner)
		}
	}
	return ps
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

// embeddedBase64 is the part of v's base64 encoding that is the same
// wherever v starts inside a longer text being encoded: for each of the
// three alignments of v's first byte in a 3-byte group, the characters
// that depend on v's bytes alone.
func embeddedBase64(enc *base64.Encoding, v string) []string {
	raw := enc.WithPadding(base64.NoPadding)
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
