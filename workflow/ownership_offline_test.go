package workflow_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/owners"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// offlineProcess is a Service over w whose ownership sources are tf, the
// cluster's argo and the environment repository's desired.
func offlineProcess(t *testing.T, w *workflowtest.World, l *workflowtest.Ledger, tf workflow.OwnershipSource, argo workflow.OwnershipSource, desired workflow.DesiredSource) *workflow.Service {
	t.Helper()
	p := testProject(0)
	p.Ownership.Rules = append(p.Ownership.Rules, ownership.Rule{Line: 7, Match: ownership.Match{Kind: "ConfigMap"}, Owner: ownership.OwnerTerraform})
	clock := workflowtest.NewClock(t0)
	planner := workflowtest.Terraform{W: w}
	svc, err := workflow.NewService(workflow.Deps{
		Project: p, Ledger: l, Journal: workflowtest.NewJournal(clock, "alice"), Clock: clock, Actor: "alice",
		Ownership: []workflow.OwnershipSource{tf, argo}, Desired: desired,
		Planner: planner, Applier: planner,
		Registry: workflowtest.Registry{W: w}, EnvRepo: workflowtest.EnvRepo{W: w},
		Convergence: workflowtest.Convergence{W: w}, ConvergeTimeout: time.Minute,
	})
	require.NoError(t, err)
	return svc
}

var (
	bucket    = ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformAddress: "aws_s3_bucket.assets", TerraformType: "aws_s3_bucket"}
	configMap = ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformAddress: "kubernetes_manifest.settings", TerraformType: "kubernetes_manifest",
		Kind: "ConfigMap", Namespace: "web", Name: "settings", Fields: []string{"data.mode"}}
	deployment = ownership.ManagedObject{Manager: ownership.OwnerArgoCD, App: "web-prod", Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web",
		Fields: []string{"spec.template.spec.containers[web].image"}}
)

func TestOwnershipOfAPlanWithoutKubernetesObjectsNeedsNoArgoCD(t *testing.T) {
	t.Parallel()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	tf := workflowtest.TerraformObjects{Objects: []ownership.ManagedObject{bucket}}
	svc := offlineProcess(t, w, l, tf, workflowtest.ForbiddenArgoCD{T: t}, workflowtest.ForbiddenDesired{T: t})

	out, err := svc.PlanRelease(t.Context(), workflow.OpenRequest{Env: "prod"}, nil)
	require.NoError(t, err)
	own := out.Release.Step(workflow.StepOwnership)
	require.Equal(t, workflow.Succeeded, own.Status)
	require.Contains(t, own.Message, "no Kubernetes objects in the plan; ownership check not needed")
	require.Empty(t, own.Findings, "no stale-rule warning for the Argo CD rule nobody read")
	checked, _, ok := evidence.Of[evidence.OwnershipChecked](own.Evidence)
	require.True(t, ok)
	require.Empty(t, checked.Kubernetes)
	require.Empty(t, checked.LiveUnchecked)
	require.NotEmpty(t, out.Plan.Fingerprint, "plan review ran")
}

func TestOwnershipOfARootWithAKubernetesProviderAsksArgoCD(t *testing.T) {
	t.Parallel()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	tf := workflowtest.TerraformObjects{Objects: []ownership.ManagedObject{bucket}, Providers: []string{"registry.terraform.io/hashicorp/kubernetes"}}
	argo := &workflowtest.FakeArgoCD{Objects: []ownership.ManagedObject{deployment}}
	svc := offlineProcess(t, w, l, tf, argo, nil)

	out, err := svc.PlanRelease(t.Context(), workflow.OpenRequest{Env: "prod"}, nil)
	require.NoError(t, err)
	require.Equal(t, 1, argo.Calls())
	checked, _, _ := evidence.Of[evidence.OwnershipChecked](out.Release.Step(workflow.StepOwnership).Evidence)
	require.Contains(t, checked.Kubernetes, "hashicorp/kubernetes")
}

func TestOfflineOwnershipFindsAConflictWithArgoCDUnreachable(t *testing.T) {
	t.Parallel()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	tf := workflowtest.TerraformObjects{Objects: []ownership.ManagedObject{bucket, configMap}}
	argo := &workflowtest.FakeArgoCD{Err: errors.New("$ARGOCD_AUTH_TOKEN is empty or unset")}
	// The overlay renders the ConfigMap too, without a namespace (Argo CD's
	// destination namespace, unknown offline).
	settings := ownership.ManagedObject{Manager: ownership.OwnerArgoCD, App: "web-staging", Kind: "ConfigMap", Name: "settings", Fields: []string{"data.mode"}}
	desired := workflowtest.DesiredRepo{Desired: ownership.Desired{App: "web-staging", Source: "kustomize apps/web/staging",
		Objects: []ownership.ManagedObject{settings}}}
	svc := offlineProcess(t, w, l, tf, argo, desired)

	out, err := svc.PlanRelease(t.Context(), workflow.OpenRequest{Env: "staging"}, nil)
	require.ErrorIs(t, err, fault.ErrOwnershipConflict)
	fs := out.Release.Step(workflow.StepOwnership).Findings
	codes := map[string]string{}
	for _, f := range fs {
		codes[f.Code] = f.Subject + ": " + f.Message
	}
	require.Contains(t, codes[ownership.CodeConflict], "core/ConfigMap web/settings")
	require.Contains(t, codes[ownership.CodeConflict], "data.mode")
	require.Contains(t, codes[ownership.CodeLiveUnchecked], "live check could not run: $ARGOCD_AUTH_TOKEN is empty or unset")
	require.Equal(t, 0, w.Plans(), "blocked before planning")
}

func TestProductionApplyRefusedWhileTheLiveCheckCouldNotRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	w.Changes = []tfplan.ResourceChange{{Address: "kubernetes_manifest.settings", Type: "kubernetes_manifest", Name: "settings", Action: tfplan.ActionUpdate}}
	tf := workflowtest.TerraformObjects{Objects: []ownership.ManagedObject{bucket, configMap}}
	argo := &workflowtest.FakeArgoCD{Err: errors.New("$ARGOCD_AUTH_TOKEN is empty or unset")}
	desired := workflowtest.DesiredRepo{Desired: ownership.Desired{App: "web-prod", Source: "kustomize apps/web/prod", Objects: []ownership.ManagedObject{deployment}}}
	svc := offlineProcess(t, w, l, tf, argo, desired)

	out, err := svc.PlanRelease(ctx, workflow.OpenRequest{Env: "prod"}, nil)
	require.NoError(t, err, "plan review runs offline")
	own := out.Release.Step(workflow.StepOwnership)
	require.Equal(t, workflow.Succeeded, own.Status)
	require.Contains(t, own.Message, "app web-prod rendered offline from kustomize apps/web/prod (1 objects)")
	require.Contains(t, own.Message, "live check could not run: $ARGOCD_AUTH_TOKEN is empty or unset")

	r, err := svc.RunUntil(ctx, out.Release.ID, nil, workflow.StepApply)
	require.ErrorIs(t, err, workflow.ErrLiveOwnershipUnchecked)
	require.ErrorIs(t, err, fault.ErrBlocked, "exit 3")
	apply := r.Step(workflow.StepApply)
	require.Equal(t, workflow.Blocked, apply.Status)
	require.Contains(t, apply.Message, "prod is a production environment")
	require.Contains(t, apply.Message, "kubernetes_manifest.settings")
	require.Contains(t, apply.Message, "$ARGOCD_AUTH_TOKEN is empty or unset")
	require.Equal(t, 0, w.Applies, "nothing applied")

	// Argo CD reachable again: the gate runs the live check and applies.
	argo.Err = nil
	argo.Objects = []ownership.ManagedObject{deployment}
	r, err = svc.RunUntil(ctx, out.Release.ID, nil, workflow.StepApply)
	require.NoError(t, err)
	require.Equal(t, workflow.Succeeded, r.Step(workflow.StepApply).Status)
	require.Equal(t, 1, w.Applies)
}

func TestNonProductionApplyGoesOnWithTheLiveCheckMissing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	w.Changes = []tfplan.ResourceChange{{Address: "kubernetes_manifest.settings", Type: "kubernetes_manifest", Name: "settings", Action: tfplan.ActionUpdate}}
	tf := workflowtest.TerraformObjects{Objects: []ownership.ManagedObject{bucket, configMap}}
	argo := &workflowtest.FakeArgoCD{Err: errors.New("connection refused")}
	helm := workflowtest.DesiredRepo{Desired: ownership.Desired{App: "web-staging", Source: "helm values apps/web/staging/values.yaml",
		Unverified: "the chart's templates are not rendered offline"}}
	svc := offlineProcess(t, w, l, tf, argo, helm)

	out, err := svc.PlanRelease(ctx, workflow.OpenRequest{Env: "staging"}, nil)
	require.NoError(t, err)
	var unverified bool
	for _, f := range out.Release.Step(workflow.StepOwnership).Findings {
		if f.Code == ownership.CodeUnverifiedOffline {
			unverified = true
			require.Contains(t, f.Message, "unverified offline")
		}
	}
	require.True(t, unverified, "a Helm application is never assumed clean")
	r, err := svc.RunUntil(ctx, out.Release.ID, nil, workflow.StepApply)
	require.NoError(t, err)
	require.Equal(t, workflow.Succeeded, r.Step(workflow.StepApply).Status)
}

// TestOwnershipCheckCommandGoesOfflineWhenArgoCDCannotBeRead: relcap
// ownership check asks Argo CD even when Terraform writes no Kubernetes
// object (only Argo CD knows unowned objects and third managers); when it
// cannot be read, the environment repository is rendered instead, the
// conflict is still found, and a warning says the live check did not run.
func TestOwnershipCheckCommandGoesOfflineWhenArgoCDCannotBeRead(t *testing.T) {
	t.Parallel()
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	settings := ownership.ManagedObject{Manager: ownership.OwnerArgoCD, App: "web-staging", Kind: "ConfigMap", Name: "settings", Fields: []string{"data.mode"}}
	desired := workflowtest.DesiredRepo{Desired: ownership.Desired{App: "web-staging", Source: "kustomize apps/web/staging",
		Objects: []ownership.ManagedObject{settings}}}

	argo := &workflowtest.FakeArgoCD{Err: errors.New("$ARGOCD_AUTH_TOKEN is empty or unset")}
	tf := workflowtest.TerraformObjects{Objects: []ownership.ManagedObject{bucket, configMap}}
	rep, err := owners.Check(t.Context(), offlineProcess(t, w, l, tf, argo, desired), "staging")
	require.NoError(t, err, "an unreachable Argo CD is a finding, not a failed check")
	codes := map[string]string{}
	for _, f := range rep.Findings {
		codes[f.Code] = f.Subject + ": " + f.Message
	}
	require.Contains(t, codes[ownership.CodeConflict], "core/ConfigMap web/settings", "found offline")
	require.Contains(t, codes[ownership.CodeLiveUnchecked], "$ARGOCD_AUTH_TOKEN is empty or unset")
	require.Contains(t, rep.Sources, "app web-staging rendered offline from kustomize apps/web/staging")
	require.Positive(t, rep.Blockers())

	// Terraform without Kubernetes objects: Argo CD is still asked.
	argo = &workflowtest.FakeArgoCD{Objects: []ownership.ManagedObject{deployment}}
	tf = workflowtest.TerraformObjects{Objects: []ownership.ManagedObject{bucket}}
	rep, err = owners.Check(t.Context(), offlineProcess(t, w, l, tf, argo, workflowtest.ForbiddenDesired{T: t}), "staging")
	require.NoError(t, err)
	require.Equal(t, 1, argo.Calls())
	require.Empty(t, rep.Sources, "the live check ran")
	require.Equal(t, 2, rep.Objects)

	// Unreachable with nothing of Terraform's in the cluster: a warning
	// that says what was not checked, no blocker.
	argo = &workflowtest.FakeArgoCD{Err: errors.New("connection refused")}
	rep, err = owners.Check(t.Context(), offlineProcess(t, w, l, tf, argo, workflowtest.DesiredRepo{Desired: ownership.Desired{App: "web-staging", Source: "manifests apps/web"}}), "staging")
	require.NoError(t, err)
	require.Zero(t, rep.Blockers())
	var live string
	for _, f := range rep.Findings {
		if f.Code == ownership.CodeLiveUnchecked {
			live = f.Message
		}
	}
	require.Contains(t, live, "Terraform writes no Kubernetes object")
}
