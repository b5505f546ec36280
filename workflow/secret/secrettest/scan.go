package secrettest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Finding is one form of one secret found in scanned bytes.
type Finding struct {
	Where    string // a file's path, or the label of a buffer
	Offset   int    // of the form's first byte
	Secret   string // the secret's name
	Kind     Kind
	Encoding string
	Context  string // a few bytes around it, quoted
}

func (f Finding) String() string {
	return fmt.Sprintf("%s at byte %d: secret %s (%s) in encoding %q: …%s…", f.Where, f.Offset, f.Secret, f.Kind, f.Encoding, f.Context)
}

// Skip is a file the scanner was told not to read, and why.
type Skip struct{ Path, Why string }

// Scanner looks for every form of a set of secrets in what it is given.
// It is safe for concurrent use.
type Scanner struct {
	forms    []Form
	byPrefix map[[2]byte][]int // forms by their first two bytes, longest first
	excluded []Exclusion

	mu       sync.Mutex
	findings []Finding
	sources  []string
	skipped  []Skip
	bytes    int64
}

// NewScanner returns a scanner of secrets' forms.
func NewScanner(secrets ...Secret) *Scanner {
	s := &Scanner{byPrefix: map[[2]byte][]int{}}
	for _, sec := range secrets {
		if len(sec.Value) < MinScannable || isBool(sec.Value) {
			s.excluded = append(s.excluded, Exclusion{sec.Name, "every encoding", sec.Value, "a value of 1–2 characters or a boolean cannot be told from ordinary text"})
			continue
		}
		fs, ex := Forms(sec)
		s.excluded = append(s.excluded, ex...)
		for _, f := range fs {
			s.forms = append(s.forms, f)
		}
	}
	for i, f := range s.forms {
		k := [2]byte{f.Text[0], f.Text[1]}
		s.byPrefix[k] = append(s.byPrefix[k], i)
	}
	for k, is := range s.byPrefix {
		slices.SortFunc(is, func(a, b int) int { return len(s.forms[b].Text) - len(s.forms[a].Text) })
		s.byPrefix[k] = is
	}
	return s
}

// Forms is every form the scanner looks for.
func (s *Scanner) Forms() []Form { return s.forms }

// Excluded is every form the scanner cannot look for, with why.
func (s *Scanner) Excluded() []Exclusion { return s.excluded }

// Scan looks for the secrets in b, naming it where.
func (s *Scanner) Scan(where string, b []byte) {
	var found []Finding
	for i := 0; i+1 < len(b); i++ {
		is, ok := s.byPrefix[[2]byte{b[i], b[i+1]}]
		if !ok {
			continue
		}
		for _, fi := range is {
			f := s.forms[fi]
			if !hasPrefixAt(b, i, f.Text) || (f.Token && !standsAlone(b, i, len(f.Text), f.Text)) {
				continue
			}
			found = append(found, Finding{Where: where, Offset: i, Secret: f.Secret, Kind: f.Kind, Encoding: f.Encoding, Context: around(b, i, len(f.Text))})
			i += len(f.Text) - 1 // the longest form at i names it; go on after it
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.findings = append(s.findings, found...)
	s.sources = append(s.sources, where)
	s.bytes += int64(len(b))
}

func hasPrefixAt(b []byte, i int, text string) bool {
	return len(b)-i >= len(text) && string(b[i:i+len(text)]) == text
}

// standsAlone reports whether the short form at b[i:i+n] is a whole token:
// no letter, digit or underscore touches it (nor a '.' a number).
func standsAlone(b []byte, i, n int, text string) bool {
	number := strings.Trim(text, "0123456789") == ""
	joins := func(c byte) bool {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80 || number && c == '.'
	}
	return (i == 0 || !joins(b[i-1])) && (i+n == len(b) || !joins(b[i+n]))
}

func around(b []byte, i, n int) string {
	from, to := max(0, i-24), min(len(b), i+n+24)
	return fmt.Sprintf("%q", b[from:to])
}

// ScanFile scans one file, named by its path.
func (s *Scanner) ScanFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s.Scan(path, b)
	return nil
}

// ScanTree scans every regular file under root. skip, when not nil, may
// return why a file is not scanned (recorded in Skipped); "" scans it.
// Symbolic links are not followed.
func (s *Scanner) ScanTree(root string, skip func(path string) string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if skip != nil {
			if why := skip(path); why != "" {
				s.mu.Lock()
				s.skipped = append(s.skipped, Skip{path, why})
				s.mu.Unlock()
				return nil
			}
		}
		return s.ScanFile(path)
	})
}

// Findings is what was found, in the order scanned.
func (s *Scanner) Findings() []Finding {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.findings)
}

// Sources is every buffer and file scanned.
func (s *Scanner) Sources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sources)
}

// Skipped is every file not scanned, with why.
func (s *Scanner) Skipped() []Skip {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.skipped)
}

// Summary says what was scanned for, in what, and what could not be.
func (s *Scanner) Summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "scanned %d source(s), %d bytes, for %d form(s)", len(s.sources), s.bytes, len(s.forms))
	for _, e := range s.excluded {
		fmt.Fprintf(&b, "\n  not scanned: secret %s, encoding %q (%q): %s", e.Secret, e.Encoding, e.Text, e.Why)
	}
	for _, k := range s.skipped {
		fmt.Fprintf(&b, "\n  file not scanned: %s: %s", k.Path, k.Why)
	}
	return b.String()
}

// Leaks groups the findings by secret, encoding and source: one line
// each, with the first offset and how many more, sorted.
func (s *Scanner) Leaks() []string {
	type key struct{ where, secret, encoding string }
	first := map[key]Finding{}
	count := map[key]int{}
	for _, f := range s.Findings() {
		k := key{f.Where, f.Secret, f.Encoding}
		if _, ok := first[k]; !ok {
			first[k] = f
		}
		count[k]++
	}
	var out []string
	for k, f := range first {
		line := f.String()
		if n := count[k]; n > 1 {
			line += fmt.Sprintf(" (and %d more there)", n-1)
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// TB is the part of testing.TB the scanner reports to.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

// Report fails t with one error per leak (grouped as Leaks does) and
// logs what was scanned and what could not be; replay names the seed.
func (s *Scanner) Report(t TB, replay string) {
	t.Helper()
	t.Logf("%s", s.Summary())
	leaks := s.Leaks()
	for _, l := range leaks {
		t.Errorf("LEAK %s", l)
	}
	if len(leaks) > 0 {
		t.Errorf("%d leak(s); %s", len(leaks), replay)
	}
}
