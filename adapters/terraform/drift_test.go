package terraform

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// tugOfWarPlan is a plan whose refresh found kubectl_manifest.web's
// Deployment changed outside Terraform (Argo CD's self-heal put its own
// replicas and image back), and which would write Terraform's back.
const tugOfWarPlan = `{
  "format_version": "1.2",
  "terraform_version": "1.5.7",
  "resource_drift": [{
    "address": "kubectl_manifest.web", "mode": "managed", "type": "kubectl_manifest", "name": "web",
    "provider_name": "registry.terraform.io/gavinbunney/kubectl",
    "change": {
      "actions": ["update"],
      "before": {"yaml_incluster": "a1", "yaml_body_parsed": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: web\nspec:\n  replicas: 5\n  template:\n    spec:\n      containers:\n      - name: web\n        image: registry.invalid/web:5\n"},
      "after": {"yaml_incluster": "b2", "yaml_body_parsed": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: web\nspec:\n  replicas: 5\n  template:\n    spec:\n      containers:\n      - name: web\n        image: registry.invalid/web:5\n"},
      "before_sensitive": {"yaml_incluster": true}, "after_sensitive": {"yaml_incluster": true}
    }
  }],
  "resource_changes": [{
    "address": "kubectl_manifest.web", "mode": "managed", "type": "kubectl_manifest", "name": "web",
    "change": {"actions": ["update"], "before": {"yaml_incluster": "b2"}, "after": {"yaml_incluster": "a1"},
      "before_sensitive": {"yaml_incluster": true}, "after_sensitive": {"yaml_incluster": true}, "after_unknown": {}}
  }],
  "complete": true,
  "errored": false
}`

// TestDriftOfArgoCDsFieldsBlocksTheApply: the drift section names the
// resource; the ownership map gives the Deployment to Argo CD, so the
// review blocks naming the fields the apply would revert.
func TestDriftOfArgoCDsFieldsBlocksTheApply(t *testing.T) {
	t.Parallel()
	s, err := reviewJSON(strings.NewReader(tugOfWarPlan), "staging", tfplan.DefaultClassify(), secret.NewSet())
	require.NoError(t, err)
	require.Len(t, s.Drift, 1)
	d := s.Drift[0]
	require.Equal(t, "kubectl_manifest.web", d.Address)
	require.NotNil(t, d.Object)
	require.Equal(t, "Deployment", d.Object.Kind)
	require.Equal(t, "web", d.Object.Namespace)
	require.Contains(t, d.Object.Fields, "spec.replicas")
	require.Equal(t, []tfplan.AttributeChange{{Path: "yaml_incluster", Before: "(sensitive)", After: "(sensitive)", Sensitive: true}}, d.Attributes,
		"what the refresh found, its sensitive values masked")
	require.Equal(t, 1, s.Counts.Update)

	m := ownership.Map{File: "ownership.yaml", Rules: []ownership.Rule{{Line: 4, Match: ownership.Match{Group: "apps", Kind: "Deployment"}, Owner: ownership.OwnerArgoCD}}}
	tfplan.ReviewDrift(&s, m)
	why, refused := s.Refused()
	require.True(t, refused)
	require.Contains(t, why, "kubectl_manifest.web: apps/Deployment web/web changed outside Terraform, and ownership.yaml:4 gives spec.replicas")
	require.Contains(t, why, "spec.template.spec.containers[web].image")
	require.Contains(t, why, "to argocd; this apply would revert them")

	tfplan.ReviewDrift(&s, m)
	n := 0
	for _, f := range s.Findings {
		if f.Code == tfplan.CodePlanDriftOwned {
			n++
		}
	}
	require.Equal(t, 1, n, "reviewing again replaces, never duplicates")
}

// TestIncompleteErroredAndFailedCheckPlansAreRead: the document's own
// completeness, errors and checks reach the summary.
func TestIncompleteErroredAndFailedCheckPlansAreRead(t *testing.T) {
	t.Parallel()
	doc := `{"format_version":"1.2","resource_changes":[],"complete":false,"errored":true,
	  "deferred_changes":[{"reason":"provider_config_unknown","resource_change":{"address":"kubernetes_namespace.x","change":{"actions":["create"]}}}],
	  "checks":[{"address":{"to_display":"aws_s3_bucket.data","kind":"resource"},"status":"fail","instances":[{"address":{"to_display":"aws_s3_bucket.data"},"status":"fail","problems":[{"message":"buckets must be private"}]}]},
	            {"address":{"to_display":"check.health","kind":"check"},"status":"unknown"}]}`
	s, err := reviewJSON(strings.NewReader(doc), "staging", tfplan.DefaultClassify(), secret.NewSet())
	require.NoError(t, err)
	require.True(t, s.Incomplete)
	require.True(t, s.Errored)
	require.Equal(t, []tfplan.DeferredChange{{Address: "kubernetes_namespace.x", Reason: "provider_config_unknown"}}, s.Deferred)
	require.Equal(t, []tfplan.CheckResult{
		{Address: "aws_s3_bucket.data", Kind: "resource", Status: tfplan.CheckFail, Problems: []string{"buckets must be private"}},
		{Address: "check.health", Kind: "check", Status: tfplan.CheckUnknown},
	}, s.Checks)
	why, refused := s.Refused()
	require.True(t, refused)
	for _, want := range []string{"Terraform reported errors while planning", "kubernetes_namespace.x (provider config unknown)", "resource check failed: buckets must be private"} {
		require.Contains(t, why, want)
	}
	require.NotContains(t, why, "check.health", "an unknown result warns, it does not refuse")
}
