package workflow_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// TestPlansRelcapCannotVouchForAreRefusedWhoeverApproves: an errored plan,
// an incomplete one, one whose check fails and one whose drift would
// revert Argo CD's fields each stop plan review with the reason, before
// anyone is asked to approve, and apply refuses them even when approved.
func TestPlansRelcapCannotVouchForAreRefusedWhoeverApproves(t *testing.T) {
	t.Parallel()
	argoDeployment := &ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformAddress: "kubectl_manifest.web", TerraformType: "kubectl_manifest",
		Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image"}}
	for _, tc := range []struct {
		name, code, says string
		shows            func(*tfplan.Facts)
	}{
		{"errored", tfplan.CodePlanErrored, "Terraform reported errors while planning", func(p *tfplan.Facts) { p.Errored = true }},
		{"incomplete", tfplan.CodePlanIncomplete, "1 change(s) deferred: aws_db_instance.main (resource config unknown)", func(p *tfplan.Facts) {
			p.Incomplete = true
			p.Deferred = []tfplan.DeferredChange{{Address: "aws_db_instance.main", Reason: "resource_config_unknown"}}
		}},
		{"check failed", tfplan.CodePlanCheckFailed, "resource check failed: the bucket must be private", func(p *tfplan.Facts) {
			p.Checks = []tfplan.CheckResult{{Address: "aws_s3_bucket.data", Kind: "resource", Status: tfplan.CheckFail, Problems: []string{"the bucket must be private"}}}
		}},
		{"drift on argo cd's fields", tfplan.CodePlanDriftOwned, "apps/Deployment web/web changed outside Terraform, and ownership.yaml:5 gives spec.replicas, spec.template.spec.containers[web].image to argocd; this apply would revert them", func(p *tfplan.Facts) {
			p.Drift = []tfplan.DriftedResource{{ResourceChange: tfplan.ResourceChange{Address: "kubectl_manifest.web", Type: "kubectl_manifest", Action: tfplan.ActionUpdate,
				Attributes: []tfplan.AttributeChange{{Path: "yaml_incluster", Before: "(sensitive)", After: "(sensitive)", Sensitive: true}}, Object: argoDeployment}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			w, l, clock := workflowtest.NewWorld(), workflowtest.NewLedger(), workflowtest.NewClock(t0)
			w.PlanShows = tc.shows
			captain := newProcess(t, testProject(1), w, l, clock, "alice")
			r, err := captain.svc.Start(ctx, workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
			require.NoError(t, err)
			got, err := captain.svc.Run(ctx, r.ID, nil)
			require.ErrorIs(t, err, fault.ErrPlanRefused)
			step := got.Step(workflow.StepPlanReview)
			require.Equal(t, workflow.Blocked, step.Status)
			require.Contains(t, step.Message, "cannot be applied as reviewed")
			require.Contains(t, step.Message, tc.says)
			require.NotContains(t, step.Message, "relcap approve", "nobody is asked to approve what cannot be applied")

			fp := got.Checkpoints.Fingerprint
			plan, err := l.LoadPlan(ctx, fp)
			require.NoError(t, err)
			require.True(t, hasBlocker(plan.Findings, tc.code), "%+v", plan.Findings)
			reviewed := journaledPlan(t, captain.journal, fp)
			require.Contains(t, reviewed.Refused, tc.says, "the journal keeps why the plan cannot be applied")
			_, _, err = newProcess(t, testProject(1), w, l, clock, "bob").svc.ApprovePlan(ctx, fp, "looks fine")
			require.NoError(t, err, "an approval is only a record; it does not make the plan applicable")
			_, _, err = captain.svc.ApplyPlan(ctx, fp, nil)
			require.ErrorIs(t, err, fault.ErrPlanRefused)
			require.Zero(t, w.Applies, "nothing was applied")
		})
	}
}

// TestDriftOnTerraformsOwnFieldsIsANoteAndAFailedCheckOnlyUnknownWarns:
// drift of Terraform's own object and an unknown check result are for
// the reviewer to read, not refusals.
func TestDriftOnTerraformsOwnFieldsIsANoteAndAFailedCheckOnlyUnknownWarns(t *testing.T) {
	t.Parallel()
	p := tfplan.Summary{
		Drift: []tfplan.DriftedResource{{ResourceChange: tfplan.ResourceChange{Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: tfplan.ActionUpdate,
			Attributes: []tfplan.AttributeChange{{Path: "tags.owner", Before: `"a"`, After: `"b"`}}}}},
		Checks: []tfplan.CheckResult{{Address: "check.health", Kind: "check", Status: tfplan.CheckUnknown}},
	}
	tfplan.Review(&p, tfplan.DefaultClassify())
	tfplan.ReviewDrift(&p, testProject(0).Ownership)
	_, refused := p.Refused()
	require.False(t, refused)
	var codes []string
	for _, f := range p.Findings {
		codes = append(codes, f.Severity.String()+" "+f.Code+" "+f.Subject)
	}
	require.ElementsMatch(t, []string{"warning plan.check-unknown check.health", "info plan.drift aws_s3_bucket.logs"}, codes)
}

func hasBlocker(fs []finding.Finding, code string) bool {
	for _, f := range fs {
		if f.Severity == finding.Blocker && f.Code == code {
			return true
		}
	}
	return false
}

// journaledPlan is the plan.reviewed entry the journal keeps for fp.
func journaledPlan(t *testing.T, j *workflowtest.Journal, fp string) journal.PlanRecorded {
	t.Helper()
	for _, e := range j.Entries() {
		if e.Kind != journal.KindPlanRecorded {
			continue
		}
		var rec journal.PlanRecorded
		require.NoError(t, json.Unmarshal(e.Data, &rec))
		if rec.Fingerprint == fp {
			return rec
		}
	}
	t.Fatalf("no %s entry for plan %s in %v", journal.KindPlanRecorded, fp, j.Kinds())
	return journal.PlanRecorded{}
}
