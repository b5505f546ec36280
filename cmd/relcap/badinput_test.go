package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/workflow"
)

// anchorCommits counts the commits on the environment repository's
// refs/relcap/journal (0 when there is none).
func anchorCommits(t *testing.T, repo string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "rev-list", "--count", "refs/relcap/journal").Output()
	if err != nil {
		return "0"
	}
	return strings.TrimSpace(string(out))
}

// sessionDirs are the session directories beside the ledger.
func sessionDirs(t *testing.T, ledger string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(filepath.Dir(ledger), "sessions", "*"))
	require.NoError(t, err)
	return dirs
}

// seededRepo is a release repository (tfRepo) and a ledger in data that
// holds one staging release, for the tests that check bad input records
// nothing beside it.
func seededRepo(t *testing.T) (cfg string, env []string, envRepo, data, ledger string) {
	t.Helper()
	cfg, env, _ = tfRepo(t, 1, false)
	envRepo = envRepoOf(t, cfg)
	data = t.TempDir()
	ledger = filepath.Join(data, "relcap", "ledger.db")
	seedRelease(t, ledger, "web-staging-1", "staging")
	return cfg, env, envRepo, data, ledger
}

// TestBadInputRecordsNothing: every kind of bad input a newcomer types (an
// image reference that is none, a negative or non-numeric number, a bad
// duration, a release or an environment that does not exist, Argo CD's
// token unset, a misspelt command followed by flags) is exit 2 with one
// line on stderr, and leaves the ledger (every row of every table:
// releases, sessions, journal entries, effort), the session files and the
// environment repository's journal anchors exactly as they were. Before,
// each started a release and failed it, or opened a session whose head
// was anchored.
func TestBadInputRecordsNothing(t *testing.T) {
	t.Parallel()
	cfg, env, envRepo, data, ledger := seededRepo(t)
	code, _, errOut := invokeEnv(t, data, env, "-c", cfg, "effort", "log", "--release", "web-staging-1", "--minutes", "30", "--what", "go/no-go call")
	require.Equal(t, 0, code, errOut)
	rows, sessions, anchors := ledgerRows(t, ledger), sessionDirs(t, ledger), anchorCommits(t, envRepo)
	require.Len(t, sessions, 1)
	require.Equal(t, "1", anchors, "the recorded session is anchored")

	cases := map[string]struct {
		args  []string
		noEnv bool // without Argo CD's token
		want  string
	}{
		"promote, image with spaces":   {args: []string{"promote", "--env", "staging", "--image", "Not A Ref!!"}, want: "--image"},
		"release, image in capitals":   {args: []string{"release", "--env", "staging", "--image", "Web/App:1!"}, want: "--image"},
		"release, malformed digest":    {args: []string{"release", "--env", "staging", "--image", "web@sha256:xyz"}, want: "--image"},
		"converge, no Argo CD token":   {args: []string{"converge", "--env", "staging"}, noEnv: true, want: "ARGOCD_AUTH_TOKEN"},
		"release, no Argo CD token":    {args: []string{"release", "--env", "staging", "--image", "r/web:1"}, noEnv: true, want: "ARGOCD_AUTH_TOKEN"},
		"plan, unknown env":            {args: []string{"plan", "--env", "qa"}, want: `"qa"`},
		"promote, unknown env":         {args: []string{"promote", "--env", "qa", "--image", "r/web:1"}, want: `"qa"`},
		"promote, unknown release":     {args: []string{"promote", "--env", "staging", "--image", "r/web:1", "--release", "web-staging-20990101-abcdef"}, want: "--release"},
		"converge, unknown release":    {args: []string{"converge", "--env", "staging", "--release", "web-staging-20990101-abcdef"}, want: "--release"},
		"rollback, unknown release":    {args: []string{"rollback", "--env", "staging", "--to", "nosuch"}, want: "--to"},
		"resume, unknown release":      {args: []string{"resume", "nosuch-1"}, want: "nosuch-1"},
		"effort log, negative minutes": {args: []string{"effort", "log", "--release", "r1", "--minutes", "-5", "--what", "x"}, want: "--minutes"},
		"effort log, minutes abc":      {args: []string{"effort", "log", "--release", "r1", "--minutes", "abc", "--what", "x"}, want: "e.g. --minutes 30"},
		"effort log, unknown release":  {args: []string{"effort", "log", "--release", "web-staging-20990101-abcdef", "--minutes", "5", "--what", "x"}, want: "--release"},
		"report, unknown env":          {args: []string{"report", "effort", "--env", "qa"}, want: `"qa"`},
		"release, timeout 5x":          {args: []string{"release", "--env", "staging", "--image", "r/web:1", "--timeout", "5x"}, want: "e.g. --timeout 10m"},
		"release, negative timeout":    {args: []string{"release", "--env", "staging", "--image", "r/web:1", "--timeout", "-1m"}, want: "--timeout"},
		"release, schema abc":          {args: []string{"release", "--env", "staging", "--image", "r/web:1", "--schema", "abc"}, want: "--schema"},
		"converge, zero timeout":       {args: []string{"converge", "--env", "staging", "--timeout", "0s"}, want: "--timeout"},
		"breakglass, ttl abc":          {args: []string{"breakglass", "start", "--env", "staging", "--reason", "down", "--ttl", "abc"}, want: "--ttl"},
		"rehearse, timeout abc":        {args: []string{"rehearse", "--env", "staging", "--drill", "failed-apply", "--timeout", "abc"}, want: "--timeout"},
		"report, baseline abc":         {args: []string{"report", "effort", "--baseline", "abc"}, want: "--baseline"},
		"replay, negative speed":       {args: []string{"journal", "replay", "x", "--speed", "-1"}, want: "--speed"},
		"misspelt command with flags":  {args: []string{"plna", "--env", "staging"}, want: `did you mean "plan"`},
	}
	for name, c := range cases {
		e := env
		if c.noEnv {
			e = nil
		}
		code, out, errOut := invokeEnv(t, data, e, append([]string{"-c", cfg}, c.args...)...)
		require.Equal(t, exitUsage, code, "%s: %s%s", name, out, errOut)
		require.Equal(t, 1, strings.Count(errOut, "\n"), "%s: one line: %q", name, errOut)
		require.Contains(t, errOut, c.want, name)
		require.NotContains(t, errOut, "strconv.", "%s: no Go parse error", name)
		require.Equal(t, rows, ledgerRows(t, ledger), "%s: nothing in the ledger", name)
		require.Equal(t, sessions, sessionDirs(t, ledger), "%s: no session", name)
		require.Equal(t, anchors, anchorCommits(t, envRepo), "%s: no anchor commit", name)
	}

	// A command that records nothing leaves no session and no anchor,
	// whatever its exit code: break-glass status with none active.
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "breakglass", "status", "--env", "staging")
	require.NotEqual(t, 0, code, out+errOut)
	require.Equal(t, rows, ledgerRows(t, ledger), "breakglass status: nothing in the ledger")
	require.Equal(t, sessions, sessionDirs(t, ledger), "breakglass status: no session")
	require.Equal(t, anchors, anchorCommits(t, envRepo), "breakglass status: no anchor commit")
}

// TestABrokenTerraformRootRecordsNothing: a Terraform root whose
// configuration does not parse is the user's to fix: plan and release
// say where (file:line:col, never the line itself, which may hold a
// credential) with exit 2, and start no release, session or anchor.
// Before, each started a release and failed it at the ownership check.
func TestABrokenTerraformRootRecordsNothing(t *testing.T) {
	t.Parallel()
	cfg, env, envRepo, data, ledger := seededRepo(t)
	rows, sessions, anchors := ledgerRows(t, ledger), sessionDirs(t, ledger), anchorCommits(t, envRepo)
	broken := filepath.Join(filepath.Dir(cfg), "infra", "staging", "broken.tf")
	require.NoError(t, os.WriteFile(broken, []byte("resource \"terraform_data\" \"x\" {\n  input = \"pw-9f3/+=\" +\n}\n"), 0o644))
	for _, args := range [][]string{{"plan", "--env", "staging"}, {"release", "--env", "staging", "--image", "r/web:1"}} {
		code, out, errOut := invokeEnv(t, data, env, append([]string{"-c", cfg}, args...)...)
		require.Equal(t, exitUsage, code, "%s: %s%s", args[0], out, errOut)
		require.Equal(t, 1, strings.Count(errOut, "\n"), "%s: one line: %q", args[0], errOut)
		require.Contains(t, errOut, "broken.tf:2:24: Invalid expression")
		require.Contains(t, errOut, "fix the Terraform root")
		require.NotContains(t, out+errOut, "pw-9f3")
		require.Equal(t, rows, ledgerRows(t, ledger), "%s: nothing in the ledger", args[0])
		require.Equal(t, sessions, sessionDirs(t, ledger), "%s: no session", args[0])
		require.Equal(t, anchors, anchorCommits(t, envRepo), "%s: no anchor commit", args[0])
	}
}

// TestReadOnlyCommandsNeverCreateALedger: every command that only reads
// the ledger, given a mistyped --ledger path, says exit 2 naming the path
// and creates neither the file nor its directory.
func TestReadOnlyCommandsNeverCreateALedger(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	typo := filepath.Join(data, "typo", "ledgr.db")
	for _, args := range [][]string{
		{"journal", "list"},
		{"journal", "show", "20261130T135527Z-3f9a1c"},
		{"journal", "verify"},
		{"journal", "verify", "20261130T135527Z-3f9a1c"},
		{"journal", "replay", "20261130T135527Z-3f9a1c"},
		{"report", "effort"},
		{"report", "measures"},
	} {
		code, out, errOut := invoke(t, data, append([]string{"--ledger", typo}, args...)...)
		require.Equal(t, exitUsage, code, "%v: %s%s", args, out, errOut)
		require.Equal(t, 1, strings.Count(errOut, "\n"), "%v: one line: %q", args, errOut)
		require.Contains(t, errOut, typo, args)
		_, err := os.Stat(filepath.Dir(typo))
		require.True(t, os.IsNotExist(err), "%v: no directory made", args)
	}
}

// TestVersionFlagMatchesVersionCommand: relcap --version prints what
// relcap version prints.
func TestVersionFlagMatchesVersionCommand(t *testing.T) {
	t.Parallel()
	code, flag, errOut := invoke(t, t.TempDir(), "--version")
	require.Equal(t, 0, code, errOut)
	_, cmd, _ := invoke(t, t.TempDir(), "version")
	require.Equal(t, cmd, flag)
	require.Contains(t, flag, "relcap ")
}

// TestDidYouMeanEvenWithFlags: a misspelt command is named, with the
// command meant, whether or not flags follow it; an unknown flag of a
// known command is still the flag's error.
func TestDidYouMeanEvenWithFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"plna"},
		{"plna", "--env", "dev"},
		{"--ledger", "/nonexistent/l.db", "plna", "--env=dev", "--json"},
		{"-c", "relcap.yaml", "plna", "--bogus"},
	} {
		code, _, errOut := invoke(t, t.TempDir(), args...)
		require.Equal(t, exitUsage, code, "%v", args)
		require.Contains(t, errOut, `unknown command "plna" (did you mean "plan"?)`, "%v", args)
		require.NotContains(t, errOut, "unknown flag", "%v", args)
	}
	code, _, errOut := invoke(t, t.TempDir(), "plan", "--bogus")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "unknown flag: --bogus")
}

// colourSGR matches an escape that sets a foreground or background
// colour (30–37, 38;…, 40–47, 48;…, 90–97, 100–107).
var colourSGR = regexp.MustCompile(`\x1b\[(?:[0-9;]*;)?(?:3[0-8]|4[0-8]|9[0-7]|10[0-7])(?:;[0-9;]*)?m`)

// releaseState is what a run would change of a release: its status, each
// step's status and message, and when it was last saved.
func releaseState(t *testing.T, ledger, id string) string {
	t.Helper()
	l, err := store.OpenSQLite(t.Context(), ledger)
	require.NoError(t, err)
	defer l.Close()
	r, err := l.LoadRelease(t.Context(), id)
	require.NoError(t, err)
	s := fmt.Sprintf("%s updated %s", r.Status, r.UpdatedAt)
	for _, k := range workflow.StepKinds {
		s += fmt.Sprintf("; %s %s %q", k, r.Step(k).Status, r.Step(k).Message)
	}
	return s
}

// TestPlainRelcapOpensTheMapAndRunsNothing: a release planned and applied
// without an image is infrastructure only. Plain relcap at a terminal
// (with --no-color) opens the cockpit on it, says how to go on and runs
// nothing: the release is exactly as it was. Only r resumes it, and then
// it ends succeeded, never failed. The screen carries no colour.
func TestPlainRelcapOpensTheMapAndRunsNothing(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 0, false)
	data := t.TempDir()
	ledger := filepath.Join(data, "relcap", "ledger.db")
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan struct{ Fingerprint, Release string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	code, _, errOut = invokeEnv(t, data, env, "-c", cfg, "apply", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, errOut)
	before := releaseState(t, ledger, plan.Release)

	term := relcapAtTerminal(t, data, env, 120, 30, "-c "+cfg+" --no-color")
	term.waitFor("press r to resume it", 90*time.Second)
	raw, err := exec.Command("tmux", "-L", term.socket, "capture-pane", "-e", "-p", "-t", term.window).Output()
	require.NoError(t, err)
	require.NotRegexp(t, colourSGR, string(raw), "--no-color: no colour on the screen")
	require.Contains(t, string(raw), "infrastructure only", "the map shows the release's shape")
	time.Sleep(2 * time.Second)
	require.Equal(t, before, releaseState(t, ledger, plan.Release), "opening the cockpit ran nothing")

	term.press("r")
	term.waitFor("succeeded", 90*time.Second)
	term.press("q")
	screen := term.waitFor("EXIT=", 60*time.Second)
	require.NotContains(t, screen, "FAILED")
	after := releaseState(t, ledger, plan.Release)
	require.True(t, strings.HasPrefix(after, "succeeded "), "resumed, an infrastructure-only release ends succeeded: %s", after)
}

// TestPlainRelcapWithoutALedgerCreatesNone: on a fresh machine plain
// relcap at a terminal says there is no release in progress and how to
// start one, and leaves no ledger behind (a mistyped or default path stays
// empty, so the next read-only command still says nothing was recorded).
func TestPlainRelcapWithoutALedgerCreatesNone(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 0, false)
	data := t.TempDir()
	term := relcapAtTerminal(t, data, env, 120, 30, "-c "+cfg)
	screen := term.waitFor("EXIT=", 60*time.Second)
	require.Contains(t, screen, "is in progress. Start one with:")
	require.Contains(t, screen, "EXIT=0")
	_, err := os.Stat(filepath.Join(data, "relcap", "ledger.db"))
	require.ErrorIs(t, err, fs.ErrNotExist, "opening the cockpit created no ledger")
	entries, err := os.ReadDir(data)
	require.NoError(t, err)
	for _, e := range entries {
		require.NotEqual(t, "relcap", e.Name(), "no relcap data directory either")
	}
}
