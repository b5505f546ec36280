package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store/pgtest"
)

// ledgerPasswords are passwords with characters a URL must escape (@ / :
// ? # % and space), others it may leave ($ ; = + & , !), a short one, a
// unicode one and a multi-line one (issue 26, attack 4).
var ledgerPasswords = []string{"p@ss/w:rd", "a$b;c=d", "x/y?z#w", "sp ace%+&,!", "4z#1", "pässwörd€", "line-one-1\nline-two-2"}

// passwordForms are the texts a password may be seen as: raw, each line,
// URL-escaped in each way, JSON-escaped, base64.
func passwordForms(pw string) []string {
	forms := []string{pw, url.QueryEscape(pw), url.PathEscape(pw), strings.TrimPrefix(url.UserPassword("", pw).String(), ":"),
		strings.ReplaceAll(url.QueryEscape(pw), "+", "%20"), strings.ToLower(url.QueryEscape(pw)),
		strconv.Quote(pw)[1 : len(strconv.Quote(pw))-1], base64.StdEncoding.EncodeToString([]byte(pw))}
	if strings.Contains(pw, "\n") {
		forms = append(forms, strings.Split(pw, "\n")...)
	}
	return forms
}

// fullyEscaped percent-escapes every byte but letters, digits and - _ . ~
// ('+' would stay a '+' in a URL's user information).
func fullyEscaped(pw string) string {
	return strings.ReplaceAll(url.QueryEscape(pw), "+", "%20")
}

func requireNoPassword(t *testing.T, pw, where, text string) {
	t.Helper()
	for _, f := range passwordForms(pw) {
		require.NotContains(t, text, f, "%s shows the password %q as %q:\n%s", where, pw, f, text)
	}
}

// TestALedgerPasswordIsNeverShownHoweverItIsWritten: a password written
// unescaped in --ledger (/ ? # read as path, query and fragment by
// url.Parse), or escaped, given by the flag, --ledger=, RELCAP_LEDGER or
// relcap.yaml, for a server that does not answer: the error shows it in
// no form (issue 26, attack 4: the unescaped one was printed in clear).
func TestALedgerPasswordIsNeverShownHoweverItIsWritten(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	for i, pw := range ledgerPasswords {
		for _, written := range []string{"raw", "escaped", "fully-escaped"} {
			var u string
			switch written {
			case "raw":
				u = fmt.Sprintf("postgres://relcap:%s@127.0.0.1:%d/relcap", pw, closed)
			case "escaped":
				u = fmt.Sprintf("postgres://%s@127.0.0.1:%d/relcap", url.UserPassword("relcap", pw), closed)
			default:
				u = fmt.Sprintf("postgres://relcap:%s@127.0.0.1:%d/relcap", fullyEscaped(pw), closed)
			}
			for _, source := range []string{"--ledger", "--ledger=", envLedger, "relcap.yaml"} {
				// Named by index: a test's temporary directory is named
				// after it, and shows in messages.
				t.Run(fmt.Sprintf("password %d %s from %s", i, written, source), func(t *testing.T) {
					t.Parallel()
					work, data := t.TempDir(), t.TempDir()
					cfg := filepath.Join(work, "relcap.yaml")
					var args, env []string
					switch source {
					case "--ledger":
						writeLedgerConfig(t, cfg, "")
						args = []string{"--ledger", u}
					case "--ledger=":
						writeLedgerConfig(t, cfg, "")
						args = []string{"--ledger=" + u}
					case envLedger:
						writeLedgerConfig(t, cfg, "")
						env = []string{envLedger + "=" + u}
					default:
						writeLedgerConfig(t, cfg, "ledger: "+strconv.Quote(u)+"\n")
					}
					code, out, errOut := invokeEnv(t, data, env, append(args, "-c", cfg, "journal", "list")...)
					require.NotEqual(t, 0, code, out+errOut)
					requireNoPassword(t, pw, "the output", out+errOut)
					require.NotContains(t, out+errOut, "goroutine")
					require.Empty(t, listTree(t, data), "nothing created in the data directory")
				})
			}
		}
	}
}

// TestALedgerPasswordStaysOutOfTheJournalAndTheLedger: with a reachable
// PostgreSQL whose role has each password, the command line that
// session.opened journals (--ledger's URL included) keeps the password in
// no form, in the journal file and in every row of the team ledger
// (issue 26, attack 4: its percent-escaped form was journaled in clear).
func TestALedgerPasswordStaysOutOfTheJournalAndTheLedger(t *testing.T) {
	t.Parallel()
	admin := pgtest.Server(t)
	for i, pw := range ledgerPasswords {
		for _, written := range []string{"userinfo", "fully-escaped"} {
			t.Run(fmt.Sprintf("password %d %s", i, written), func(t *testing.T) {
				role := fmt.Sprintf("relcap_pw_%d_%d_%s", os.Getpid(), i, strings.ReplaceAll(written, "-", "_"))
				t.Cleanup(func() {
					conn, err := pgx.Connect(context.Background(), admin)
					if err == nil {
						_, _ = conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
						_ = conn.Close(context.Background())
					}
				})
				dbURL := pgtest.Database(t)
				base, err := url.Parse(dbURL)
				require.NoError(t, err)
				conn, err := pgx.Connect(t.Context(), dbURL)
				require.NoError(t, err)
				defer conn.Close(context.Background())
				_, err = conn.Exec(t.Context(), "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN PASSWORD '"+strings.ReplaceAll(pw, "'", "''")+"'")
				require.NoError(t, err)
				_, err = conn.Exec(t.Context(), "ALTER DATABASE "+pgx.Identifier{strings.TrimPrefix(base.Path, "/")}.Sanitize()+" OWNER TO "+pgx.Identifier{role}.Sanitize())
				require.NoError(t, err)

				u := fmt.Sprintf("postgres://%s@%s%s?%s", url.UserPassword(role, pw), base.Host, base.Path, base.RawQuery)
				if written == "fully-escaped" {
					u = fmt.Sprintf("postgres://%s:%s@%s%s?%s", role, fullyEscaped(pw), base.Host, base.Path, base.RawQuery)
				}
				data := t.TempDir()
				seedRelease(t, u, "r1", "prod")
				code, out, errOut := invokeEnv(t, data, nil, "--ledger", u, "effort", "log", "--release", "r1", "--minutes", "5", "--what", "call")
				require.Equal(t, 0, code, out+errOut)
				requireNoPassword(t, pw, "the output", out+errOut)
				code, out, errOut = invokeEnv(t, data, nil, "--ledger", u, "journal", "verify")
				require.Equal(t, 0, code, out+errOut)
				requireNoPassword(t, pw, "journal verify", out+errOut)

				journals, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*", "journal.jsonl"))
				require.NoError(t, err)
				require.NotEmpty(t, journals)
				for _, j := range journals {
					b, err := os.ReadFile(j)
					require.NoError(t, err)
					require.Contains(t, string(b), "--ledger", "the command line is journaled")
					requireNoPassword(t, pw, j, string(b))
				}
				requireNoPassword(t, pw, "the ledger", dumpDatabase(t, conn))
			})
		}
	}
}

// dumpDatabase returns every row of every table of conn's database as JSON
// text.
func dumpDatabase(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')`)
	require.NoError(t, err)
	var tables [][2]string
	for rows.Next() {
		var s, n string
		require.NoError(t, rows.Scan(&s, &n))
		tables = append(tables, [2]string{s, n})
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, tables)
	var b strings.Builder
	for _, tb := range tables {
		rows, err := conn.Query(t.Context(), "SELECT row_to_json(t)::text FROM "+pgx.Identifier{tb[0], tb[1]}.Sanitize()+" t")
		require.NoError(t, err)
		for rows.Next() {
			var line string
			require.NoError(t, rows.Scan(&line))
			b.WriteString(line + "\n")
		}
		require.NoError(t, rows.Err())
	}
	require.Contains(t, b.String(), "--ledger", "the ledger holds the command line")
	return b.String()
}
