package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/finding"
)

// TestPlanFingerprintPinned pins fingerprints computed by the formula as
// it was when plans were first saved with it: plans and approvals in
// existing ledgers are bound to these values, so any change to the
// encoding must come with a new version, never silently.
func TestPlanFingerprintPinned(t *testing.T) {
	t.Parallel()
	full := workflow.PlanInputs{
		Revision: "0123abc", Dirty: true, LockFileHash: "lock", Workspace: "prod", StateLineage: "lin-1", StateSerial: 42,
		VarFileHashes: map[string]string{"b.tfvars": "2", "a.tfvars": "1"},
		ConfigFiles:   map[string]string{"main.tf": "m", "modules/x/x.tf": "x"},
		EnvVars:       map[string]string{"TF_VAR_b": "hb", "TF_VAR_a": "ha"},
		ProviderEnv:   map[string]string{"KUBECONFIG": "k", "AWS_PROFILE": "a"},
	}
	require.Equal(t, "0ddfe60a6116b2ebf3dbd658885e4d5ab67f8b06119ff693004dcd74d31d3b23", workflow.PlanFingerprint("planhash", full))
	minimal := workflow.PlanInputs{Revision: "abc", LockFileHash: "l", Workspace: "default", StateLineage: "lin", StateSerial: 3}
	require.Equal(t, "85dc5a91ba3d34fe494514ba1b656d631b17a85b42aa367ddaf489114683481d", workflow.PlanFingerprint("p", minimal))
}

func TestFingerprintCanonical(t *testing.T) {
	t.Parallel()
	in := workflow.PlanInputs{
		Revision: "abc", LockFileHash: "l", Workspace: "default", StateLineage: "lin", StateSerial: 3,
		VarFileHashes: map[string]string{"b.tfvars": "2", "a.tfvars": "1"},
	}
	fp := workflow.PlanFingerprint("p", in)
	require.Len(t, fp, 64)
	for range 20 { // map iteration order must not matter
		require.Equal(t, fp, workflow.PlanFingerprint("p", in))
	}
	moved := in
	moved.StateSerial = 4
	require.NotEqual(t, fp, workflow.PlanFingerprint("p", moved))
	require.NotEqual(t, fp, workflow.PlanFingerprint("q", in))
	// A value cannot impersonate another field.
	forged := in
	forged.Revision = "abc\"\ndirty=\"true"
	require.NotEqual(t, workflow.PlanFingerprint("p", forged), fp)
}

func TestReviewPlanFindsWhatTerraformsActionsSay(t *testing.T) {
	t.Parallel()
	p := workflow.ReviewPlan(workflow.PlanFacts{
		Env:     "dev",
		Changes: []workflow.ResourceChange{{Address: "a.b", Type: "t", Action: workflow.ActionCreate}},
		NoOps:   2, Imports: []string{"a.b"}, Moves: []workflow.PlanMove{{Address: "a.c", From: "a.old"}}, Forgets: []string{"a.gone"},
		Root: "infra/dev", MissingLockFile: ".terraform.lock.hcl",
		PlanHash: "p", Inputs: workflow.PlanInputs{Revision: "abc"},
	}, workflow.DefaultClassify())
	require.Equal(t, 2, p.Counts.NoOp)
	require.Equal(t, 1, p.Counts.Create)
	require.Equal(t, workflow.PlanFingerprint("p", workflow.PlanInputs{Revision: "abc"}), p.Fingerprint)
	codes := map[string]string{}
	for _, f := range p.Findings {
		codes[f.Code] = f.Subject
	}
	require.Equal(t, map[string]string{"plan.import": "a.b", "plan.moved": "a.c", "plan.forget": "a.gone", "plan.no-lock-file": "infra/dev"}, codes)
	require.Equal(t, finding.Warning, p.Findings[0].Severity, "findings sorted, most serious first")

	doc := workflow.ReviewPlan(workflow.PlanFacts{Env: "dev"}, workflow.DefaultClassify())
	require.Empty(t, doc.Fingerprint, "a plan document without a plan file has no fingerprint")
	require.NotNil(t, doc.Changes)
}
