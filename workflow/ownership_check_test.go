package workflow_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

// labMap is the ownership map of the lab: Terraform owns cloud foundations
// and namespaces, Argo CD owns the workloads in namespace web.
func labMap(deploymentFields map[string]workflow.Owner) workflow.OwnershipMap {
	return workflow.OwnershipMap{File: "ownership.yaml", Rules: []workflow.OwnershipRule{
		{Line: 3, Match: workflow.Match{TerraformType: "aws_*"}, Owner: workflow.OwnerTerraform},
		{Line: 5, Match: workflow.Match{Kind: "Namespace"}, Owner: workflow.OwnerTerraform},
		{Line: 7, Match: workflow.Match{Group: "apps", Kind: "Deployment", Namespace: "web"}, Owner: workflow.OwnerArgoCD, Fields: deploymentFields},
		{Line: 10, Match: workflow.Match{Kind: "Service", Namespace: "web"}, Owner: workflow.OwnerArgoCD},
	}}
}

// webFields are what Git's Deployment web/web sets.
var webFields = []string{
	`metadata.labels["app.kubernetes.io/instance"]`,
	"spec.replicas",
	`spec.selector.matchLabels["app.kubernetes.io/name"]`,
	`spec.template.metadata.labels["app.kubernetes.io/name"]`,
	"spec.template.spec.containers[web].image",
}

func argoWeb(fields ...string) workflow.ManagedObject {
	if fields == nil {
		fields = webFields
	}
	return workflow.ManagedObject{
		Manager: workflow.OwnerArgoCD, App: "web-staging", Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web",
		Fields: fields, Automated: true, SelfHeal: true,
	}
}

func argoService() workflow.ManagedObject {
	return workflow.ManagedObject{Manager: workflow.OwnerArgoCD, App: "web-staging", Kind: "Service", Namespace: "web", Name: "web",
		Fields: []string{"spec.ports[http].port", `spec.selector["app.kubernetes.io/name"]`}}
}

// webScale is LAB.md's kubectl_manifest.web_scale: the same Deployment
// with replicas 5 and another image.
func webScale(fields ...string) workflow.ManagedObject {
	if fields == nil {
		fields = []string{
			`spec.selector.matchLabels["app.kubernetes.io/name"]`, "spec.replicas",
			`spec.template.metadata.labels["app.kubernetes.io/name"]`, "spec.template.spec.containers[web].image",
		}
	}
	return workflow.ManagedObject{Manager: workflow.OwnerTerraform, TerraformAddress: "kubectl_manifest.web_scale", TerraformType: "kubectl_manifest",
		Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Fields: fields}
}

func tfBucket() workflow.ManagedObject {
	return workflow.ManagedObject{Manager: workflow.OwnerTerraform, TerraformAddress: "aws_s3_bucket.assets", TerraformType: "aws_s3_bucket"}
}

func tfNamespace() workflow.ManagedObject {
	return workflow.ManagedObject{Manager: workflow.OwnerTerraform, TerraformAddress: "kubernetes_namespace_v1.web", TerraformType: "kubernetes_namespace_v1",
		Kind: "Namespace", Name: "web", Fields: []string{"metadata.labels.team"}}
}

// byCode indexes findings by code.
func byCode(fs []workflow.Finding) map[string][]workflow.Finding {
	out := map[string][]workflow.Finding{}
	for _, f := range fs {
		out[f.Code] = append(out[f.Code], f)
	}
	return out
}

func TestCheckOwnershipFindingClasses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		m       workflow.OwnershipMap
		objects []workflow.ManagedObject
		// want lists the codes expected, each once, in order (blockers
		// first, then by code); check looks closer.
		want  []string
		check func(t *testing.T, fs map[string][]workflow.Finding)
	}{
		{
			name:    "the tug-of-war of LAB.md is a conflict naming replicas and the image",
			m:       labMap(nil),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService(), webScale()},
			want:    []string{workflow.CodeOwnershipConflict, workflow.CodeOwnershipWrongOwner},
			check: func(t *testing.T, fs map[string][]workflow.Finding) {
				c := fs[workflow.CodeOwnershipConflict][0]
				require.Equal(t, "apps/Deployment web/web", c.Subject)
				require.Contains(t, c.Message, "spec.replicas")
				require.Contains(t, c.Message, "spec.template.spec.containers[web].image")
				require.Contains(t, c.Evidence["fields"], "spec.replicas")
				require.Contains(t, c.Evidence["fields"], "spec.template.spec.containers[web].image")
				require.Equal(t, "argocd app web-staging, terraform kubectl_manifest.web_scale", c.Evidence["writers"])
				require.Contains(t, c.NextAction, "ownership.yaml:7 gives")
				require.Contains(t, c.NextAction, "to argocd")
				w := fs[workflow.CodeOwnershipWrongOwner][0]
				require.Contains(t, w.Message, "kubectl_manifest.web_scale")
				require.Contains(t, w.Message, "ownership.yaml:7 gives it to argocd")
			},
		},
		{
			name:    "a clean split: terraform owns namespaces and cloud resources, argo cd the workloads",
			m:       labMap(nil),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService()},
		},
		{
			name: "a split declared in fields: is no conflict while each writer keeps to its fields",
			m:    labMap(map[string]workflow.Owner{"spec.replicas": workflow.OwnerTerraform}),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoService(),
				argoWeb(slices.DeleteFunc(slices.Clone(webFields), func(f string) bool { return f == "spec.replicas" })...),
				webScale("spec.replicas")},
		},
		{
			name:    "two writers of spec.replicas conflict even when the rest is split",
			m:       labMap(map[string]workflow.Owner{"spec.replicas": workflow.OwnerTerraform}),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoService(), argoWeb(), webScale("spec.replicas")},
			want:    []string{workflow.CodeOwnershipConflict, workflow.CodeOwnershipWrongOwner},
			check: func(t *testing.T, fs map[string][]workflow.Finding) {
				c := fs[workflow.CodeOwnershipConflict][0]
				require.Equal(t, "spec.replicas", c.Evidence["fields"])
				require.Contains(t, c.NextAction, "gives spec.replicas to terraform")
				w := fs[workflow.CodeOwnershipWrongOwner][0]
				require.Contains(t, w.Message, "argocd app web-staging sets fields ownership.yaml:7 gives to another owner: spec.replicas (terraform)")
			},
		},
		{
			name:    "a field given to a third owner that argo cd does not ignore",
			m:       labMap(map[string]workflow.Owner{"spec.replicas": "hpa"}),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService()},
			want:    []string{workflow.CodeOwnershipThirdOwnerIgnored},
			check: func(t *testing.T, fs map[string][]workflow.Finding) {
				f := fs[workflow.CodeOwnershipThirdOwnerIgnored][0]
				require.Equal(t, workflow.Warning, f.Severity)
				require.Contains(t, f.Message, "spec.replicas (hpa)")
				require.Contains(t, f.Message, "selfHeal is on")
				require.Contains(t, f.NextAction, "jsonPointers: [/spec/replicas]")
			},
		},
		{
			name: "a third owner's field in ignoreDifferences is left alone",
			m:    labMap(map[string]workflow.Owner{"spec.replicas": "hpa"}),
			objects: func() []workflow.ManagedObject {
				w := argoWeb()
				w.IgnoredFields = []string{"spec.replicas"}
				return []workflow.ManagedObject{tfBucket(), tfNamespace(), w, argoService()}
			}(),
		},
		{
			name: "a third owner of container images, matched with [*], and a jq hint",
			m:    labMap(map[string]workflow.Owner{"spec.template.spec.containers[*].image": "image-updater"}),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoService(), func() workflow.ManagedObject {
				w := argoWeb()
				w.SelfHeal = false
				return w
			}()},
			want: []string{workflow.CodeOwnershipThirdOwnerIgnored},
			check: func(t *testing.T, fs map[string][]workflow.Finding) {
				f := fs[workflow.CodeOwnershipThirdOwnerIgnored][0]
				require.Contains(t, f.Message, "at every sync")
				require.Contains(t, f.NextAction, `.spec.template.spec.containers[] | select(.name == "web") | .image`)
			},
		},
		{
			name:    "managed by a tool the map does not name",
			m:       labMap(nil),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoService(), webScale()},
			want:    []string{workflow.CodeOwnershipWrongOwner},
		},
		{
			name: "unowned and stale",
			m:    labMap(nil),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService(),
				{Manager: workflow.OwnerTerraform, TerraformAddress: "google_pubsub_topic.t", TerraformType: "google_pubsub_topic"}},
			want: []string{workflow.CodeOwnershipUnowned},
			check: func(t *testing.T, fs map[string][]workflow.Finding) {
				require.Equal(t, "google_pubsub_topic.t", fs[workflow.CodeOwnershipUnowned][0].Subject)
			},
		},
		{
			name:    "a rule that matches nothing",
			m:       labMap(nil),
			objects: []workflow.ManagedObject{tfNamespace(), argoWeb(), argoService()},
			want:    []string{workflow.CodeOwnershipStaleRule},
			check: func(t *testing.T, fs map[string][]workflow.Finding) {
				require.Equal(t, "ownership.yaml:3", fs[workflow.CodeOwnershipStaleRule][0].Subject)
			},
		},
		{
			name: "repeated self-heal syncs of one revision are a drift loop",
			m:    labMap(nil),
			objects: func() []workflow.ManagedObject {
				w := argoWeb()
				w.SelfHealSyncs, w.Revision = 4, "0123456789abcdef0123"
				return []workflow.ManagedObject{tfBucket(), tfNamespace(), w, argoService()}
			}(),
			want: []string{workflow.CodeOwnershipDriftLoop},
			check: func(t *testing.T, fs map[string][]workflow.Finding) {
				f := fs[workflow.CodeOwnershipDriftLoop][0]
				require.Equal(t, "argocd app web-staging", f.Subject)
				require.Contains(t, f.Message, "4 automated syncs re-applied revision 0123456789ab")
			},
		},
		{
			name: "two self-heals are not yet a loop, but stay visible",
			m:    labMap(nil),
			objects: func() []workflow.ManagedObject {
				w := argoWeb()
				w.SelfHealSyncs, w.Revision = 2, "0123456789abcdef0123"
				w.LastSelfHeal = time.Date(2026, 11, 30, 17, 31, 2, 0, time.UTC)
				return []workflow.ManagedObject{tfBucket(), tfNamespace(), w, argoService()}
			}(),
			want: []string{workflow.CodeOwnershipSelfHealed},
			check: func(t *testing.T, fs map[string][]workflow.Finding) {
				f := fs[workflow.CodeOwnershipSelfHealed][0]
				require.Equal(t, workflow.Info, f.Severity)
				require.Equal(t, "argocd app web-staging", f.Subject, "one finding per app, not per object")
				require.Equal(t, "self-heal put Git's state back over a live change 2 time(s) at revision 0123456789ab, the latest at 2026-11-30 17:31:02 UTC: someone or something changed objects Argo CD owns", f.Message)
			},
		},
		{
			name: "a declared hand-off still in terraform state",
			m: func() workflow.OwnershipMap {
				m := labMap(nil)
				m.Rules = append(m.Rules, workflow.OwnershipRule{Line: 12, Match: workflow.Match{Namespace: "argocd"}, Owner: workflow.OwnerArgoCD})
				m.Handoffs = []workflow.Handoff{{Line: 20, Match: workflow.Match{TerraformAddress: "helm_release.argocd"}, From: workflow.OwnerTerraform, To: workflow.OwnerArgoCD, Note: "bootstrap"}}
				return m
			}(),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService(), helmArgo(), argoServer()},
			want:    []string{workflow.CodeOwnershipHandoffPending},
			check: func(t *testing.T, fs map[string][]workflow.Finding) {
				f := fs[workflow.CodeOwnershipHandoffPending][0]
				require.Contains(t, f.Message, "ownership.yaml:20")
				require.Contains(t, f.NextAction, "terraform state rm helm_release.argocd")
			},
		},
		{
			name: "a bootstrap helm release also managed by argo cd without a hand-off",
			m: func() workflow.OwnershipMap {
				m := labMap(nil)
				m.Rules = append(m.Rules,
					workflow.OwnershipRule{Line: 12, Match: workflow.Match{TerraformType: "helm_release"}, Owner: workflow.OwnerTerraform},
					workflow.OwnershipRule{Line: 14, Match: workflow.Match{Namespace: "argocd"}, Owner: workflow.OwnerArgoCD})
				return m
			}(),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService(), helmArgo(), argoServer()},
			want:    []string{workflow.CodeOwnershipHandoffUndeclared},
			check: func(t *testing.T, fs map[string][]workflow.Finding) {
				f := fs[workflow.CodeOwnershipHandoffUndeclared][0]
				require.Contains(t, f.Message, "Deployment argocd-server")
				require.Contains(t, f.NextAction, "terraform_address: helm_release.argocd")
			},
		},
		{
			name: "an Application bootstrapped by terraform and managed by argo cd too",
			m: func() workflow.OwnershipMap {
				m := labMap(nil)
				m.Rules = append(m.Rules, workflow.OwnershipRule{Line: 12, Match: workflow.Match{Group: "argoproj.io"}, Owner: workflow.OwnerArgoCD})
				return m
			}(),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService(),
				{Manager: workflow.OwnerTerraform, TerraformAddress: "kubernetes_manifest.root", TerraformType: "kubernetes_manifest",
					Group: "argoproj.io", Kind: "Application", Namespace: "argocd", Name: "root", Fields: []string{"spec.source.repoURL"}},
				{Manager: workflow.OwnerArgoCD, App: "root", Group: "argoproj.io", Kind: "Application", Namespace: "argocd", Name: "root", Fields: []string{"spec.source.repoURL"}},
			},
			want: []string{workflow.CodeOwnershipConflict, workflow.CodeOwnershipWrongOwner, workflow.CodeOwnershipHandoffUndeclared},
		},
		{
			name: "two rules giving one object to two owners",
			m: func() workflow.OwnershipMap {
				m := labMap(nil)
				m.Rules = append([]workflow.OwnershipRule{{Line: 1, Match: workflow.Match{TerraformType: "kubectl_manifest"}, Owner: workflow.OwnerTerraform}}, m.Rules...)
				return m
			}(),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService(), webScale("metadata.annotations.owner")},
			want:    []string{workflow.CodeOwnershipConflict},
			check: func(t *testing.T, fs map[string][]workflow.Finding) {
				require.Contains(t, fs[workflow.CodeOwnershipConflict][0].Message, "gives it to more than one owner (ownership.yaml:1 → terraform, ownership.yaml:7 → argocd)")
			},
		},
		{
			name: "two wrong writers of one object are one finding naming both",
			m:    labMap(nil),
			objects: []workflow.ManagedObject{tfBucket(), tfNamespace(), argoService(),
				webScale(), func() workflow.ManagedObject {
					o := webScale()
					o.TerraformAddress = "kubectl_manifest.web_again"
					return o
				}()},
			want: []string{workflow.CodeOwnershipConflict, workflow.CodeOwnershipWrongOwner},
			check: func(t *testing.T, fs map[string][]workflow.Finding) {
				w := fs[workflow.CodeOwnershipWrongOwner][0]
				require.Contains(t, w.Message, "kubectl_manifest.web_scale")
				require.Contains(t, w.Message, "kubectl_manifest.web_again")
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fs := workflow.CheckOwnership(c.m, c.objects)
			var codes []string
			for _, f := range fs {
				codes = append(codes, f.Code)
				require.NotEmpty(t, f.NextAction, "every finding says what to do next: %s", f)
			}
			require.Equal(t, c.want, codes, "%v", fs)
			blocking := slices.ContainsFunc(c.want, func(code string) bool {
				return code == workflow.CodeOwnershipConflict || code == workflow.CodeOwnershipWrongOwner || code == workflow.CodeOwnershipUnowned
			})
			require.Equal(t, blocking, workflow.Blocking(fs), "conflict, wrong owner and unowned block; nothing else does")
			if c.check != nil {
				c.check(t, byCode(fs))
			}
		})
	}
}

func helmArgo() workflow.ManagedObject {
	return workflow.ManagedObject{Manager: workflow.OwnerTerraform, TerraformAddress: "helm_release.argocd", TerraformType: "helm_release",
		Group: "helm.sh", Kind: "HelmRelease", Namespace: "argocd", Name: "argocd"}
}

func argoServer() workflow.ManagedObject {
	return workflow.ManagedObject{Manager: workflow.OwnerArgoCD, App: "argocd", Group: "apps", Kind: "Deployment", Namespace: "argocd", Name: "argocd-server",
		Fields: []string{"spec.template.spec.containers[argocd-server].image"}}
}

func TestOwnershipMatrixListsResourceOwnerAndFields(t *testing.T) {
	t.Parallel()
	m := labMap(map[string]workflow.Owner{"spec.replicas": "hpa"})
	rows := workflow.OwnershipMatrix(m, []workflow.ManagedObject{webScale(), tfBucket(), argoWeb(), tfNamespace()})
	require.Len(t, rows, 3)
	require.Equal(t, "apps/Deployment web/web", rows[0].Subject)
	require.Equal(t, "ownership.yaml:7", rows[0].Rule)
	require.Equal(t, workflow.OwnerArgoCD, rows[0].Owner)
	require.Equal(t, map[string]workflow.Owner{"spec.replicas": "hpa"}, rows[0].FieldOwners)
	require.Len(t, rows[0].Writers, 2)
	require.Equal(t, "argocd app web-staging", rows[0].Writers[0].Via)
	require.Equal(t, "terraform kubectl_manifest.web_scale", rows[0].Writers[1].Via)
	require.Equal(t, "aws_s3_bucket.assets", rows[1].Subject)
	require.Equal(t, "core/Namespace web", rows[2].Subject)

	b, err := json.Marshal(rows)
	require.NoError(t, err)
	require.True(t, strings.Contains(string(b), `"field_owners":{"spec.replicas":"hpa"}`), string(b))
}

func TestFieldPathsKeyContainersByName(t *testing.T) {
	t.Parallel()
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{
	  "apiVersion": "apps/v1", "kind": "Deployment",
	  "metadata": {"name": "web", "namespace": "web", "uid": "x", "labels": {"app.kubernetes.io/name": "web"}, "annotations": {}},
	  "spec": {"replicas": 3,
	    "template": {"spec": {
	      "containers": [{"name": "web", "image": "web:1", "args": ["a", "b"], "ports": [{"containerPort": 80}]}, {"name": "sidecar", "image": "s:1"}],
	      "tolerations": [{"key": "k", "effect": "NoSchedule"}],
	      "securityContext": null}}},
	  "status": {"replicas": 3}}`), &obj))
	require.Equal(t, []string{
		"metadata.annotations",
		`metadata.labels["app.kubernetes.io/name"]`,
		"spec.replicas",
		"spec.template.spec.containers[sidecar].image",
		"spec.template.spec.containers[web].args",
		"spec.template.spec.containers[web].image",
		"spec.template.spec.containers[web].ports[0].containerPort",
		"spec.template.spec.tolerations[0].effect",
		"spec.template.spec.tolerations[0].key",
	}, workflow.FieldPaths(obj))

	require.Equal(t, "spec.template.spec.containers[web].image", workflow.JSONPointerField("/spec/template/spec/containers/0/image", obj))
	require.Equal(t, "spec.replicas", workflow.JSONPointerField("/spec/replicas", obj))
	require.Equal(t, `metadata.annotations["example.com/x"]`, workflow.JSONPointerField("/metadata/annotations/example.com~1x", obj))
	require.Equal(t, "spec.template.spec.initContainers[0].image", workflow.JSONPointerField("/spec/template/spec/initContainers/0/image", obj))
	require.Equal(t, "spec.replicas", workflow.JSONPointerField("/spec/replicas", nil))
}

func TestFieldCovers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, field string
		want           bool
	}{
		{"spec.replicas", "spec.replicas", true},
		{"spec.replicas", "spec.replicasMax", false},
		{"spec.template", "spec.template.spec.containers[web].image", true},
		{"spec.template.spec.containers[web]", "spec.template.spec.containers[web].image", true},
		{"spec.template.spec.containers[*].image", "spec.template.spec.containers[web].image", true},
		{"spec.template.spec.containers[*].image", "spec.template.spec.containers[web].env[X].value", false},
		{"spec.template.spec.containers[*]", "spec.template.spec.containersX", false},
		{`metadata.labels["a.b"]`, `metadata.labels["a.b"]`, true},
		{`metadata.labels[*]`, `metadata.labels["a.b"]`, true},
		{"spec.template.spec.containers[web].image", "spec.template.spec.containers[web]", false},
	} {
		require.Equal(t, c.want, workflow.FieldCovers(c.pattern, c.field), "%s covers %s", c.pattern, c.field)
	}
}

// TestPrecompiledMatchAgreesWithPathMatch protects the fast matcher: it must
// select exactly what Match.Matches (path.Match) selects.
func TestPrecompiledMatchAgreesWithPathMatch(t *testing.T) {
	t.Parallel()
	patterns := []string{"", "*", "aws_*", "*_bucket", "web", "w?b", "web-*-x", "[a-c]*", "a/*", `we\b`}
	values := []string{"", "web", "aws_s3_bucket", "aws_", "gcs_bucket", "web-1-x", "a/b", "a/b/c", "bweb", "wab", "aws_x/y"}
	for _, p := range patterns {
		for _, v := range values {
			o := workflow.ManagedObject{Manager: workflow.OwnerArgoCD, Kind: "Deployment", Name: v}
			m := workflow.OwnershipMap{File: "o.yaml", Rules: []workflow.OwnershipRule{{Line: 1, Match: workflow.Match{Kind: "Deployment", Name: p}, Owner: workflow.OwnerArgoCD}}}
			_, idx := m.RuleFor(o)
			stale := slices.ContainsFunc(workflow.CheckOwnership(m, []workflow.ManagedObject{o}), func(f workflow.Finding) bool {
				return f.Code == workflow.CodeOwnershipUnowned
			})
			require.Equal(t, idx >= 0, !stale, "pattern %q value %q", p, v)
		}
	}
}
