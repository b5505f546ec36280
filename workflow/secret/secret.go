// Package secret masks secrets by value, as CI systems mask secrets in
// their logs: every secret relcap learns (values of Terraform variables
// declared sensitive, values Terraform marks sensitive, sensitive outputs,
// the Argo CD token, registry and Git credentials, environment variables
// the configuration names, the password of a ledger URL) is added to one
// Set, and everything relcap prints, journals, records or reports passes
// through Set.Scrub first.
//
// Terraform's own marks are not enough: a value derived from a sensitive
// variable by a provider (terraform_data's output mirroring its input) is
// unmarked, and Terraform's plan output prints it. Matching by value
// catches it wherever it goes.
//
// # What is masked
//
// A value is learnt without the blanks around it (which reveal nothing).
// Each is masked in the forms it travels in: as written; escaped inside a
// JSON or Go string; URL-escaped (query, path, fully, and as a URL's user
// information, with upper- or lower-case hex); any two of those escapes
// one over the other (a JSON string inside a JSON string, %2540); and
// base64-encoded, of the value and of its JSON-escaped form (standard and
// URL alphabets, padded or not, and inside a longer base64 text at any of
// the three byte alignments, as GitHub Actions does). Masks never reveal a
// length or a hash: every form becomes Mask.
//
// A multi-line value (a PEM key) is also masked line by line, each line
// trimmed of its indentation, in all of the line's forms, since Terraform
// prints it as an indented heredoc; and with its line ends as \n or \r\n.
// A line shorter than MinLen is not masked on its own (a "}" or a short
// last line of base64 could not be told from ordinary text, and carries
// next to nothing of the secret); the armour lines of a PEM key are, which
// is harmless.
//
// A value of MinLen bytes or more is masked wherever it appears, inside
// other text too. A shorter one (3 to 5 bytes: a PIN, "admin") is masked
// only where one of its forms stands as a whole token: not preceded or
// followed by a letter, digit, underscore or non-ASCII byte (so "4711" in
// "pin = 4711", `"pin": 4711`, "pin:4711" and `"4711"`, but not in
// "47110" or "admin" in "administrator").
//
// Non-strings are learnt with AddValue: numbers in every way Terraform and
// Go print them (1000000, 1e+06), lists and maps leaf by leaf and as their
// JSON rendering.
//
// # What cannot be masked by value
//
//   - values of one or two bytes ("7", "no"): masking every such token
//     would destroy ordinary output, and a two-character secret is no
//     secret;
//   - true, false and null (a sensitive boolean): they are every boolean
//     of a plan;
//   - a line of a multi-line value shorter than MinLen, on its own;
//   - a short value inside a longer word ("4711" in "x4711"), and a short
//     value's base64 inside a longer base64 text;
//   - encodings other than those listed (hex, a hash, an encryption, a
//     mix of escaped and unescaped characters the escapers do not make):
//     a ledger URL's password is therefore also learnt as written.
//
// # Cost
//
// A plain secret (letters, digits, - _ . ~: most tokens) has about six
// patterns (itself and its base64); a generated password with a few
// symbols about a dozen; one holding quotes, <&>, %, @, / and a space
// about fifty. Finding them stays a few binary searches per position
// where some pattern's first four bytes occur, however many secrets share
// a prefix: BenchmarkScrub1MB (a megabyte of plan output against 10,000
// secrets) costs what it did with one-deep forms (35-40 ms here);
// BenchmarkLearn10k (10,000 secrets, half of them full of symbols) about
// six times as much CPU (0.5 s); the 10,000-resource review of
// adapters/terraform, whose secrets are tokens, is unchanged (0.64 s CPU).
//
// Scrub keeps JSON valid: where masking a JSON text in place would break
// it (a sensitive number, a match across an escape), the string or number
// holding the secret becomes the string "(sensitive)" instead.
package secret

import (
	"encoding/json"
	"strings"
	"sync"

	"golang.org/x/text/unicode/norm"
)

// Mask replaces a secret wherever it appears.
const Mask = "(sensitive)"

// MinLen is the length from which a secret is masked wherever it appears,
// inside other text too; shorter secrets are masked only as whole tokens.
const MinLen = 6

// tooShort is the length under which a value is not a secret relcap can
// mask without destroying ordinary text (an empty password, "1").
const tooShort = 3

// Set is the secrets one relcap process knows. The zero value is empty
// and ready; a nil *Set masks nothing. It is safe for concurrent use.
type Set struct {
	mu      sync.RWMutex
	values  map[string][]pattern // each secret and its forms
	matcher *matcher             // nil when values changed since it was built
}

// NewSet returns a Set holding values.
func NewSet(values ...string) *Set {
	s := &Set{}
	s.Add(values...)
	return s
}

// Add makes values secret from now on, each without surrounding blanks,
// and each line of a multi-line value too. Values that cannot be masked
// (see the package documentation) are ignored.
func (s *Set) Add(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		s.addLocked(v)
	}
}

func (s *Set) addLocked(v string) {
	v = strings.TrimSpace(v)
	if !maskable(v) || s.values[v] != nil {
		return
	}
	if s.values == nil {
		s.values = map[string][]pattern{}
	}
	s.values[v] = forms(v)
	s.matcher = nil
	// Terraform keeps strings in Unicode's composed form (NFC) and prints
	// them so; a value given decomposed (a var file written on macOS) is
	// printed in a form it was not learnt in. Both forms are the secret.
	for _, f := range []norm.Form{norm.NFC, norm.NFD} {
		if n := f.String(v); n != v {
			s.addLocked(n)
		}
	}
	if !strings.ContainsAny(v, "\r\n") {
		return
	}
	lf := strings.ReplaceAll(strings.ReplaceAll(v, "\r\n", "\n"), "\r", "\n")
	s.addLocked(lf)
	s.addLocked(strings.ReplaceAll(lf, "\n", "\r\n"))
	for line := range strings.SplitSeq(lf, "\n") {
		if line = strings.TrimSpace(line); len(line) >= MinLen {
			s.addLocked(line)
		}
	}
}

// maskable reports whether v can be masked by value.
func maskable(v string) bool {
	switch v {
	case Mask, "true", "false", "null":
		return false
	}
	return len(v) >= tooShort
}

// Len is how many secrets the Set holds (a multi-line value's lines
// count apart).
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
	return m.scrub(text, noByte, noByte)
}

// ScrubBytes is Scrub for bytes; b itself is never modified.
func (s *Set) ScrubBytes(b []byte) []byte {
	m := s.current()
	if m == nil || !m.contains(string(b)) {
		return b
	}
	return []byte(m.scrub(string(b), noByte, noByte))
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
		var patterns []pattern
		for _, ps := range s.values {
			patterns = append(patterns, ps...)
		}
		s.matcher = newMatcher(patterns)
	}
	return s.matcher
}

// scrub masks text, whose neighbours in a stream are before and after,
// keeping a JSON text valid.
func (m *matcher) scrub(text string, before, after int) string {
	out := m.replace(text, before, after)
	if out == text || !mayBeJSON(text) || json.Valid([]byte(out)) || !json.Valid([]byte(text)) {
		return out
	}
	if js := m.scrubJSON(text); !m.contains(js) {
		return js
	}
	// A secret spans JSON values (its text is JSON syntax): masking it
	// comes before keeping the JSON valid.
	return out
}

// mayBeJSON is a cheap test before json.Valid: how a JSON object or
// array begins. (A bare number or string is taken for text: "4711" alone
// is a line of output more often than a JSON document.)
func mayBeJSON(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n")
	return t != "" && (t[0] == '{' || t[0] == '[')
}

// maskedJSON replaces a JSON string or number that holds a secret.
const maskedJSON = `"` + Mask + `"`

// scrubJSON masks a valid JSON text value by value: each string is masked
// in place, or replaced whole by "(sensitive)" when masking it in place
// would not leave a JSON string; each number or literal holding a secret
// becomes "(sensitive)". The result is valid JSON. A secret spanning
// several JSON values (an object's rendering) is masked by its leaves.
func (m *matcher) scrubJSON(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '"':
			j := stringEnd(text, i)
			tok := text[i:j]
			out := m.replace(tok, byteBefore(text, i), byteAt(text, j))
			if out != tok && !json.Valid([]byte(out)) {
				out = maskedJSON
			}
			b.WriteString(out)
			i = j
		case strings.IndexByte("{}[],: \t\r\n", c) >= 0:
			b.WriteByte(c)
			i++
		default:
			j := i
			for j < len(text) && strings.IndexByte("{}[],: \t\r\n\"", text[j]) < 0 {
				j++
			}
			tok := text[i:j]
			if m.replace(tok, byteBefore(text, i), byteAt(text, j)) != tok {
				tok = maskedJSON
			}
			b.WriteString(tok)
			i = j
		}
	}
	return b.String()
}

// stringEnd returns the index after the JSON string starting at text[i].
func stringEnd(text string, i int) int {
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(text)
}

func byteBefore(text string, i int) int {
	if i == 0 {
		return noByte
	}
	return int(text[i-1])
}

func byteAt(text string, i int) int {
	if i >= len(text) {
		return noByte
	}
	return int(text[i])
}
