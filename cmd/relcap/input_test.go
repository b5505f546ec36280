package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/input"
)

// hostileValues are what a careless user or an adversary types where an
// identifier or a line of text is expected.
var hostileValues = map[string]string{
	"newline":      "a\nb",
	"traversal":    "../x",
	"clear screen": "\x1b[2J",
	"window title": "\x1b]0;title\a",
	"10 kB":        strings.Repeat("w", 10<<10),
}

// ledgerRows counts every row of every table of the SQLite ledger at path.
func ledgerRows(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	require.NoError(t, err)
	var tables []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	total := 0
	for _, table := range tables {
		var n int
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM "`+table+`"`).Scan(&n))
		total += n
	}
	return total
}

// TestTypedIdentifiersAndTextAreCheckedBeforeAnythingIsRecorded: every
// flag and argument that takes an identifier (release, plan, session,
// rehearsal, environment, drill, principal, lock) or a line of text,
// given a newline, a path traversal, a clear-screen escape, a
// window-title escape or 10 kB: exit 2, one line on stderr naming the
// flag, the value quoted with its escapes visible and cut short, no raw
// escape or newline of it on the terminal, nothing in the ledger and no
// session journal. Before, effort log --release took all of them, echoed
// them raw and stored them.
func TestTypedIdentifiersAndTextAreCheckedBeforeAnythingIsRecorded(t *testing.T) {
	t.Parallel()
	dir := releaseRepo(t, validConfig)
	cfg := filepath.Join(dir, "relcap.yaml")
	data := t.TempDir()
	ledger := filepath.Join(data, "ledger.db")
	seedRelease(t, ledger, "web-prod-20261130-1a2b3c", "prod")
	code, _, errOut := invoke(t, data, "--ledger", ledger, "-c", cfg, "effort", "log", "--release", "web-prod-20261130-1a2b3c", "--minutes", "30", "--what", "go/no-go call")
	require.Equal(t, 0, code, errOut)
	rows := ledgerRows(t, ledger)
	sessions, err := filepath.Glob(filepath.Join(data, "sessions", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, sessions)

	fp := strings.Repeat("ab", 32)
	const X = "\x00VALUE\x00"
	commands := map[string][]string{
		"effort log --release":        {"effort", "log", "--release", X, "--minutes", "1", "--what", "chat"},
		"effort log --what":           {"effort", "log", "--release", "web-prod-1", "--minutes", "1", "--what", X},
		"effort log --person":         {"effort", "log", "--release", "web-prod-1", "--minutes", "1", "--what", "chat", "--person", X},
		"--actor":                     {"--actor", X, "effort", "log", "--release", "web-prod-1", "--minutes", "1", "--what", "chat"},
		"plan --env":                  {"plan", "--env", X},
		"plan --release":              {"plan", "--env", "staging", "--release", X},
		"approve --plan":              {"approve", "--plan", X},
		"approve --release":           {"approve", "--release", X},
		"approve --comment":           {"approve", "--plan", fp, "--comment", X},
		"apply --plan":                {"apply", "--plan", X},
		"review --plan":               {"review", "--plan", X},
		"review --release":            {"review", "--release", X},
		"promote --env":               {"promote", "--env", X, "--image", "r/web:1"},
		"promote --image":             {"promote", "--env", "staging", "--image", X},
		"promote --release":           {"promote", "--env", "staging", "--image", "r/web:1", "--release", X},
		"promote --force-unverified":  {"promote", "--env", "staging", "--image", "r/web:1", "--force-unverified", X},
		"converge --release":          {"converge", "--env", "staging", "--release", X},
		"converge --revision":         {"converge", "--env", "staging", "--revision", X},
		"rollback --to":               {"rollback", "--env", "prod", "--to", X},
		"rehearse --drill":            {"rehearse", "--env", "staging", "--drill", X},
		"rehearse --resume":           {"rehearse", "--resume", X},
		"rehearse --cleanup":          {"rehearse", "--cleanup", X},
		"rehearse --i-know":           {"rehearse", "--env", "prod", "--drill", "failed-apply", "--i-know", X},
		"breakglass start --reason":   {"breakglass", "start", "--env", "prod", "--reason", X, "--ttl", "1h"},
		"breakglass start --approver": {"breakglass", "start", "--env", "prod", "--reason", "down", "--ttl", "1h", "--approver", X},
		"unlock --lock-id":            {"unlock", "--env", "staging", "--lock-id", X, "--confirm-holder-gone", "--reason", "gone"},
		"unlock --reason":             {"unlock", "--env", "staging", "--lock-id", "1b2c", "--confirm-holder-gone", "--reason", X},
		"resume RELEASE":              {"resume", X},
		"journal show SESSION":        {"journal", "show", X},
		"journal verify SESSION":      {"journal", "verify", X},
		"journal replay SESSION":      {"journal", "replay", X},
		"report effort --person":      {"report", "effort", "--person", X},
	}
	for name, args := range commands {
		for what, v := range hostileValues {
			if what == "traversal" && isFreeText(name) {
				continue // "../x" is fine text, though no identifier
			}
			argv := []string{"--ledger", ledger, "-c", cfg}
			for _, a := range args {
				if a == X {
					a = v
				}
				argv = append(argv, a)
			}
			code, out, errOut := invoke(t, data, argv...)
			label := name + " with " + what
			require.Equal(t, exitUsage, code, "%s: %s%s", label, out, errOut)
			require.Equal(t, 1, strings.Count(errOut, "\n"), "%s: one line: %q", label, errOut)
			require.NotContains(t, errOut, "\x1b", label)
			require.NotContains(t, errOut, "\a", label)
			require.NotContains(t, out+errOut, "a\nb", label)
			require.Less(t, len(errOut), 600, "%s: the value is cut short: %q", label, errOut)
			flag := name[strings.LastIndex(name, " ")+1:]
			if strings.HasPrefix(flag, "--") {
				require.Contains(t, errOut, flag, label)
			}
			if what == "clear screen" {
				require.Contains(t, errOut, `"\x1b[2J"`, "%s: quoted with the escape visible", label)
			}
		}
	}
	require.Equal(t, rows, ledgerRows(t, ledger), "nothing recorded")
	after, err := filepath.Glob(filepath.Join(data, "sessions", "*"))
	require.NoError(t, err)
	require.Equal(t, sessions, after, "no session opened")
	_, err = os.Stat(ledger + ".locks")
	require.True(t, os.IsNotExist(err), "no lock taken")
}

func isFreeText(name string) bool {
	for _, f := range []string{"--what", "--comment", "--reason", "--i-know", "--force-unverified", "--image", "--revision"} {
		if strings.HasSuffix(name, f) {
			return true
		}
	}
	return false
}

// TestTerminalSafeMakesEscapesVisible: the one function every text from a
// person, a file or a tool goes through on its way to the terminal keeps
// newlines and tabs and makes every escape, control character, bidi
// override and invalid byte visible.
func TestTerminalSafeMakesEscapesVisible(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain\ttext\nline 2": "plain\ttext\nline 2",
		"\x1b[2J":             `\x1b[2J`,
		"\x1b]0;title\a":      `\x1b]0;title\a`,
		"over\rwrite":         `over\rwrite`,
		"csi \u009b31m":       `csi \u009b31m`,
		"bidi \u202egnp.exe":  `bidi \u202egnp.exe`,
		"bad \xff byte":       `bad \xff byte`,
		"café ✓ 日本":           "café ✓ 日本",
	} {
		require.Equal(t, want, input.TerminalSafe(in), "%q", in)
	}
	var b strings.Builder
	_, err := plainSafe(&b).Write([]byte("reason: \x1b[31mred\n"))
	require.NoError(t, err)
	require.Equal(t, `reason: \x1b[31mred`+"\n", b.String())
}

var plainSafe = plain.SafeWriter

// TestEscapesInAToolsOutputNeverReachTheTerminalRaw: a Terraform plan
// document whose resource address and module carry a clear-screen escape,
// a window-title escape, a carriage return and a bidi override (names a
// module author chose): relcap plan --from-json prints the review on
// stdout and its findings on stderr with every one of them made visible.
func TestEscapesInAToolsOutputNeverReachTheTerminalRaw(t *testing.T) {
	t.Parallel()
	doc := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(doc, []byte(`{"format_version":"1.2","terraform_version":"1.11.4","planned_values":{"root_module":{}},
"resource_changes":[{"address":"module.m[\"\u001b[2J\u001b]0;owned\u0007\"].aws_iam_role.r\r\u202eforged","mode":"managed","type":"aws_iam_role","name":"r","provider_name":"registry.terraform.io/hashicorp/aws",
"change":{"actions":["delete"],"before":{"name":"x"},"after":null}}]}`), 0o644))
	code, out, errOut := invoke(t, t.TempDir(), "plan", "--from-json", doc)
	t.Logf("exit %d\n%s\n%s", code, out, errOut)
	require.Contains(t, out, `\x1b[2J\x1b]0;owned\a`, "the address is shown, its escapes visible")
	for _, raw := range []string{"\x1b", "\a", "\r", "\u202e"} {
		require.NotContains(t, out+errOut, raw)
	}
}
