package secret_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/secret"
)

// urlPasswords are passwords with characters a URL must escape and
// others it may leave, short, unicode and multi-line ones.
var urlPasswords = []string{"p@ss/w:rd", "a$b;c=d", "x/y?z#w", "q 1+2&3,4!", "pa%ss", "4z#1", "pässwörd€", "line-one-1\nline-two-2"}

// TestEveryURLFormOfAPasswordIsMasked: issue 26, attack 4. A password in
// a URL's user information, query-escaped, path-escaped, fully escaped,
// in lower-case hex, '+' for a space.
func TestEveryURLFormOfAPasswordIsMasked(t *testing.T) {
	t.Parallel()
	for _, pw := range urlPasswords {
		s := secret.NewSet(pw)
		forms := map[string]string{
			"userinfo":   "postgres://" + url.UserPassword("relcap", pw).String() + "@db/relcap",
			"query":      "postgres://db/relcap?password=" + url.QueryEscape(pw),
			"path":       "https://x.test/" + url.PathEscape(pw) + "/y",
			"full":       "x " + strings.ReplaceAll(url.QueryEscape(pw), "+", "%20") + " y",
			"lower hex":  "x " + strings.ToLower(url.QueryEscape(pw)) + " y",
			"lower user": "postgres://relcap:" + strings.ToLower(strings.TrimPrefix(url.UserPassword("", pw).String(), ":")) + "@db",
		}
		for name, text := range forms {
			out := s.Scrub(text)
			require.Contains(t, out, secret.Mask, "%q %s: %s", pw, name, text)
			for _, leak := range []string{pw, url.QueryEscape(pw), url.PathEscape(pw)} {
				require.NotContains(t, out, leak, "%q %s: %s", pw, name, out)
			}
		}
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://relcap:s3cret@db.internal:5432/relcap":           "postgres://relcap:xxxxx@db.internal:5432/relcap",
		"postgres://db/relcap?sslmode=require&password=s3cret":       "postgres://db/relcap?password=xxxxx&sslmode=require",
		"postgres://relcap:s3cret@db:5432/%zz":                       "postgres://xxxxx@db:5432/%zz",
		"postgres://relcap:s3c@ret@db/relcap":                        "postgres://relcap:xxxxx@db/relcap",
		"postgres://relcap@db/relcap":                                "postgres://relcap@db/relcap",
		"postgres://relcap:p%40ss@[::1]:5432/relcap?sslmode=disable": "postgres://relcap:xxxxx@[::1]:5432/relcap?sslmode=disable",
		// Written with / ? # unescaped: url.Parse reads a host, a path or
		// a query where the password is.
		"postgres://relcap:pa/ss?w#rd@127.0.0.1:1/db": "postgres://xxxxx@127.0.0.1:1/db",
		"postgres://relcap:12/34@db/relcap":           "postgres://xxxxx@db/relcap",
		"postgres://relcap:x#y@db/relcap?a=b":         "postgres://xxxxx@db/relcap?a=b",
		"postgres://relcap:pa ss@db:5432/relcap":      "postgres://xxxxx@db:5432/relcap",
		"postgres://db:5432/relcap?x=1&token=abc%2Fd": "postgres://db:5432/relcap?token=xxxxx&x=1",
		"postgres://u:p/w@db/r?Password=p%2Fw&x=%zz":  "postgres://xxxxx@db/r?Password=xxxxx&x=%zz",
		"https://x:s3cret@git.example.com/env.git":    "https://x:xxxxx@git.example.com/env.git",
		"https://tok3n@git.example.com/env.git":       "https://xxxxx@git.example.com/env.git",
		"ssh://git@git.example.com/env.git":           "ssh://git@git.example.com/env.git",
		"git@git.example.com:env.git":                 "git@git.example.com:env.git",
		"/var/lib/relcap/ledger.db":                   "/var/lib/relcap/ledger.db",
	} {
		got := secret.RedactURL(in)
		require.Equal(t, want, got, in)
	}
}

// TestURLCredentialsFindsThePasswordHoweverItWasWritten: each '@' may end
// an unescaped password; every candidate is learnt, escaped and not.
func TestURLCredentialsFindsThePasswordHoweverItWasWritten(t *testing.T) {
	t.Parallel()
	for _, pw := range urlPasswords {
		for _, u := range []string{
			"postgres://relcap:" + pw + "@db:5432/relcap",
			"postgres://" + url.UserPassword("relcap", pw).String() + "@db:5432/relcap",
			"postgres://relcap:" + url.QueryEscape(pw) + "@db:5432/relcap",
			"postgres://relcap@db:5432/relcap?sslmode=disable&password=" + url.QueryEscape(pw),
		} {
			creds := secret.URLCredentials(u)
			require.Contains(t, creds, pw, u)
			s := secret.NewSet(creds...)
			out := s.Scrub("relcap --ledger " + u + " journal list")
			require.NotContains(t, out, pw, out)
			if !strings.ContainsAny(pw, "\n") {
				require.NotContains(t, out, pw[:3]+pw[len(pw)-1:], out)
			}
			require.NotContains(t, secret.RedactURL(u), strings.Split(pw, "\n")[0], u)
		}
	}
	require.Empty(t, secret.URLCredentials("postgres://relcap@db/relcap"))
	require.Equal(t, []string{"tok3n"}, secret.URLCredentials("https://tok3n@git.example.com/env.git"))
	require.Equal(t, "x:s3c/ret", secret.SecretUserinfo("https://x:s3c/ret@git.example.com/env.git"))
	require.Empty(t, secret.SecretUserinfo("ssh://git@git.example.com/env.git"))
}
