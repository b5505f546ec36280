package secrettest

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
)

func TestTheSameSeedMakesTheSameSecretsOfEveryShape(t *testing.T) {
	t.Parallel()
	a, b := Seeded(42).Sensitive(), Seeded(42).Sensitive()
	if !slices.Equal(a, b) {
		t.Fatalf("seed 42 made different secrets:\n%q\n%q", a, b)
	}
	if slices.Equal(a, Seeded(43).Sensitive()) {
		t.Fatal("seeds 42 and 43 made the same secrets")
	}
	for seed := range uint64(200) {
		g := Seeded(seed)
		kinds := map[Kind]string{}
		for _, s := range g.Sensitive() {
			kinds[s.Kind] = s.Value
		}
		for kind, ok := range map[Kind]func(string) bool{
			MultiLine:     func(v string) bool { return strings.Count(v, "\n") > 3 && !strings.Contains(v, "\r") },
			MultiLineCRLF: func(v string) bool { return strings.Count(v, "\r\n") > 3 },
			Short:         func(v string) bool { return len(v) == 4 && strings.Trim(v, "0123456789") == "" },
			URLUnsafe: func(v string) bool {
				return strings.Trim("@/:?#%&=+ $;", v) == "" && strings.ContainsAny(v, "@") && strings.Count(v, "") > 12
			},
			Unicode: func(v string) bool {
				return strings.ContainsRune(v, '\u0301') && strings.ContainsRune(v, '🔑') && strings.ContainsRune(v, 'ä')
			},
			Number: func(v string) bool { return len(v) == 7 && strings.Trim(v, "0123456789") == "" },
			Random: func(v string) bool { return len(v) >= 8 },
		} {
			if !ok(kinds[kind]) {
				t.Errorf("seed %d: the %s secret %q lacks its shape", seed, kind, kinds[kind])
			}
		}
		if pin := kinds[Short]; pin >= "1900" && pin <= "2099" || pin[0] == '0' {
			t.Errorf("seed %d: the PIN %s reads like a year or a file mode", seed, pin)
		}
	}
	if !strings.Contains(Seeded(7).Replay(), SeedEnv+"=7") {
		t.Errorf("the replay line names no seed: %s", Seeded(7).Replay())
	}
}

// TestTheScannerFindsEveryFormWhereItIs: each form of each generated
// secret, written inside other text, is found at its offset and named
// with its secret and encoding.
func TestTheScannerFindsEveryFormWhereItIs(t *testing.T) {
	t.Parallel()
	g := Seeded(1)
	secrets := append(g.Sensitive(), g.Token("argocd token", 40), g.Password("postgres password", 12))
	s := NewScanner(secrets...)
	if len(s.Forms()) < 100 {
		t.Fatalf("only %d forms", len(s.Forms()))
	}
	for i, f := range s.Forms() {
		prefix := `{"note": "`
		where := fmt.Sprintf("form %d", i)
		s.Scan(where, []byte(prefix+f.Text+`", "n": 1}`))
		found := 0
		for _, got := range s.Findings() {
			if got.Where != where {
				continue
			}
			found++
			if got.Offset != len(prefix) || got.Secret != f.Secret || got.Encoding != f.Encoding {
				t.Errorf("%s %q: found %+v", f.Secret, f.Encoding, got)
			}
		}
		if found != 1 {
			t.Errorf("%s in %q (%q): found %d times", f.Secret, f.Encoding, f.Text, found)
		}
	}
	encodings := map[string]bool{}
	for _, f := range s.Forms() {
		encodings[f.Encoding] = true
	}
	for _, want := range []string{"raw", "json", "json in json (escaped twice)", "go-quoted ascii", "json \\u-escaped non-ascii", "url userinfo", "url userinfo lower-case hex",
		"url query", "url path", "base64 std padded", "base64 url raw", "base64 std inside longer base64 at alignment 2", "hex",
		"line 3", "line 3 url query", "line 2 base64 std padded", "nfc", "nfc base64 std padded", "nfd", "number %g", "without final newline"} {
		if !encodings[want] {
			t.Errorf("no form encoded %q", want)
		}
	}
}

// TestBase64InsideALongerTextIsFoundAtEveryAlignment: a secret inside a
// longer text that is base64-encoded as a whole (an HTTP basic auth
// header, a docker config's auth) is found whatever precedes it.
func TestBase64InsideALongerTextIsFoundAtEveryAlignment(t *testing.T) {
	t.Parallel()
	sec := Seeded(3).Password("registry password", 10)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
		for k := range 3 {
			s := NewScanner(sec)
			s.Scan("auth", []byte(enc.EncodeToString([]byte(strings.Repeat("u", 5+k)+":"+sec.Value+"\x00trailer"))))
			if len(s.Findings()) == 0 {
				t.Errorf("alignment %d: not found", k)
			}
		}
	}
}

// TestShortValuesAreFoundOnlyAsAWholeToken: a four-digit PIN is found
// quoted, after '=' or alone on a line, never inside a longer number, a
// word, a hash or a decimal fraction.
func TestShortValuesAreFoundOnlyAsAWholeToken(t *testing.T) {
	t.Parallel()
	pin := Secret{Name: "pin", Kind: Short, Value: "8351"}
	for text, want := range map[string]bool{
		`"pin": "8351"`: true, `pin = 8351`: true, "8351\n": true, `\"8351\"`: true, `[8351,`: true,
		`183512`: false, `abc8351`: false, `8351ms`: false, `0.8351`: false, `8351.5`: false, `deadbeef8351cafe`: false, `x_8351`: false,
	} {
		s := NewScanner(pin)
		s.Scan("t", []byte(text))
		if got := len(s.Findings()) > 0; got != want {
			t.Errorf("%q: found %v, want %v", text, got, want)
		}
	}
}

// TestWhatCannotBeScannedForIsListedNotDropped: values of one or two
// characters and booleans are excluded by name with why, and never found.
func TestWhatCannotBeScannedForIsListedNotDropped(t *testing.T) {
	t.Parallel()
	s := NewScanner(Secret{Name: "tiny", Value: "x7"}, Secret{Name: "flag", Value: "true"}, Secret{Name: "pin", Kind: Short, Value: "8351"})
	s.Scan("t", []byte(`x7 true "x7" "true" 8351`))
	excluded := map[string]bool{}
	for _, e := range s.Excluded() {
		excluded[e.Secret+" "+e.Encoding] = true
		if e.Why == "" {
			t.Errorf("%+v: no reason", e)
		}
	}
	for _, want := range []string{"tiny every encoding", "flag every encoding", "pin base64 std inside longer base64 at alignment 0"} {
		// The PIN's own raw form is scanned, as a whole token.
		if !excluded[want] {
			t.Errorf("%q is not listed as excluded: %v", want, excluded)
		}
	}
	if got := s.Leaks(); len(got) != 1 || !strings.Contains(got[0], "secret pin") {
		t.Errorf("want the PIN alone found: %q", got)
	}
	if !strings.Contains(s.Summary(), "not scanned: secret tiny") {
		t.Errorf("the summary hides the exclusion:\n%s", s.Summary())
	}
}

// TestMultiLineValuesAreFoundLineByLine: a PEM printed as a Terraform
// heredoc, indented, or one line of it in a log, is found line by line.
func TestMultiLineValuesAreFoundLineByLine(t *testing.T) {
	t.Parallel()
	for _, sec := range Seeded(9).Sensitive()[:2] {
		lines := strings.Split(strings.TrimRight(strings.ReplaceAll(sec.Value, "\r\n", "\n"), "\n"), "\n")
		heredoc := "      + pem = <<-EOT\n"
		for _, l := range lines {
			heredoc += "            " + l + "\n"
		}
		s := NewScanner(sec)
		s.Scan("plan output", []byte(heredoc+"        EOT\n"))
		if got := len(s.Findings()); got != len(lines)-2 {
			t.Errorf("%s: %d of %d lines found: %q", sec.Kind, got, len(lines), s.Leaks())
		}
	}
}

// TestUnicodeIsFoundInEveryNormalForm: Terraform normalises strings to
// NFC, so a value given with a combining mark is printed composed.
func TestUnicodeIsFoundInEveryNormalForm(t *testing.T) {
	t.Parallel()
	var sec Secret
	for _, s := range Seeded(5).Sensitive() {
		if s.Kind == Unicode {
			sec = s
		}
	}
	composed := strings.ReplaceAll(sec.Value, "e\u0301", "é")
	if composed == sec.Value || !strings.ContainsFunc(composed, func(r rune) bool { return r > unicode.MaxASCII }) {
		t.Fatalf("no combining mark in %q", sec.Value)
	}
	s := NewScanner(sec)
	s.Scan("terraform output", []byte(`value = "`+composed+`"`))
	if leaks := s.Leaks(); len(leaks) != 1 || !strings.Contains(leaks[0], `"nfc"`) {
		t.Errorf("the composed form: %q", leaks)
	}
}
