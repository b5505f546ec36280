package secret_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/secret"
)

const pw = `hunter2-"very"/secret+&<value>`

// TestScrubMasksEveryFormASecretTravelsIn: raw, JSON-escaped (once and
// twice), Go-quoted, URL-escaped and base64 in both alphabets, padded or
// not, alone or inside a longer base64 text at each alignment.
func TestScrubMasksEveryFormASecretTravelsIn(t *testing.T) {
	t.Parallel()
	s := secret.NewSet(pw)
	jsonOnce, err := json.Marshal(map[string]string{"password": pw})
	require.NoError(t, err)
	jsonTwice, err := json.Marshal(map[string]string{"data": string(jsonOnce)})
	require.NoError(t, err)
	texts := map[string]string{
		"raw":          "password = " + pw + " here",
		"json":         string(jsonOnce),
		"json in json": string(jsonTwice),
		"go quoted":    fmt.Sprintf("%q", pw),
		"query":        "https://example.test/?p=" + url.QueryEscape(pw),
		"path":         "https://example.test/" + url.PathEscape(pw),
		"base64":       base64.StdEncoding.EncodeToString([]byte(pw)),
		"base64 url":   base64.URLEncoding.EncodeToString([]byte(pw)),
		"base64 raw":   base64.RawStdEncoding.EncodeToString([]byte(pw)),
	}
	for k := range 3 {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			doc := strings.Repeat("x", k) + "user:" + pw + ":tail"
			texts[fmt.Sprintf("base64 of a longer text, offset %d, %v", k, enc == base64.URLEncoding)] = enc.EncodeToString([]byte(doc))
		}
	}
	for name, text := range texts {
		out := s.Scrub(text)
		require.Contains(t, out, secret.Mask, name)
		for _, leak := range leaks(pw) {
			require.NotContains(t, out, leak, "%s: %s", name, out)
		}
		require.True(t, s.Contains(text), name)
		require.False(t, s.Contains(out), "%s: scrubbed text holds no secret", name)
	}
}

// leaks are the recognisable pieces of a secret's forms.
func leaks(v string) []string {
	b64 := base64.RawStdEncoding.EncodeToString([]byte(v))
	return []string{v, strconv.Quote(v)[1:10], "hunter2", b64[2 : len(b64)-2]}
}

// TestShortSecretsAreMaskedOnlyAsWholeTokens: quoted or not (issue 26,
// attack 13: this test used to pin a short secret left in clear when
// unquoted, the hole now closed), but never inside a longer word.
func TestShortSecretsAreMaskedOnlyAsWholeTokens(t *testing.T) {
	t.Parallel()
	s := secret.NewSet("admin", "ab")
	require.Equal(t, `{"user":"(sensitive)"}`, s.Scrub(`{"user":"admin"}`))
	require.Equal(t, `user = '(sensitive)'`, s.Scrub(`user = 'admin'`))
	require.Equal(t, `{\"user\":\"(sensitive)\"}`, s.Scrub(`{\"user\":\"admin\"}`))
	require.Equal(t, "the administrator logs in as (sensitive)", s.Scrub("the administrator logs in as admin"), "a whole token is masked, a longer word is not")
	require.Equal(t, `"ab"`, s.Scrub(`"ab"`), "two characters are not a secret relcap can mask")
	require.Equal(t, 1, s.Len())
}

func TestTheLongestSecretIsMaskedWhole(t *testing.T) {
	t.Parallel()
	s := secret.NewSet("secret-one", "secret-one-and-more")
	require.Equal(t, "x (sensitive) y", s.Scrub("x secret-one-and-more y"))
	require.Equal(t, "x (sensitive) y", s.Scrub("x secret-one y"))
}

func TestNilAndEmptySetsChangeNothing(t *testing.T) {
	t.Parallel()
	var nilSet *secret.Set
	require.Equal(t, "text", nilSet.Scrub("text"))
	require.Equal(t, 0, nilSet.Len())
	nilSet.Add("ignored-value")
	var buf bytes.Buffer
	w := nilSet.Writer(&buf)
	_, err := w.Write([]byte("plain"))
	require.NoError(t, err)
	require.Equal(t, "plain", buf.String())
	require.Equal(t, "text", (&secret.Set{}).Scrub("text"))
	require.False(t, (&secret.Set{}).Contains("text"))
}

func TestWriterScrubsAndReportsTheCallersLength(t *testing.T) {
	t.Parallel()
	s := secret.NewSet("token-abcdef")
	var buf bytes.Buffer
	w := s.Writer(&buf)
	n, err := w.Write([]byte("auth token-abcdef ok\n"))
	require.NoError(t, err)
	require.Equal(t, len("auth token-abcdef ok\n"), n)
	require.Equal(t, "auth (sensitive) ok\n", buf.String())
}

// TestAddWhileScrubbing: secrets learnt mid-run (a plan read after its
// output streamed) apply from then on, safely under concurrency.
func TestAddWhileScrubbing(t *testing.T) {
	t.Parallel()
	s := secret.NewSet()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			v := fmt.Sprintf("secret-value-%d", i)
			s.Add(v)
			require.Equal(t, "a (sensitive) b", s.Scrub("a "+v+" b"))
		})
	}
	wg.Wait()
	require.Equal(t, 8, s.Len())
}

// FuzzScrub: for a random secret and random text around it, no form of
// the secret survives Scrub, nor a writer given the text in two writes:
// raw, each line, JSON (once, twice), Go-quoted, every URL escape (once,
// twice, lower-case hex), base64 alone and inside a longer text.
func FuzzScrub(f *testing.F) {
	f.Add("hunter2-secret", "password = ", "", uint8(0), uint16(3))
	f.Add("ab\"c\\d", `{"x":"`, `"}`, uint8(2), uint16(9))
	f.Add("ünïcødé-secret", "x", "y", uint8(9), uint16(0))
	f.Add("-----BEGIN KEY-----\nMIIEowIBAAKCAQEAu1SU1\n-----END KEY-----\n", "  + key = <<-EOT\n", "EOT", uint8(1), uint16(30))
	f.Add("p@ss/w:rd", "postgres://relcap:", "@db/relcap", uint8(6), uint16(20))
	f.Add("4711", "pin = ", "\n", uint8(0), uint16(7))
	f.Fuzz(func(t *testing.T, value, before, after string, form uint8, split uint16) {
		s := secret.NewSet(value)
		v := strings.TrimSpace(value)
		if s.Len() == 0 || strings.ContainsAny(v, "()") || strings.Contains(secret.Mask, v) {
			return // not maskable, or formed anew by a mask and its neighbours
		}
		if len(v) < secret.MinLen {
			// A short secret is masked as a whole token only.
			before, after = before+" ", " "+after
		}
		lines := strings.Split(strings.ReplaceAll(v, "\r\n", "\n"), "\n")
		line := strings.TrimSpace(lines[int(form)%len(lines)])
		var shown, leak string
		switch form % 12 {
		case 0:
			shown = v
		case 1:
			if len(line) < secret.MinLen || strings.Contains(secret.Mask, line) {
				return
			}
			before, after = before+"\n    ", "\n"+after
			shown = line
		case 2:
			shown = jsonInner(v)
		case 3:
			shown = jsonInner(jsonInner(v))
		case 4:
			shown = strconv.Quote(v)[1 : len(strconv.Quote(v))-1]
		case 5:
			shown = url.QueryEscape(v)
		case 6:
			shown = strings.TrimPrefix(url.UserPassword("", v).String(), ":")
		case 7:
			shown = lowerEscapes.ReplaceAllStringFunc(url.PathEscape(v), strings.ToLower)
		case 8:
			shown = url.QueryEscape(url.QueryEscape(v))
		case 9:
			shown = base64.StdEncoding.EncodeToString([]byte(v))
		case 10:
			shown = strconv.Quote(jsonInner(v))[1 : len(strconv.Quote(jsonInner(v)))-1]
		case 11:
			if len(v) < secret.MinLen {
				return // a short secret's base64 inside a longer base64 is any base64
			}
			// The value inside a longer text, base64-encoded whole.
			k := len(before) % 3
			whole := base64.RawStdEncoding.EncodeToString([]byte(before + v + after))
			alone := base64.RawStdEncoding.EncodeToString(append(make([]byte, k), v...))
			from, to := (8*k+5)/6, 8*(k+len(v))/6
			if to-from < secret.MinLen {
				return
			}
			leak = alone[from:to]
			require.Contains(t, whole, leak)
			before, shown, after = "", whole, ""
		}
		if leak == "" {
			leak = shown
		}
		text := before + shown + after
		out := s.Scrub(text)
		left := func(out string) bool {
			if len(v) >= secret.MinLen {
				return strings.Contains(out, leak)
			}
			return tokenIn(out, leak)
		}
		if left(out) {
			t.Fatalf("form %d of %q left in %q (from %q)", form%12, value, out, text)
		}
		var buf bytes.Buffer
		w := s.Writer(&buf)
		at := int(split) % (len(text) + 1)
		_, _ = w.Write([]byte(text[:at]))
		_, _ = w.Write([]byte(text[at:]))
		require.NoError(t, secret.Flush(w))
		if left(buf.String()) {
			t.Fatalf("form %d of %q left by the writer in %q (split at %d of %q)", form%12, value, buf.String(), at, text)
		}
	})
}

var lowerEscapes = regexp.MustCompile(`%[0-9A-F]{2}`)

// tokenIn reports whether tok stands in text as a whole token.
func tokenIn(text, tok string) bool {
	word := func(c byte) bool {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c >= 0x80
	}
	for i := 0; ; i++ {
		j := strings.Index(text[i:], tok)
		if j < 0 {
			return false
		}
		i += j
		end := i + len(tok)
		if (i == 0 || !word(tok[0]) || !word(text[i-1])) && (end == len(text) || !word(tok[len(tok)-1]) || !word(text[end])) {
			return true
		}
	}
}

func jsonInner(v string) string {
	b, _ := json.Marshal(v)
	return string(b[1 : len(b)-1])
}

// TestWriterOfAFileIsAFile: the cockpit's terminal stays a terminal behind
// the scrubber (Bubble Tea asks for its Fd).
func TestWriterOfAFileIsAFile(t *testing.T) {
	t.Parallel()
	f, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	defer f.Close()
	w := secret.NewSet("token-abcdef").Writer(f)
	fd, ok := w.(interface{ Fd() uintptr })
	require.True(t, ok)
	require.Equal(t, f.Fd(), fd.Fd())
	_, err = w.Write([]byte("token-abcdef\n"))
	require.NoError(t, err)
	b, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	require.Equal(t, "(sensitive)\n", string(b))
	// The last bytes of a frame that may begin a secret ("\x1b[?25h" ends
	// in "t"'s place here) are let go once the terminal is idle.
	_, err = w.Write([]byte("\x1b[?25t"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(f.Name())
		return err == nil && string(b) == "(sensitive)\n\x1b[?25t"
	}, 5*time.Second, 10*time.Millisecond)
}
