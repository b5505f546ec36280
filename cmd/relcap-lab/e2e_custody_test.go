//go:build e2e

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/rehearsal"
)

// testStateCustody checks the state custody of real roots on the lab: on
// Terraform's pg backend (the lab's PostgreSQL, which locks), custody
// passes and the state-restore drill proves a backup of staging's state;
// production pointed at staging's state, and production on a local state
// file, are each stopped at plan review, before anyone is asked to
// approve.
func testStateCustody(t *testing.T, l *e2eLab) {
	r := l.newCockpitRepo(t)
	openStagingPlans(t, r)
	r.setRelease(t, "custody-1")

	var plan struct {
		Fingerprint string
		Findings    []finding.Finding
	}
	require.NoError(t, json.Unmarshal([]byte(l.relcapOKIn(t, r, "--json", "plan", "--env", "staging")), &plan))
	backend := findingOf(t, plan.Findings, custody.CodeBackend)
	require.Contains(t, backend.Message, "schema relcap_state_staging workspace default")
	require.Contains(t, backend.Message, "locked by PostgreSQL advisory locks")
	require.Equal(t, "terraform init's record (.terraform/terraform.tfstate)", backend.Fact("read from"))
	for _, f := range plan.Findings {
		require.NotEqual(t, finding.Blocker, f.Severity, "custody passes on the pg backend: %s", f)
		require.NotEqual(t, custody.CodeLocalBackend, f.Code)
	}
	l.relcapOKIn(t, r, "apply", "--plan", plan.Fingerprint)

	var drills []rehearsal.Rehearsal
	require.NoError(t, json.Unmarshal([]byte(l.relcapOKIn(t, r, "--json", "rehearse", "--env", "staging", "--drill", "state-restore")), &drills))
	require.Len(t, drills, 1)
	rh := drills[0]
	require.Equal(t, rehearsal.StatePassed, rh.State, rh.Failure)
	require.Equal(t, rehearsal.VerdictStateRestored, rh.Detected)
	require.Equal(t, 2, rh.Restore.Resources, "terraform_data.release and kubectl_manifest.release_info, backed up from PostgreSQL")
	t.Logf("state-restore on staging (pg backend): back up %s, restore %s, prove %s", rh.Restore.BackupTook, rh.Restore.RestoreTook, rh.Restore.ProveTook)

	// Production pointed at staging's state: one state for two
	// environments.
	prodTF := filepath.Join(r.roots["prod"], "main.tf")
	require.NoError(t, os.WriteFile(prodTF, []byte(pgBackendTF("relcap_state_staging")+releaseRootTF(l.env["KUBECONFIG"], "prod")), 0o644))
	code, out := l.relcapIn(t, r, "alice", "plan", "--env", "prod")
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "the state custody of prod stops this release: prod and staging keep their state in one place")
	require.Contains(t, out, custody.CodeSharedState)
	require.NotContains(t, out, "relcap approve --plan", "nobody is asked to approve it")

	// Production on a local state file (a repository of its own, so no
	// open release carries over).
	local := l.newCockpitRepo(t)
	local.setRelease(t, "custody-1")
	require.NoError(t, os.WriteFile(filepath.Join(local.roots["prod"], "main.tf"), []byte(releaseRootTF(l.env["KUBECONFIG"], "prod")), 0o644))
	code, out = l.relcapIn(t, local, "alice", "plan", "--env", "prod")
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "the state custody of prod stops this release: the state is a local file ("+filepath.Join(local.roots["prod"], "terraform.tfstate")+")")
	require.Contains(t, out, "accept custody.local-backend for prod in relcap.yaml")
}

// openStagingPlans lets staging's plans apply without an approval (the
// cockpit repository asks one of someone else).
func openStagingPlans(t *testing.T, r cockpitRepo) {
	t.Helper()
	b, err := os.ReadFile(r.cfg)
	require.NoError(t, err)
	const asked = "approvals: {plan: 1, promotion: 0, distinct_from_author: true}"
	require.Contains(t, string(b), asked)
	require.NoError(t, os.WriteFile(r.cfg, []byte(strings.Replace(string(b), asked, "approvals: {plan: 0, promotion: 0, distinct_from_author: false}", 1)), 0o644))
}

func findingOf(t *testing.T, fs []finding.Finding, code string) finding.Finding {
	t.Helper()
	for _, f := range fs {
		if f.Code == code {
			return f
		}
	}
	t.Fatalf("no %s finding in %d: %v", code, len(fs), fs)
	return finding.Finding{}
}
