package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
)

func TestMain(m *testing.M) {
	if os.Getenv(relcapProcessEnv) == "1" {
		main() // exits
	}
	if err := buildArgoHelper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := pgtest.Main(m)
	os.Exit(code)
}

// ledgerFlow runs plan → approve → apply as the command line does, with
// extra (the ledger's flag) before every command, and returns what journal
// verify printed, the effort report's JSON and the data directory.
func ledgerFlow(t *testing.T, env []string, extra ...string) (verify, effortJSON, data string) {
	t.Helper()
	cfg, tfEnv, _ := tfRepo(t, 1, true)
	data = t.TempDir()
	env = append(tfEnv, env...)
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return invokeEnv(t, data, env, append(append([]string{}, extra...), args...)...)
	}
	code, out, errOut := run("-c", cfg, "--actor", "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan struct{ Fingerprint, Release string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))

	code, _, errOut = run("-c", cfg, "--actor", "alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "unapproved: "+errOut)
	code, out, errOut = run("-c", cfg, "--actor", "bob", "approve", "--plan", plan.Fingerprint, "--comment", "checked")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "(1 of 1 required)")
	code, out, errOut = run("-c", cfg, "--actor", "alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied plan")
	code, _, errOut = run("-c", cfg, "--actor", "alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "never applied twice")
	require.Contains(t, errOut, "already applied")
	code, _, errOut = run("--actor", "bob", "effort", "log", "--release", plan.Release, "--minutes", "25", "--what", "change board")
	require.Equal(t, 0, code, errOut)

	code, verify, errOut = run("journal", "verify")
	require.Equal(t, 0, code, errOut)
	code, effortJSON, errOut = run("-c", cfg, "report", "effort", "--format", "json")
	require.Equal(t, 0, code, errOut)
	for _, s := range []string{verify, effortJSON, errOut} {
		require.NotContains(t, s, "hunter2-very-secret")
	}
	return verify, effortJSON, data
}

// sessionID and the release and plan names differ from run to run.
var (
	sessionIDs = regexp.MustCompile(`\d{8}T\d{6}Z-[0-9a-f]{6}`)
	releaseIDs = regexp.MustCompile(`web-staging-\d{8}-[0-9a-f]{6}`)
)

// comparableEffort is the effort report with what differs between two runs
// of one flow taken out: the release's name, drawn at random, and the times
// measured (machine wait, elapsed time, the instants of the report and the
// release), whose presence is kept. Staff time is exact: the commands run
// without a terminal are unmeasured, and the off-tool minutes are logged.
func comparableEffort(t *testing.T, doc string) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(releaseIDs.ReplaceAllString(doc, "RELEASE")), &v))
	var walk func(x any, measured bool) any
	walk = func(x any, measured bool) any {
		switch x := x.(type) {
		case map[string]any:
			for k, val := range x {
				m := measured || strings.Contains(k, "machine_wait") || strings.Contains(k, "elapsed") ||
					k == "generated_at" || k == "created_at" || k == "to"
				x[k] = walk(val, m)
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i], measured)
			}
		case float64:
			if measured {
				return "measured"
			}
		case string:
			if measured {
				return "measured"
			}
		}
		return x
	}
	return walk(v, false).(map[string]any)
}

// TestPlanApproveApplyOnPostgresAgreesWithSQLite runs the command-line
// flow of TestPlanApproveApplyThroughTheCommandLine once on SQLite and
// once on a PostgreSQL ledger (--ledger postgres://…): journal verify
// finds the same sessions intact with the same entries, and the effort
// reports agree (releases, people, steps, the off-tool minutes logged).
// The password of the URL shows nowhere.
func TestPlanApproveApplyOnPostgresAgreesWithSQLite(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.Database(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	pw, ok := u.User.Password()
	require.True(t, ok)

	sqliteVerify, sqliteEffort, _ := ledgerFlow(t, nil)
	pgVerify, pgEffort, data := ledgerFlow(t, nil, "--ledger", dbURL)
	for _, s := range []string{pgVerify, pgEffort} {
		require.NotContains(t, s, pw)
	}
	// Each journal records its command line, --ledger's URL included:
	// masked. The journals stay on this machine, under XDG_DATA_HOME.
	journals, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*", "journal.jsonl"))
	require.NoError(t, err)
	require.Len(t, journals, 5, "the apply refused as already applied records nothing, so has no journal")
	for _, j := range journals {
		b, err := os.ReadFile(j)
		require.NoError(t, err)
		require.NotContains(t, string(b), pw, j)
		require.Contains(t, string(b), "postgres://relcap:(sensitive)@", "the URL is journaled with its password masked")
	}
	_, err = os.Stat(filepath.Join(data, "relcap", "ledger.db"))
	require.True(t, os.IsNotExist(err), "no SQLite ledger beside them")
	t.Logf("verify on PostgreSQL:\n%s", pgVerify)

	norm := func(s string) string { return sessionIDs.ReplaceAllString(s, "SESSION") }
	require.Equal(t, norm(sqliteVerify), norm(pgVerify))
	require.Equal(t, 5, strings.Count(pgVerify, "ok "), "plan, the refused apply, approve, apply, effort log (the apply refused as already applied records nothing: no session)")
	effort := comparableEffort(t, pgEffort)
	require.Equal(t, comparableEffort(t, sqliteEffort), effort)
	require.Equal(t, float64(1500), effort["off_tool_per_release"].(map[string]any)["total_seconds"], "bob's 25 minutes")
	require.Equal(t, float64(1), effort["releases"].(map[string]any)["total"])

	// The records are in the database, not in a file beside the journals.
	l, err := store.OpenPostgres(t.Context(), dbURL)
	require.NoError(t, err)
	defer l.Close()
	releases, err := l.ListReleases(t.Context(), workflow.ReleaseFilter{})
	require.NoError(t, err)
	require.Len(t, releases, 1)
	require.Equal(t, workflow.ReleaseKind("release"), releases[0].Kind)
	approvals, err := l.Approvals(t.Context(), approval.Plan, releases[0].Checkpoints.Fingerprint)
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	require.Equal(t, "bob", approvals[0].Approver)
	sessions, err := l.Sessions(t.Context())
	require.NoError(t, err)
	require.Len(t, sessions, 5)
}

// TestTheLedgerComesFromTheFlagThenTheEnvironmentThenTheConfiguration:
// --ledger wins over RELCAP_LEDGER, which wins over relcap.yaml's ledger:
// (a path there is relative to the file), which wins over the default.
func TestTheLedgerComesFromTheFlagThenTheEnvironmentThenTheConfiguration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "relcap.yaml")
	writeLedgerConfig(t, cfg, "ledger: from-config/ledger.db\n")
	data := t.TempDir()
	flag, env := filepath.Join(dir, "from-flag", "ledger.db"), filepath.Join(dir, "from-env", "ledger.db")
	fromConfig, byDefault := filepath.Join(dir, "from-config", "ledger.db"), filepath.Join(data, "relcap", "ledger.db")
	// Every candidate holds the release (effort log refuses one its
	// ledger does not), so where the effort row lands says which won.
	for _, l := range []string{flag, env, fromConfig, byDefault} {
		seedRelease(t, l, "r1", "prod")
	}
	logEffort := func(env []string, args ...string) {
		t.Helper()
		code, out, errOut := invokeEnv(t, data, env, append(args, "-c", cfg, "effort", "log", "--release", "r1", "--minutes", "5", "--what", "call")...)
		require.Equal(t, 0, code, out+errOut)
	}
	logged := func() []int {
		var n []int
		for _, l := range []string{flag, env, fromConfig, byDefault} {
			n = append(n, effortRows(t, l))
		}
		return n
	}

	logEffort([]string{envLedger + "=" + env}, "--ledger", flag)
	require.Equal(t, []int{1, 0, 0, 0}, logged(), "--ledger wins")
	logEffort([]string{envLedger + "=" + env})
	require.Equal(t, []int{1, 1, 0, 0}, logged(), "then RELCAP_LEDGER")
	logEffort(nil)
	require.Equal(t, []int{1, 1, 1, 0}, logged(), "then relcap.yaml's ledger:, relative to relcap.yaml")
	writeLedgerConfig(t, cfg, "")
	logEffort(nil)
	require.Equal(t, []int{1, 1, 1, 1}, logged(), "then the default")
}

// effortRows counts the effort entries in the SQLite ledger at path.
func effortRows(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM effort`).Scan(&n))
	return n
}

// writeLedgerConfig writes a minimal relcap.yaml with extra top-level keys.
func writeLedgerConfig(t *testing.T, path, extra string) {
	t.Helper()
	dir := filepath.Dir(path)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ownership.yaml"), []byte(validOwnership), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "infra"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "env"), 0o755))
	cfg := "version: 1\napp: web\nownership: ownership.yaml\n" + extra + `environments:
  - name: staging
    terraform: {dir: infra}
    registry: {repository: registry.example.com/web}
    envrepo: {path: env, file: kustomization.yaml, image: web, format: kustomize}
    argocd: {server: argocd.example.com:443, app: web-staging}
`
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
}

// TestALedgerThatCannotBeUsedSaysWhyAndCreatesNothing: a URL given by the
// flag, the environment or relcap.yaml that cannot be read is a usage error
// (exit 2), a server that does not answer an error (exit 1); every message
// names what set the ledger, shows the URL with its password masked and
// says what to do, and nothing is created, least of all a directory named
// after the URL (a password in its name).
func TestALedgerThatCannotBeUsedSaysWhyAndCreatesNothing(t *testing.T) {
	t.Parallel()
	const pw = "s3cret-ledger-pw"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	unreachable := fmt.Sprintf("postgres://relcap:%s@127.0.0.1:%d/relcap", pw, closed)

	for _, tc := range []struct {
		name, url string
		code      int
		want      []string
		// configProblem: relcap.yaml's loader refuses it, at its line.
		configProblem bool
	}{
		{"malformed", "postgresql://relcap:" + pw + "@db.internal:notaport/relcap", exitUsage, []string{"postgresql://xxxxx@db.internal:notaport/relcap is not a URL", "postgres://USER@HOST:PORT/DATABASE"}, true},
		{"bad parameter", "postgres://relcap:" + pw + "@db.internal/relcap?sslmode=maybe", exitUsage, []string{"postgres://relcap:xxxxx@db.internal/relcap?sslmode=maybe", "sslmode"}, false},
		{"unsupported", "mysql://relcap:" + pw + "@db.internal/relcap", exitUsage, []string{"a mysql:// ledger is not supported", "mysql://relcap:xxxxx@db.internal/relcap"}, true},
		{"unreachable", unreachable, exitError, []string{fmt.Sprintf("postgres://relcap:xxxxx@127.0.0.1:%d/relcap: cannot reach the PostgreSQL server at 127.0.0.1:%d", closed, closed), "check the host and port"}, false},
	} {
		for _, source := range []string{"--ledger", envLedger, "relcap.yaml"} {
			t.Run(tc.name+" from "+source, func(t *testing.T) {
				t.Parallel()
				work, data := t.TempDir(), t.TempDir()
				cfg := filepath.Join(work, "relcap.yaml")
				var args, env []string
				switch source {
				case "--ledger":
					writeLedgerConfig(t, cfg, "")
					args = []string{"--ledger", tc.url}
				case envLedger:
					writeLedgerConfig(t, cfg, "")
					env = []string{envLedger + "=" + tc.url}
				default:
					writeLedgerConfig(t, cfg, "ledger: "+tc.url+"\n")
				}
				before := listTree(t, work)
				code, out, errOut := invokeEnv(t, data, env, append(args, "-c", cfg, "journal", "list")...)
				require.Equal(t, tc.code, code, out+errOut)
				msg := out + errOut
				require.NotContains(t, msg, pw)
				require.NotContains(t, msg, "goroutine")
				switch {
				case source != "relcap.yaml":
					require.Contains(t, msg, "relcap: "+source+": ")
				case tc.configProblem:
					require.Contains(t, msg, cfg+":4:9: ledger: ", "the configuration's own problem, at its line")
				default:
					require.Contains(t, msg, "relcap: "+cfg+": ledger: ")
				}
				if !tc.configProblem || source != "relcap.yaml" {
					for _, w := range tc.want {
						require.Contains(t, msg, w)
					}
				}
				require.Equal(t, before, listTree(t, work), "nothing created beside relcap.yaml")
				require.Empty(t, listTree(t, data), "nothing created in the data directory")
			})
		}
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	for _, name := range []string{"postgres:", "postgresql:", "mysql:"} {
		_, err = os.Stat(filepath.Join(wd, name))
		require.True(t, os.IsNotExist(err), "no directory named after a URL")
	}
}

// listTree lists the files and directories under dir.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	}))
	return out
}

// TestATeammateVerifiesAndReadsSessionsRecordedOnAnotherMachine: alice
// logs effort on her machine; bob, on his (another data directory and the
// same PostgreSQL ledger; for SQLite, whose journals sit beside the file,
// the same file with alice's journals moved away), has no journal file of
// hers, and journal verify checks her session from the ledger's copy and
// says so; journal show prints it from there. On alice's machine the file
// and the copy are both checked, and an edit of the ledger's copy is
// tampering named with the session and the line.
func TestATeammateVerifiesAndReadsSessionsRecordedOnAnotherMachine(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ledger := filepath.Join(t.TempDir(), "team", "ledger.db")
			if backend == "postgres" {
				ledger = pgtest.Database(t)
			}
			alice, bob := t.TempDir(), t.TempDir()
			seedRelease(t, ledger, "r1", "prod")
			code, _, errOut := invokeEnv(t, alice, nil, "--ledger", ledger, "--actor", "alice", "effort", "log", "--release", "r1", "--minutes", "30", "--what", "go/no-go call")
			require.Equal(t, 0, code, errOut)
			asBob := func(args ...string) (int, string, string) {
				t.Helper()
				if backend == "sqlite" {
					sessions := filepath.Join(filepath.Dir(ledger), "sessions")
					require.NoError(t, os.Rename(sessions, sessions+".alice"))
					defer func() { require.NoError(t, os.Rename(sessions+".alice", sessions)) }()
				}
				return invokeEnv(t, bob, nil, append([]string{"--ledger", ledger}, args...)...)
			}

			code, out, errOut := asBob("journal", "verify")
			require.Equal(t, 0, code, out+errOut)
			require.Regexp(t, `ok       \S+  \d+ entries  \(from the ledger's copy: the journal file is not on this machine\)`, out)
			code, out, errOut = asBob("--json", "journal", "verify")
			require.Equal(t, 0, code, out+errOut)
			var list []struct {
				Session, Journal string
				Intact           bool
				Checks           map[string]struct{ Status, Detail string }
			}
			require.NoError(t, json.Unmarshal([]byte(out), &list))
			require.Len(t, list, 1)
			id := list[0].Session
			require.Equal(t, "ledger", list[0].Journal)
			require.True(t, list[0].Intact)
			require.Contains(t, list[0].Checks["ledger_copy"].Detail, "verified from the ledger's copy")

			code, out, errOut = asBob("journal", "show", id)
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "go/no-go call")
			require.Contains(t, errOut, "session "+id+" was recorded on another machine")
			code, _, errOut = asBob("journal", "replay", id)
			require.Equal(t, exitUsage, code)
			require.Contains(t, errOut, "session "+id+" has no screen recording (only cockpit sessions do)", "its journal, read from the ledger, names none")
			code, _, errOut = asBob("journal", "show", "20261130T000000Z-000000")
			require.Equal(t, exitUsage, code, "an unknown session is a usage error, as an unknown release is")
			require.Contains(t, errOut, "no journal for session 20261130T000000Z-000000")

			code, out, errOut = invokeEnv(t, alice, nil, "--ledger", ledger, "--json", "journal", "verify")
			require.Equal(t, 0, code, out+errOut)
			require.NoError(t, json.Unmarshal([]byte(out), &list))
			require.Equal(t, "file", list[0].Journal)
			require.Contains(t, list[0].Checks["ledger_copy"].Detail, "agrees with the file, line for line")

			// Someone with the database edits the ledger's copy of entry 2.
			db, err := sql.Open(map[string]string{"sqlite": "sqlite", "postgres": "pgx"}[backend], ledger)
			require.NoError(t, err)
			defer db.Close()
			for _, q := range map[string][]string{
				"sqlite":   {`DROP TRIGGER journal_entries_no_update`},
				"postgres": {`DROP TRIGGER journal_entries_no_update ON journal_entries`},
			}[backend] {
				_, err = db.ExecContext(t.Context(), q)
				require.NoError(t, err)
			}
			res, err := db.ExecContext(t.Context(), `UPDATE journal_entries SET line = replace(line, 'go/no-go', 'go/go') WHERE seq = 2`)
			require.NoError(t, err)
			n, err := res.RowsAffected()
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			code, out, _ = invokeEnv(t, alice, nil, "--ledger", ledger, "journal", "verify")
			require.Equal(t, exitBlocked, code, out)
			require.Contains(t, out, "TAMPERED "+id)
			require.Contains(t, out, "line 2 (entry 2): differs from the ledger's copy of entry 2: the ledger's copy was edited")
			code, out, _ = asBob("journal", "verify")
			require.Equal(t, exitBlocked, code, out)
			require.Contains(t, out, "TAMPERED "+id+"  the ledger's copy: line 2 (entry 2): in the ledger's copy: content does not match its hash")

			// A cockpit session of alice's, with its screen recording: the
			// recording stays on her machine.
			aliceSessions := filepath.Join(alice, "relcap", "sessions")
			open := func() (*store.Ledger, error) { return store.OpenPostgres(t.Context(), ledger) }
			if backend == "sqlite" {
				aliceSessions = filepath.Join(filepath.Dir(ledger), "sessions")
				open = func() (*store.Ledger, error) { return store.OpenSQLite(t.Context(), ledger) }
			}
			l, err := open()
			require.NoError(t, err)
			j, err := store.OpenSession(t.Context(), l, aliceSessions, workflow.Session{Actor: "alice", Command: "cockpit"}, workflow.SystemClock{})
			require.NoError(t, err)
			rec, err := j.StartRecording()
			require.NoError(t, err)
			_, err = rec.Write([]byte(`{"version":2,"width":80,"height":24}` + "\n"))
			require.NoError(t, err)
			require.NoError(t, rec.Finish(t.Context(), "r1"))
			require.NoError(t, j.Close(t.Context()))
			require.NoError(t, l.Close())
			cockpit := j.SessionID()
			code, out, errOut = asBob("journal", "verify", cockpit)
			require.Equal(t, 0, code, out+errOut)
			require.Contains(t, errOut, "warning  "+cockpit+"  ")
			require.Contains(t, errOut, "recordings not checked: screen.cast recorded on another machine, not checked here")
			code, _, errOut = asBob("journal", "replay", cockpit)
			require.Equal(t, exitUsage, code)
			require.Contains(t, errOut, "session "+cockpit+" was recorded on another machine; its screen recording (screen.cast) stays there")
			code, _, errOut = invokeEnv(t, alice, nil, "--ledger", ledger, "journal", "replay", cockpit, "--speed", "0")
			require.Equal(t, 0, code, errOut)
		})
	}
}
