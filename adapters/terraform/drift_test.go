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

// manifestDriftPlan: a kubernetes_manifest whose object Argo CD changed
// (replicas and image), and a Secret managed the same way whose data
// changed: the review names the Deployment's fields with their values and
// owners, and the Secret's field without its value.
const manifestDriftPlan = `{
  "format_version": "1.2",
  "resource_drift": [{
    "address": "kubernetes_manifest.web", "mode": "managed", "type": "kubernetes_manifest", "name": "web",
    "change": {"actions": ["update"],
      "before": {"manifest": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "web"},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "web", "image": "web:3"}]}}}}, "object": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "web"},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "web", "image": "web:3"}]}}}}},
      "after": {"manifest": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "web"},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "web", "image": "web:3"}]}}}}, "object": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "web"},
        "spec": {"replicas": 5, "template": {"spec": {"containers": [{"name": "web", "image": "web:5"}]}}}}}}
  }, {
    "address": "kubernetes_manifest.db", "mode": "managed", "type": "kubernetes_manifest", "name": "db",
    "change": {"actions": ["update"],
      "before": {"manifest": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "web"}, "data": {"password": "aHVudGVyMg=="}}, "object": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "web"}, "data": {"password": "aHVudGVyMg=="}}},
      "after": {"manifest": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "web"}, "data": {"password": "aHVudGVyMg=="}}, "object": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "web"}, "data": {"password": "c3dvcmRmaXNo"}}}}
  }],
  "resource_changes": [],
  "complete": true, "errored": false
}`

func TestDriftOfAManifestNamesTheFieldsTheirValuesAndOwners(t *testing.T) {
	t.Parallel()
	s, err := reviewJSON(strings.NewReader(manifestDriftPlan), "staging", tfplan.DefaultClassify(), secret.NewSet())
	require.NoError(t, err)
	require.Len(t, s.Drift, 2)
	require.Equal(t, []ownership.FieldChange{
		{Field: "spec.replicas", Before: "3", After: "5"},
		{Field: "spec.template.spec.containers[web].image", Before: `"web:3"`, After: `"web:5"`},
	}, s.Drift[0].Fields)
	require.Equal(t, []ownership.FieldChange{{Field: "data.password", Masked: true}}, s.Drift[1].Fields)

	m := ownership.Map{File: "ownership.yaml", Rules: []ownership.Rule{
		{Line: 4, Match: ownership.Match{Group: "apps", Kind: "Deployment"}, Owner: ownership.OwnerArgoCD,
			Fields: map[string]ownership.Owner{"spec.replicas": "hpa"}},
		{Line: 7, Match: ownership.Match{TerraformType: "*"}, Owner: ownership.OwnerTerraform},
	}}
	tfplan.ReviewDrift(&s, m)
	var drift, owned []string
	for _, f := range s.Findings {
		switch f.Code {
		case tfplan.CodePlanDrift:
			drift = append(drift, f.Subject+": "+f.Message)
		case tfplan.CodePlanDriftOwned:
			owned = append(owned, f.Message)
		}
	}
	require.Contains(t, drift, "kubernetes_manifest.web: spec.replicas 3 → 5 (hpa, ownership.yaml:4), "+
		`spec.template.spec.containers[web].image "web:3" → "web:5" (argocd, ownership.yaml:4) changed outside Terraform since the last apply; this apply writes Terraform's values back`)
	require.Contains(t, drift, "kubernetes_manifest.db: data.password changed (value masked) (terraform, ownership.yaml:7) changed outside Terraform since the last apply; this apply writes Terraform's values back")
	require.Len(t, owned, 1)
	require.Contains(t, owned[0], "spec.replicas 3 → 5 to hpa")
	require.Contains(t, owned[0], `spec.template.spec.containers[web].image "web:3" → "web:5" to argocd`)
	for _, f := range s.Findings {
		require.NotContains(t, f.Message, "aHVudGVyMg==")
		require.NotContains(t, f.Message, "c3dvcmRmaXNo")
	}
}

func TestDriftOfAManifestMasksWhatTerraformMarksSensitive(t *testing.T) {
	t.Parallel()
	cm := func(v string) string {
		return `{"manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "web"}, "data": {"token": "x"}},
		  "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "web"}, "data": {"token": "` + v + `", "mode": "` + v[:2] + `"}}}`
	}
	doc := `{"format_version": "1.2", "resource_drift": [{"address": "kubernetes_manifest.c", "mode": "managed", "type": "kubernetes_manifest", "name": "c",
	  "change": {"actions": ["update"], "before": ` + cm("p@ss:w/rd+1") + `, "after": ` + cm("n3w?s3cr=t") + `,
	  "before_sensitive": {"object": {"data": {"token": true}}}, "after_sensitive": {"object": {"data": {"token": true}}}}}],
	  "resource_changes": [], "complete": true, "errored": false}`
	s, err := reviewJSON(strings.NewReader(doc), "staging", tfplan.DefaultClassify(), secret.NewSet())
	require.NoError(t, err)
	require.Equal(t, []ownership.FieldChange{
		{Field: "data.mode", Before: `"p@"`, After: `"n3"`},
		{Field: "data.token", Masked: true},
	}, s.Drift[0].Fields)
}

// handoffPlan deletes kubectl_manifest.web (its Deployment web/web) and
// forgets kubectl_manifest.cfg: the first is what a hand-off must never
// do, the second what it does.
const handoffPlan = `{
  "format_version": "1.2",
  "resource_changes": [{
    "address": "kubectl_manifest.web", "mode": "managed", "type": "kubectl_manifest", "name": "web",
    "change": {"actions": ["delete"], "after": null, "after_unknown": {},
      "before": {"api_version": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "web",
        "yaml_body_parsed": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: web\nspec:\n  replicas: 5\n"}}
  }, {
    "address": "kubectl_manifest.cfg", "mode": "managed", "type": "kubectl_manifest", "name": "cfg",
    "change": {"actions": ["forget"], "after": null, "after_unknown": {},
      "before": {"api_version": "v1", "kind": "ConfigMap", "name": "cfg", "namespace": "web", "yaml_body_parsed": "kind: ConfigMap\n"}}
  }],
  "complete": true, "errored": false
}`

func TestAPlanThatDeletesAnObjectHandedOverIsRefused(t *testing.T) {
	t.Parallel()
	s, err := reviewJSON(strings.NewReader(handoffPlan), "staging", tfplan.DefaultClassify(), secret.NewSet())
	require.NoError(t, err)
	m := ownership.Map{File: "ownership.yaml",
		Rules: []ownership.Rule{{Line: 2, Match: ownership.Match{TerraformType: "*"}, Owner: ownership.OwnerTerraform}},
		Handoffs: []ownership.Handoff{
			{Line: 5, Match: ownership.Match{Kind: "Deployment", Namespace: "web", Name: "web"}, From: ownership.OwnerTerraform, To: ownership.OwnerArgoCD},
			{Line: 8, Match: ownership.Match{Kind: "ConfigMap"}, From: ownership.OwnerTerraform, To: ownership.OwnerArgoCD},
		}}
	err = tfplan.ReviewDocument(&s, m)
	require.ErrorContains(t, err, "kubectl_manifest.web: this plan would delete apps/Deployment web/web, which ownership.yaml:5 hands over from terraform to argocd")
	require.NotContains(t, err.Error(), "kubectl_manifest.cfg", "forgetting is what a hand-off does")
	var next string
	for _, f := range s.Findings {
		if f.Code == tfplan.CodePlanHandoffDestroys {
			next = f.NextAction
		}
	}
	require.Contains(t, next, "removed block for kubectl_manifest.web with lifecycle { destroy = false }")

	require.NoError(t, tfplan.ReviewDocument(&s, ownership.Map{File: "ownership.yaml", Rules: m.Rules}), "without the hand-off, a deletion is the reviewers' call")
}

// A forgotten resource writes nothing back: its drift is no tug-of-war.
func TestDriftOfAResourceThePlanForgetsIsNotRefused(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(tugOfWarPlan, `"change": {"actions": ["update"], "before": {"yaml_incluster": "b2"}, "after": {"yaml_incluster": "a1"},`,
		`"change": {"actions": ["forget"], "before": {"yaml_incluster": "b2"}, "after": null,`, 1)
	require.NotEqual(t, tugOfWarPlan, doc)
	s, err := reviewJSON(strings.NewReader(doc), "staging", tfplan.DefaultClassify(), secret.NewSet())
	require.NoError(t, err)
	m := ownership.Map{File: "ownership.yaml", Rules: []ownership.Rule{{Line: 4, Match: ownership.Match{Group: "apps", Kind: "Deployment"}, Owner: ownership.OwnerArgoCD}}}
	require.NoError(t, tfplan.ReviewDocument(&s, m))
}
