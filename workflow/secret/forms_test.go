package secret_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/secret"
)

// pemKey is a multi-line secret as a PEM private key is: armour lines and
// 64-character base64 lines.
const pemKey = `-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun
VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK
LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo
9z+40RQzuVaE8AkAFmxZzow3x+VJYKdjykkJ0iT9wCS0DRTXu269V264Vf/3jvre
-----END RSA PRIVATE KEY-----
`

// heredoc is how Terraform's plan prints a multi-line string.
func heredoc(v, indent string) string {
	var b strings.Builder
	b.WriteString("      + input = <<-EOT\n")
	for line := range strings.SplitSeq(strings.TrimSuffix(v, "\n"), "\n") {
		b.WriteString(indent + line + "\n")
	}
	b.WriteString("        EOT\n")
	return b.String()
}

// TestMultiLineSecretsAreMaskedLineByLine: issue 26, attack 3. A PEM key
// printed as an indented heredoc leaked line by line; so did its lines in
// JSON, URL and base64 forms, and the whole key with \r\n line ends.
func TestMultiLineSecretsAreMaskedLineByLine(t *testing.T) {
	t.Parallel()
	s := secret.NewSet(pemKey)
	lines := strings.Split(strings.TrimSpace(pemKey), "\n")
	crlf := strings.ReplaceAll(pemKey, "\n", "\r\n")
	texts := map[string]string{
		"heredoc":                heredoc(pemKey, "          "),
		"heredoc with tabs, CR":  strings.ReplaceAll(heredoc(pemKey, "\t"), "\n", "\r\n"),
		"one line alone":         "key line: " + lines[2] + " (from the state)",
		"line json":              `{"line":` + strconv.Quote(lines[3]) + `}`,
		"line url":               "https://x.test/?k=" + url.QueryEscape(lines[1]),
		"line base64":            base64.StdEncoding.EncodeToString([]byte(lines[4])),
		"whole json":             mustJSON(t, map[string]string{"key": pemKey}),
		"whole json twice":       mustJSON(t, map[string]string{"data": mustJSON(t, map[string]string{"key": pemKey})}),
		"whole crlf json":        mustJSON(t, map[string]string{"key": crlf}),
		"whole crlf raw":         "x" + crlf + "y",
		"whole go quoted":        fmt.Sprintf("%q", pemKey),
		"whole crlf go quoted":   fmt.Sprintf("%q", crlf),
		"whole base64 in a text": base64.StdEncoding.EncodeToString([]byte("data:\n" + pemKey + "end")),
	}
	for name, text := range texts {
		out := s.Scrub(text)
		require.Contains(t, out, secret.Mask, name)
		for _, line := range lines {
			require.NotContains(t, out, line, "%s: %s", name, out)
			require.NotContains(t, out, strconv.Quote(line), name)
		}
		require.NotContains(t, out, "MIIEow", name)
		require.NotContains(t, out, "9z+40RQz", name)
	}
	// The heredoc's frame stays: only the secret's lines go.
	require.Contains(t, s.Scrub(texts["heredoc"]), "+ input = <<-EOT")
	require.Contains(t, s.Scrub(texts["heredoc"]), "EOT")
}

// TestShortLinesOfAMultiLineSecretAreNotMaskedAlone: a one-character line
// of a secret would destroy every "}" in the output.
func TestShortLinesOfAMultiLineSecretAreNotMaskedAlone(t *testing.T) {
	t.Parallel()
	s := secret.NewSet("{\n  \"password\": \"correct-horse\"\n}\n")
	require.Equal(t, "a } b { c", s.Scrub("a } b { c"))
	require.NotContains(t, s.Scrub(`    "password": "correct-horse"`), "correct-horse")
}

// TestOverEscapedFormsAreMasked: issue 26, attack 13. A value escaped
// twice: a JSON string of a JSON string, a URL escape escaped again, Go's
// %q of a JSON-escaped value, a URL-escaped JSON text.
func TestOverEscapedFormsAreMasked(t *testing.T) {
	t.Parallel()
	const v = `p@ss/w:rd "quoted" \ back & <tag> +plus`
	s := secret.NewSet(v)
	jsonOnce := mustJSON(t, v)
	texts := map[string]string{
		"json of json":         mustJSON(t, mustJSON(t, map[string]string{"v": v})),
		"json of json of json": mustJSON(t, mustJSON(t, jsonOnce)),
		"url twice":            url.QueryEscape(url.QueryEscape(v)),
		"path of query":        url.PathEscape(url.QueryEscape(v)),
		"go quote of json":     fmt.Sprintf("%q", jsonOnce),
		"url of json":          "https://x.test/?doc=" + url.QueryEscape(`{"v":`+jsonOnce+`}`),
		"lower-case hex":       strings.ToLower(url.QueryEscape(v)),
		"userinfo":             url.UserPassword("relcap", v).String() + "@db",
		"full escape %20":      strings.ReplaceAll(url.QueryEscape(v), "+", "%20"),
		"base64 of json":       base64.StdEncoding.EncodeToString([]byte(`{"v":` + jsonOnce + `}`)),
	}
	for name, text := range texts {
		out := s.Scrub(text)
		require.Contains(t, out, secret.Mask, "%s: %s", name, text)
		require.NotContains(t, out, "ss/w", name)
		require.NotContains(t, out, "ss%2", name)
		require.NotContains(t, out, "ss%252", name)
		require.NotContains(t, out, "quoted", "%s: %s", name, out)
	}
}

// TestShortValuesAreMaskedAsWholeTokens: issue 26, attack 13. A PIN as
// Terraform's plan prints a number.
func TestShortValuesAreMaskedAsWholeTokens(t *testing.T) {
	t.Parallel()
	s := secret.NewSet("4711")
	for in, want := range map[string]string{
		"pin = 4711":               "pin = (sensitive)",
		"      + input = 4711":     "      + input = (sensitive)",
		`  ~ pin = 4711 -> 4712`:   `  ~ pin = (sensitive) -> 4712`,
		"pin:4711,":                "pin:(sensitive),",
		"4711":                     "(sensitive)",
		`"4711"`:                   `"(sensitive)"`,
		"47110 x4711 4711x a_4711": "47110 x4711 4711x a_4711",
		"é4711":                    "é4711",
	} {
		require.Equal(t, want, s.Scrub(in), in)
	}
	require.Equal(t, `{"pin":"(sensitive)"}`, s.Scrub(`{"pin":4711}`), "a sensitive number in JSON becomes a string: the JSON stays valid")
	require.Equal(t, `{"pin":"(sensitive)","n":[1,"(sensitive)"]}`, s.Scrub(`{"pin":4711,"n":[1,4711]}`))
	require.Equal(t, `{"line":"pin = (sensitive)"}`, s.Scrub(`{"line":"pin = 4711"}`))
	// Its escaped and base64 forms, as tokens.
	sym := secret.NewSet("a/b@")
	require.Equal(t, "u=(sensitive)&x", sym.Scrub("u="+url.QueryEscape("a/b@")+"&x"))
	require.Equal(t, "(sensitive)", sym.Scrub(base64.StdEncoding.EncodeToString([]byte("a/b@"))))
}

// TestWhatCannotBeMaskedByValueIsIgnored: the package documentation's
// list.
func TestWhatCannotBeMaskedByValueIsIgnored(t *testing.T) {
	t.Parallel()
	s := secret.NewSet("7", "no", "true", "false", "null", " ", secret.Mask)
	require.Equal(t, 0, s.Len())
	require.Equal(t, "7 no true false null", s.Scrub("7 no true false null"))
}

// TestAddValueLearnsEveryJSONType: issue 26, attack 13. Numbers in each
// way they are printed, lists and maps by their leaves and their JSON.
func TestAddValueLearnsEveryJSONType(t *testing.T) {
	t.Parallel()
	s := &secret.Set{}
	s.AddValue(json.Number("4711"))
	s.AddValue(float64(1000000))
	s.AddValue(3.14159)
	s.AddValue(true)
	s.AddValue(nil)
	s.AddValue(map[string]any{"user": "ops-admin", "pins": []any{json.Number("9876"), 1234.0}, "nested": map[string]any{"k": "deep-secret-1"}})
	s.AddValue([]string{"listed-secret"})
	s.AddValue(int64(55555))
	for _, text := range []string{
		"pin = 4711", `"pin": 4711`, "n = 1000000", "n = 1e+06", "n = 1E+06", "pi = 3.14159",
		"user = ops-admin", "pins = [9876, 1234]", `k = "deep-secret-1"`, "listed-secret", "x 55555",
	} {
		out := s.Scrub(text)
		require.Contains(t, out, secret.Mask, text)
		for _, leak := range []string{"4711", "1000000", "1e+06", "1E+06", "3.14159", "ops-admin", "9876", "1234", "deep-secret-1", "listed-secret", "55555"} {
			require.NotContains(t, out, leak, text)
		}
	}
	whole := mustJSON(t, map[string]any{"a": "x", "b": []any{1, 2}})
	s2 := &secret.Set{}
	s2.AddValue(map[string]any{"a": "x", "b": []any{1, 2}})
	require.Equal(t, "v = "+secret.Mask, s2.Scrub("v = "+whole), "a collection of short leaves is masked as its JSON rendering")
	require.Equal(t, "true x 1", s2.Scrub("true x 1"))
}

// TestScrubKeepsJSONValid: masking in place never breaks a JSON text (the
// journal and the ledger keep JSON).
func TestScrubKeepsJSONValid(t *testing.T) {
	t.Parallel()
	s := secret.NewSet("12345678", "4711", `ab\`, "quote\"d-secret")
	for _, doc := range []string{
		`{"serial":12345678,"pin":4711}`,
		`[4711, -4711, 4711.5, 124711]`,
		`{"a":"x ab\\ y","b":"quote\"d-secret"}`,
		`{"k":"12345678"}`,
		` [4711] `,
	} {
		out := s.Scrub(doc)
		require.True(t, json.Valid([]byte(out)), "%s -> %s", doc, out)
		require.NotContains(t, out, "12345678")
		require.NotContains(t, out, `quote\"d-secret`)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
