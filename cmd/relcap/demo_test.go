package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/report"
)

// TestDemoHeadlessConvergesBothEnvironments runs the whole scripted demo in
// process, against a real sandbox and a real terraform, and checks what it
// left in the sandbox's ledger, journals and environment repository.
func TestDemoHeadlessConvergesBothEnvironments(t *testing.T) {
	t.Parallel()
	terraformtest.Binary(t)
	data := t.TempDir()
	dir := filepath.Join(t.TempDir(), "sandbox")

	code, out, errOut := invokeEnv(t, data, nil, "demo", "--headless", "--dir", dir)
	require.Equal(t, 0, code, out+errOut)
	for _, want := range []string{
		"Sandbox in " + dir,
		"Argo CD API simulator",
		"ownership.wrong-owner terraform_data.db_migration", // the conflict stops the release
		"resolving the conflict in ownership.yaml",
		"replace (delete before create)  terraform_data.db_migration", // the plan review shows the replacement
		"demo-approver approved plan",
		"demo-approver approved the promotion of web-prod-",
		"converged in staging",
		"converged in prod",
		"━━ Effort ━━",
		"COVERAGE",
		"never added.",
		"These are sandbox releases",
		"relcap --ledger " + filepath.Join(dir, "ledger.db") + " journal list",
		"Both releases converged",
	} {
		require.Contains(t, out, want)
	}
	require.Less(t, strings.Index(out, "Release to staging"), strings.Index(out, "Release to prod"), "staging first")
	// The effort table and its notes fit an 80-column terminal, which
	// would otherwise wrap them mid-word ("0\ns").
	for _, l := range strings.Split(out[strings.Index(out, "━━ Effort ━━"):strings.Index(out, "The sandbox stays in")], "\n") {
		require.LessOrEqual(t, len([]rune(l)), 80, "effort summary line wider than 80 columns: %q", l)
	}
	require.NoFileExists(t, filepath.Join(data, "relcap", "ledger.db"), "the demo never touches the default ledger")

	l, err := store.OpenSQLite(t.Context(), filepath.Join(dir, "ledger.db"))
	require.NoError(t, err)
	defer l.Close()
	releases, err := l.ListReleases(t.Context(), workflow.ReleaseFilter{})
	require.NoError(t, err)
	require.Len(t, releases, 2)
	var envs []string
	digest := releases[0].Checkpoints.Digest.String()
	for _, r := range releases {
		envs = append(envs, r.Env)
		require.Equal(t, workflow.ReleaseConverged, r.Status, r.ID)
		require.Equal(t, digest, r.Checkpoints.Digest.String(), "the same bytes in both environments")
		entries, err := l.Effort(t.Context(), r.ID)
		require.NoError(t, err)
		require.Positive(t, effort.Sum(entries).Wait, "machine wait measured for %s", r.ID)
		// The demo's row is the ledger's figure by the report's rule:
		// coverage, active time (or "unmeasured") and machine wait.
		f := effort.Tally(entries)
		cov, missing := report.ReleaseCoverage(r.Captain, entries)
		active := effort.Format(f.Active)
		if cov == report.CoverageUnmeasured {
			active = "unmeasured"
		}
		row := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(r.ID) + `\s+converged\s+` + regexp.QuoteMeta(string(cov)) +
			`\s+` + regexp.QuoteMeta(active) + `\s+` + regexp.QuoteMeta(effort.Format(f.Wait)) + `$`)
		require.Regexp(t, row, out)
		for _, w := range missing {
			require.Contains(t, strings.Join(strings.Fields(out), " "), r.ID+": "+w.Person+" on "+w.Step+" not measured: "+w.Reason)
		}
	}
	slices.Sort(envs)
	require.Equal(t, []string{"prod", "staging"}, envs)

	for _, env := range []string{"staging", "prod"} {
		show, err := exec.Command("git", "-C", filepath.Join(dir, "env.git"), "show", "main:apps/web/"+env+"/kustomization.yaml").Output()
		require.NoError(t, err)
		require.Contains(t, string(show), "digest: "+digest, env)
		require.Contains(t, string(show), "# web in "+env+" (relcap sandbox)", "comments survive the pin")
	}
	fixed, err := os.ReadFile(filepath.Join(dir, "ownership.yaml"))
	require.NoError(t, err)
	require.NotContains(t, string(fixed), "terraform_address: terraform_data.db_migration", "the conflict was resolved in the file")

	code, out, errOut = invokeEnv(t, data, nil, "-c", filepath.Join(dir, "relcap.yaml"), "--ledger", filepath.Join(dir, "ledger.db"), "journal", "verify")
	require.Equal(t, 0, code, out+errOut)
	require.Equal(t, 2, strings.Count(out, "ok "), "the captain's and demo-approver's sessions: %s", out)
	// The sandbox's env.git has no origin: the anchors are written in
	// place, and verify says a rewind of them cannot be detected.
	unprotected := "warning  anchor not protected: " + filepath.Join(dir, "env.git") + " has no origin; rewinds cannot be detected"
	require.Contains(t, errOut, unprotected)
	require.Equal(t, 1, strings.Count(errOut, "anchor not protected"), "said once, not per session: %s", errOut)
	rest := regexp.MustCompile(`(?m)^warning  anchor not protected: .*\n`).ReplaceAllString(errOut, "")
	require.NotContains(t, rest, "anchor", "both heads anchored in the sandbox's env.git, and checked there")
	require.NotContains(t, errOut, "not checked")
	anchors, err := exec.Command("git", "-C", filepath.Join(dir, "env.git"), "rev-list", "--count", "refs/relcap/journal").Output()
	require.NoError(t, err)
	require.Equal(t, "2", strings.TrimSpace(string(anchors)))
	// relcap report effort on the demo's ledger counts no release and
	// claims no saved hours: both were sandbox releases, and it says so.
	code, out, errOut = invokeEnv(t, data, nil, "-c", filepath.Join(dir, "relcap.yaml"), "--ledger", filepath.Join(dir, "ledger.db"),
		"report", "effort", "--format", "json")
	require.Equal(t, 0, code, out+errOut)
	var rep struct {
		Counts struct {
			Total           int `json:"total"`
			SandboxExcluded int `json:"sandbox_excluded"`
		} `json:"releases"`
		Comparison any `json:"comparison"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, 0, rep.Counts.Total, out)
	require.Equal(t, 2, rep.Counts.SandboxExcluded, out)
	require.Nil(t, rep.Comparison, "no hours freed claimed over practice releases")
	code, out, errOut = invokeEnv(t, data, nil, "--ledger", filepath.Join(dir, "ledger.db"), "journal", "list")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "demo-approver")
}

func TestDemoRefusesWhatItCannotHonour(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--json", "demo", "--headless"},
		{"-c", "relcap.yaml", "demo", "--headless"},
		{"--actor", "demo-approver", "demo", "--headless"},
		{"demo", "extra"},
	} {
		dir := filepath.Join(t.TempDir(), "sandbox")
		code, out, errOut := invoke(t, t.TempDir(), append(args, "--dir", dir)...)
		require.Equal(t, exitUsage, code, "%v: %s", args, out+errOut)
		require.NoDirExists(t, dir, "%v: nothing built", args)
	}
}

func TestDemoIntoADirectoryThatIsNotEmptyFailsBeforeBuildingAnything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("mine"), 0o644))
	code, _, errOut := invoke(t, t.TempDir(), "demo", "--headless", "--dir", dir)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "not empty")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
}
