package ownership_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/ownership"
)

// labMap is the ownership map of the lab: Terraform owns cloud foundations
// and namespaces, Argo CD owns the workloads in namespace web.
func labMap(deploymentFields map[string]ownership.Owner) ownership.Map {
	return ownership.Map{File: "ownership.yaml", Rules: []ownership.Rule{
		{Line: 3, Match: ownership.Match{TerraformType: "aws_*"}, Owner: ownership.OwnerTerraform},
		{Line: 5, Match: ownership.Match{Kind: "Namespace"}, Owner: ownership.OwnerTerraform},
		{Line: 7, Match: ownership.Match{Group: "apps", Kind: "Deployment", Namespace: "web"}, Owner: ownership.OwnerArgoCD, Fields: deploymentFields},
		{Line: 10, Match: ownership.Match{Kind: "Service", Namespace: "web"}, Owner: ownership.OwnerArgoCD},
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

func argoWeb(fields ...string) ownership.ManagedObject {
	if fields == nil {
		fields = webFields
	}
	return ownership.ManagedObject{
		Manager: ownership.OwnerArgoCD, App: "web-staging", Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web",
		Fields: fields, Automated: true, SelfHeal: true,
	}
}

func argoService() ownership.ManagedObject {
	return ownership.ManagedObject{Manager: ownership.OwnerArgoCD, App: "web-staging", Kind: "Service", Namespace: "web", Name: "web",
		Fields: []string{"spec.ports[http].port", `spec.selector["app.kubernetes.io/name"]`}}
}

// webScale is LAB.md's kubectl_manifest.web_scale: the same Deployment
// with replicas 5 and another image.
func webScale(fields ...string) ownership.ManagedObject {
	if fields == nil {
		fields = []string{
			`spec.selector.matchLabels["app.kubernetes.io/name"]`, "spec.replicas",
			`spec.template.metadata.labels["app.kubernetes.io/name"]`, "spec.template.spec.containers[web].image",
		}
	}
	return ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformAddress: "kubectl_manifest.web_scale", TerraformType: "kubectl_manifest",
		Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Fields: fields}
}

func tfBucket() ownership.ManagedObject {
	return ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformAddress: "aws_s3_bucket.assets", TerraformType: "aws_s3_bucket"}
}

func tfNamespace() ownership.ManagedObject {
	return ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformAddress: "kubernetes_namespace_v1.web", TerraformType: "kubernetes_namespace_v1",
		Kind: "Namespace", Name: "web", Fields: []string{"metadata.labels.team"}}
}

// byCode indexes findings by code.
func byCode(fs []finding.Finding) map[string][]finding.Finding {
	out := map[string][]finding.Finding{}
	for _, f := range fs {
		out[f.Code] = append(out[f.Code], f)
	}
	return out
}

func TestCheckOwnershipFindingClasses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		m       ownership.Map
		objects []ownership.ManagedObject
		// want lists the codes expected, each once, in order (blockers
		// first, then by code); check looks closer.
		want  []string
		check func(t *testing.T, fs map[string][]finding.Finding)
	}{
		{
			name:    "the tug-of-war of LAB.md is a conflict naming replicas and the image",
			m:       labMap(nil),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService(), webScale()},
			want:    []string{ownership.CodeConflict, ownership.CodeWrongOwner},
			check: func(t *testing.T, fs map[string][]finding.Finding) {
				c := fs[ownership.CodeConflict][0]
				require.Equal(t, "apps/Deployment web/web", c.Subject)
				require.Contains(t, c.Message, "spec.replicas")
				require.Contains(t, c.Message, "spec.template.spec.containers[web].image")
				require.Contains(t, c.Fact("fields"), "spec.replicas")
				require.Contains(t, c.Fact("fields"), "spec.template.spec.containers[web].image")
				require.Equal(t, "argocd app web-staging, terraform kubectl_manifest.web_scale", c.Fact("writers"))
				require.Contains(t, c.NextAction, "ownership.yaml:7 gives")
				require.Contains(t, c.NextAction, "to argocd")
				w := fs[ownership.CodeWrongOwner][0]
				require.Contains(t, w.Message, "kubectl_manifest.web_scale")
				require.Contains(t, w.Message, "ownership.yaml:7 gives it to argocd")
			},
		},
		{
			name:    "a clean split: terraform owns namespaces and cloud resources, argo cd the workloads",
			m:       labMap(nil),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService()},
		},
		{
			name: "a split declared in fields: is no conflict while each writer keeps to its fields",
			m:    labMap(map[string]ownership.Owner{"spec.replicas": ownership.OwnerTerraform}),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoService(),
				argoWeb(slices.DeleteFunc(slices.Clone(webFields), func(f string) bool { return f == "spec.replicas" })...),
				webScale("spec.replicas")},
		},
		{
			name:    "two writers of spec.replicas conflict even when the rest is split",
			m:       labMap(map[string]ownership.Owner{"spec.replicas": ownership.OwnerTerraform}),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoService(), argoWeb(), webScale("spec.replicas")},
			want:    []string{ownership.CodeConflict, ownership.CodeWrongOwner},
			check: func(t *testing.T, fs map[string][]finding.Finding) {
				c := fs[ownership.CodeConflict][0]
				require.Equal(t, "spec.replicas", c.Fact("fields"))
				require.Contains(t, c.NextAction, "gives spec.replicas to terraform")
				w := fs[ownership.CodeWrongOwner][0]
				require.Contains(t, w.Message, "argocd app web-staging sets fields ownership.yaml:7 gives to another owner: spec.replicas (terraform)")
			},
		},
		{
			name:    "a field given to a third owner that argo cd does not ignore",
			m:       labMap(map[string]ownership.Owner{"spec.replicas": "hpa"}),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService()},
			want:    []string{ownership.CodeThirdOwnerIgnored},
			check: func(t *testing.T, fs map[string][]finding.Finding) {
				f := fs[ownership.CodeThirdOwnerIgnored][0]
				require.Equal(t, finding.Warning, f.Severity)
				require.Contains(t, f.Message, "spec.replicas (hpa)")
				require.Contains(t, f.Message, "selfHeal is on")
				require.Contains(t, f.NextAction, "jsonPointers: [/spec/replicas]")
			},
		},
		{
			name: "a third owner's field in ignoreDifferences is left alone",
			m:    labMap(map[string]ownership.Owner{"spec.replicas": "hpa"}),
			objects: func() []ownership.ManagedObject {
				w := argoWeb()
				w.IgnoredFields = []string{"spec.replicas"}
				return []ownership.ManagedObject{tfBucket(), tfNamespace(), w, argoService()}
			}(),
		},
		{
			name: "a third owner of container images, matched with [*], and a jq hint",
			m:    labMap(map[string]ownership.Owner{"spec.template.spec.containers[*].image": "image-updater"}),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoService(), func() ownership.ManagedObject {
				w := argoWeb()
				w.SelfHeal = false
				return w
			}()},
			want: []string{ownership.CodeThirdOwnerIgnored},
			check: func(t *testing.T, fs map[string][]finding.Finding) {
				f := fs[ownership.CodeThirdOwnerIgnored][0]
				require.Contains(t, f.Message, "at every sync")
				require.Contains(t, f.NextAction, `.spec.template.spec.containers[] | select(.name == "web") | .image`)
			},
		},
		{
			name:    "managed by a tool the map does not name",
			m:       labMap(nil),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoService(), webScale()},
			want:    []string{ownership.CodeWrongOwner},
		},
		{
			name: "unowned and stale",
			m:    labMap(nil),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService(),
				{Manager: ownership.OwnerTerraform, TerraformAddress: "google_pubsub_topic.t", TerraformType: "google_pubsub_topic"}},
			want: []string{ownership.CodeUnowned},
			check: func(t *testing.T, fs map[string][]finding.Finding) {
				require.Equal(t, "google_pubsub_topic.t", fs[ownership.CodeUnowned][0].Subject)
			},
		},
		{
			name:    "a rule that matches nothing",
			m:       labMap(nil),
			objects: []ownership.ManagedObject{tfNamespace(), argoWeb(), argoService()},
			want:    []string{ownership.CodeStaleRule},
			check: func(t *testing.T, fs map[string][]finding.Finding) {
				require.Equal(t, "ownership.yaml:3", fs[ownership.CodeStaleRule][0].Subject)
			},
		},
		{
			name: "repeated self-heal syncs of one revision are a drift loop",
			m:    labMap(nil),
			objects: func() []ownership.ManagedObject {
				w := argoWeb()
				w.SelfHealSyncs, w.Revision = 4, "0123456789abcdef0123"
				return []ownership.ManagedObject{tfBucket(), tfNamespace(), w, argoService()}
			}(),
			want: []string{ownership.CodeDriftLoop},
			check: func(t *testing.T, fs map[string][]finding.Finding) {
				f := fs[ownership.CodeDriftLoop][0]
				require.Equal(t, "argocd app web-staging", f.Subject)
				require.Contains(t, f.Message, "4 automated syncs re-applied revision 0123456789ab")
			},
		},
		{
			name: "two self-heals are not yet a loop, but stay visible",
			m:    labMap(nil),
			objects: func() []ownership.ManagedObject {
				w := argoWeb()
				w.SelfHealSyncs, w.Revision = 2, "0123456789abcdef0123"
				w.LastSelfHeal = time.Date(2026, 11, 30, 17, 31, 2, 0, time.UTC)
				return []ownership.ManagedObject{tfBucket(), tfNamespace(), w, argoService()}
			}(),
			want: []string{ownership.CodeSelfHealed},
			check: func(t *testing.T, fs map[string][]finding.Finding) {
				f := fs[ownership.CodeSelfHealed][0]
				require.Equal(t, finding.Info, f.Severity)
				require.Equal(t, "argocd app web-staging", f.Subject, "one finding per app, not per object")
				require.Equal(t, "self-heal put Git's state back over a live change 2 time(s) at revision 0123456789ab, the latest at 2026-11-30 17:31:02 UTC: someone or something changed objects Argo CD owns", f.Message)
			},
		},
		{
			name: "a declared hand-off still in terraform state",
			m: func() ownership.Map {
				m := labMap(nil)
				m.Rules = append(m.Rules, ownership.Rule{Line: 12, Match: ownership.Match{Namespace: "argocd"}, Owner: ownership.OwnerArgoCD})
				m.Handoffs = []ownership.Handoff{{Line: 20, Match: ownership.Match{TerraformAddress: "helm_release.argocd"}, From: ownership.OwnerTerraform, To: ownership.OwnerArgoCD, Note: "bootstrap"}}
				return m
			}(),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService(), helmArgo(), argoServer()},
			want:    []string{ownership.CodeHandoffPending},
			check: func(t *testing.T, fs map[string][]finding.Finding) {
				f := fs[ownership.CodeHandoffPending][0]
				require.Contains(t, f.Message, "ownership.yaml:20")
				require.Contains(t, f.NextAction, "terraform state rm helm_release.argocd")
			},
		},
		{
			name: "a bootstrap helm release also managed by argo cd without a hand-off",
			m: func() ownership.Map {
				m := labMap(nil)
				m.Rules = append(m.Rules,
					ownership.Rule{Line: 12, Match: ownership.Match{TerraformType: "helm_release"}, Owner: ownership.OwnerTerraform},
					ownership.Rule{Line: 14, Match: ownership.Match{Namespace: "argocd"}, Owner: ownership.OwnerArgoCD})
				return m
			}(),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService(), helmArgo(), argoServer()},
			want:    []string{ownership.CodeHandoffUndeclared},
			check: func(t *testing.T, fs map[string][]finding.Finding) {
				f := fs[ownership.CodeHandoffUndeclared][0]
				require.Contains(t, f.Message, "Deployment argocd-server")
				require.Contains(t, f.NextAction, "terraform_address: helm_release.argocd")
			},
		},
		{
			name: "an Application bootstrapped by terraform and managed by argo cd too",
			m: func() ownership.Map {
				m := labMap(nil)
				m.Rules = append(m.Rules, ownership.Rule{Line: 12, Match: ownership.Match{Group: "argoproj.io"}, Owner: ownership.OwnerArgoCD})
				return m
			}(),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService(),
				{Manager: ownership.OwnerTerraform, TerraformAddress: "kubernetes_manifest.root", TerraformType: "kubernetes_manifest",
					Group: "argoproj.io", Kind: "Application", Namespace: "argocd", Name: "root", Fields: []string{"spec.source.repoURL"}},
				{Manager: ownership.OwnerArgoCD, App: "root", Group: "argoproj.io", Kind: "Application", Namespace: "argocd", Name: "root", Fields: []string{"spec.source.repoURL"}},
			},
			want: []string{ownership.CodeConflict, ownership.CodeWrongOwner, ownership.CodeHandoffUndeclared},
		},
		{
			name: "two rules giving one object to two owners",
			m: func() ownership.Map {
				m := labMap(nil)
				m.Rules = append([]ownership.Rule{{Line: 1, Match: ownership.Match{TerraformType: "kubectl_manifest"}, Owner: ownership.OwnerTerraform}}, m.Rules...)
				return m
			}(),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoWeb(), argoService(), webScale("metadata.annotations.owner")},
			want:    []string{ownership.CodeConflict},
			check: func(t *testing.T, fs map[string][]finding.Finding) {
				require.Contains(t, fs[ownership.CodeConflict][0].Message, "gives it to more than one owner (ownership.yaml:1 → terraform, ownership.yaml:7 → argocd)")
			},
		},
		{
			name: "two wrong writers of one object are one finding naming both",
			m:    labMap(nil),
			objects: []ownership.ManagedObject{tfBucket(), tfNamespace(), argoService(),
				webScale(), func() ownership.ManagedObject {
					o := webScale()
					o.TerraformAddress = "kubectl_manifest.web_again"
					return o
				}()},
			want: []string{ownership.CodeConflict, ownership.CodeWrongOwner},
			check: func(t *testing.T, fs map[string][]finding.Finding) {
				w := fs[ownership.CodeWrongOwner][0]
				require.Contains(t, w.Message, "kubectl_manifest.web_scale")
				require.Contains(t, w.Message, "kubectl_manifest.web_again")
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fs := ownership.Check(c.m, c.objects)
			var codes []string
			for _, f := range fs {
				codes = append(codes, f.Code)
				require.NotEmpty(t, f.NextAction, "every finding says what to do next: %s", f)
			}
			require.Equal(t, c.want, codes, "%v", fs)
			blocking := slices.ContainsFunc(c.want, func(code string) bool {
				return code == ownership.CodeConflict || code == ownership.CodeWrongOwner || code == ownership.CodeUnowned
			})
			require.Equal(t, blocking, finding.Blocking(fs), "conflict, wrong owner and unowned block; nothing else does")
			if c.check != nil {
				c.check(t, byCode(fs))
			}
		})
	}
}

func helmArgo() ownership.ManagedObject {
	return ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformAddress: "helm_release.argocd", TerraformType: "helm_release",
		Group: "helm.sh", Kind: "HelmRelease", Namespace: "argocd", Name: "argocd"}
}

func argoServer() ownership.ManagedObject {
	return ownership.ManagedObject{Manager: ownership.OwnerArgoCD, App: "argocd", Group: "apps", Kind: "Deployment", Namespace: "argocd", Name: "argocd-server",
		Fields: []string{"spec.template.spec.containers[argocd-server].image"}}
}

func TestOwnershipMatrixListsResourceOwnerAndFields(t *testing.T) {
	t.Parallel()
	m := labMap(map[string]ownership.Owner{"spec.replicas": "hpa"})
	rows := ownership.Matrix(m, []ownership.ManagedObject{webScale(), tfBucket(), argoWeb(), tfNamespace()})
	require.Len(t, rows, 3)
	require.Equal(t, "apps/Deployment web/web", rows[0].Subject)
	require.Equal(t, "ownership.yaml:7", rows[0].Rule)
	require.Equal(t, ownership.OwnerArgoCD, rows[0].Owner)
	require.Equal(t, map[string]ownership.Owner{"spec.replicas": "hpa"}, rows[0].FieldOwners)
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
	}, ownership.FieldPaths(obj))

	require.Equal(t, "spec.template.spec.containers[web].image", ownership.JSONPointerField("/spec/template/spec/containers/0/image", obj))
	require.Equal(t, "spec.replicas", ownership.JSONPointerField("/spec/replicas", obj))
	require.Equal(t, `metadata.annotations["example.com/x"]`, ownership.JSONPointerField("/metadata/annotations/example.com~1x", obj))
	require.Equal(t, "spec.template.spec.initContainers[0].image", ownership.JSONPointerField("/spec/template/spec/initContainers/0/image", obj))
	require.Equal(t, "spec.replicas", ownership.JSONPointerField("/spec/replicas", nil))
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
		require.Equal(t, c.want, ownership.FieldCovers(c.pattern, c.field), "%s covers %s", c.pattern, c.field)
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
			o := ownership.ManagedObject{Manager: ownership.OwnerArgoCD, Kind: "Deployment", Name: v}
			m := ownership.Map{File: "o.yaml", Rules: []ownership.Rule{{Line: 1, Match: ownership.Match{Kind: "Deployment", Name: p}, Owner: ownership.OwnerArgoCD}}}
			_, idx := m.RuleFor(o)
			stale := slices.ContainsFunc(ownership.Check(m, []ownership.ManagedObject{o}), func(f finding.Finding) bool {
				return f.Code == ownership.CodeUnowned
			})
			require.Equal(t, idx >= 0, !stale, "pattern %q value %q", p, v)
		}
	}
}

func TestCheckOwnershipFindsConflictsWrongOwnersUnownedAndStaleRules(t *testing.T) {
	t.Parallel()
	m := ownership.Map{File: "ownership.yaml", Rules: []ownership.Rule{
		{Line: 3, Match: ownership.Match{TerraformType: "aws_*"}, Owner: "terraform"},
		{Line: 5, Match: ownership.Match{Kind: "Namespace"}, Owner: "terraform"},
		{Line: 7, Match: ownership.Match{Group: "apps", Kind: "Deployment", Namespace: "web"}, Owner: "argocd"},
		{Line: 9, Match: ownership.Match{Kind: "CronJob"}, Owner: "argocd"},
	}}
	objects := []ownership.ManagedObject{
		{Manager: "terraform", TerraformAddress: "aws_s3_bucket.a", TerraformType: "aws_s3_bucket"},
		{Manager: "argocd", App: "web", Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image"}},
		{Manager: "terraform", TerraformAddress: "kubectl_manifest.web", TerraformType: "kubectl_manifest", Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Fields: []string{"spec.replicas"}},
		{Manager: "terraform", TerraformAddress: "google_pubsub_topic.t", TerraformType: "google_pubsub_topic"},
	}
	fs := ownership.Check(m, objects)
	codes := map[string]finding.Finding{}
	var stale []string
	for _, f := range fs {
		codes[f.Code] = f
		if f.Code == "ownership.stale-rule" {
			stale = append(stale, f.Subject)
		}
	}
	require.Equal(t, "ownership.conflict", fs[0].Code)
	require.Equal(t, "spec.replicas", codes["ownership.conflict"].Fact("fields"))
	require.Contains(t, codes["ownership.wrong-owner"].Message, "kubectl_manifest.web")
	require.Equal(t, "google_pubsub_topic.t", codes["ownership.unowned"].Subject)
	require.Equal(t, []string{"ownership.yaml:5", "ownership.yaml:9"}, stale)
	require.True(t, finding.Blocking(fs))
}
