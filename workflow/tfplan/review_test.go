package tfplan_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/tfplan"
)

// TestPlanFingerprintPinned pins fingerprints computed by the formula as
// it was when plans were first saved with it: plans and approvals in
// existing ledgers are bound to these values, so any change to the
// encoding must come with a new version, never silently.
func TestPlanFingerprintPinned(t *testing.T) {
	t.Parallel()
	full := tfplan.Inputs{
		Revision: "0123abc", Dirty: true, LockFileHash: "lock", Workspace: "prod", StateLineage: "lin-1", StateSerial: 42,
		VarFileHashes: map[string]string{"b.tfvars": "2", "a.tfvars": "1"},
		ConfigFiles:   map[string]string{"main.tf": "m", "modules/x/x.tf": "x"},
		EnvVars:       map[string]string{"TF_VAR_b": "hb", "TF_VAR_a": "ha"},
		ProviderEnv:   map[string]string{"KUBECONFIG": "k", "AWS_PROFILE": "a"},
	}
	require.Equal(t, "0ddfe60a6116b2ebf3dbd658885e4d5ab67f8b06119ff693004dcd74d31d3b23", tfplan.Fingerprint("planhash", full))
	minimal := tfplan.Inputs{Revision: "abc", LockFileHash: "l", Workspace: "default", StateLineage: "lin", StateSerial: 3}
	require.Equal(t, "85dc5a91ba3d34fe494514ba1b656d631b17a85b42aa367ddaf489114683481d", tfplan.Fingerprint("p", minimal))
}

func TestFingerprintCanonical(t *testing.T) {
	t.Parallel()
	in := tfplan.Inputs{
		Revision: "abc", LockFileHash: "l", Workspace: "default", StateLineage: "lin", StateSerial: 3,
		VarFileHashes: map[string]string{"b.tfvars": "2", "a.tfvars": "1"},
	}
	fp := tfplan.Fingerprint("p", in)
	require.Len(t, fp, 64)
	for range 20 { // map iteration order must not matter
		require.Equal(t, fp, tfplan.Fingerprint("p", in))
	}
	moved := in
	moved.StateSerial = 4
	require.NotEqual(t, fp, tfplan.Fingerprint("p", moved))
	require.NotEqual(t, fp, tfplan.Fingerprint("q", in))
	// A value cannot impersonate another field.
	forged := in
	forged.Revision = "abc\"\ndirty=\"true"
	require.NotEqual(t, tfplan.Fingerprint("p", forged), fp)
}

func TestReviewPlanFindsWhatTerraformsActionsSay(t *testing.T) {
	t.Parallel()
	p := tfplan.ReviewPlan(tfplan.Facts{
		Env:     "dev",
		Changes: []tfplan.ResourceChange{{Address: "a.b", Type: "t", Action: tfplan.ActionCreate}},
		NoOps:   2, Imports: []string{"a.b"}, Moves: []tfplan.Move{{Address: "a.c", From: "a.old"}}, Forgets: []string{"a.gone"},
		Root: "infra/dev", MissingLockFile: ".terraform.lock.hcl",
		PlanHash: "p", Inputs: tfplan.Inputs{Revision: "abc"},
	}, tfplan.DefaultClassify())
	require.Equal(t, 2, p.Counts.NoOp)
	require.Equal(t, 1, p.Counts.Create)
	require.Equal(t, tfplan.Fingerprint("p", tfplan.Inputs{Revision: "abc"}), p.Fingerprint)
	codes := map[string]string{}
	for _, f := range p.Findings {
		codes[f.Code] = f.Subject
	}
	require.Equal(t, map[string]string{"plan.import": "a.b", "plan.moved": "a.c", "plan.forget": "a.gone", "plan.no-lock-file": "infra/dev"}, codes)
	require.Equal(t, finding.Warning, p.Findings[0].Severity, "findings sorted, most serious first")

	doc := tfplan.ReviewPlan(tfplan.Facts{Env: "dev"}, tfplan.DefaultClassify())
	require.Empty(t, doc.Fingerprint, "a plan document without a plan file has no fingerprint")
	require.NotNil(t, doc.Changes)
}
