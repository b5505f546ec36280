package ownership_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/ownership"
)

// budgetWorld generates the budget case: 10,000 Terraform
// resources (cloud resources, namespaces, kubectl manifests, Helm
// releases) against 50 Argo CD applications managing 10,000 Kubernetes
// objects of 8 fields each, under a map of 60 rules and a hand-off. About
// 1% of the workloads are also written by Terraform, so the conflict path
// is exercised too.
func budgetWorld() (ownership.Map, []ownership.ManagedObject) {
	const apps, perApp = 50, 200
	m := ownership.Map{File: "ownership.yaml"}
	line := 1
	rule := func(match ownership.Match, owner ownership.Owner, fields map[string]ownership.Owner) {
		m.Rules = append(m.Rules, ownership.Rule{Line: line, Match: match, Owner: owner, Fields: fields})
		line += 3
	}
	for _, p := range []string{"aws_*", "google_*", "azurerm_*", "random_*", "tls_*", "null_resource", "terraform_data", "helm_release"} {
		rule(ownership.Match{TerraformType: p}, ownership.OwnerTerraform, nil)
	}
	rule(ownership.Match{Kind: "Namespace"}, ownership.OwnerTerraform, nil)
	for a := range apps {
		rule(ownership.Match{Group: "apps", Kind: "Deployment", Namespace: fmt.Sprintf("team-%02d", a)}, ownership.OwnerArgoCD,
			map[string]ownership.Owner{"spec.replicas": "hpa"})
	}
	rule(ownership.Match{App: "*"}, ownership.OwnerArgoCD, nil)
	m.Handoffs = []ownership.Handoff{{Line: line, Match: ownership.Match{TerraformAddress: "helm_release.argocd"}, From: ownership.OwnerTerraform, To: ownership.OwnerArgoCD}}

	fields := func(name string) []string {
		return []string{
			`metadata.labels["app.kubernetes.io/instance"]`, "spec.replicas",
			`spec.selector.matchLabels["app.kubernetes.io/name"]`, `spec.template.metadata.labels["app.kubernetes.io/name"]`,
			"spec.template.spec.containers[" + name + "].image", "spec.template.spec.containers[" + name + "].ports[http].containerPort",
			"spec.template.spec.containers[" + name + "].resources.limits.memory", "spec.template.spec.containers[" + name + "].env[LOG_LEVEL].value",
		}
	}
	var objects []ownership.ManagedObject
	kinds := []string{"Deployment", "Service", "ConfigMap", "ServiceAccount"}
	for a := range apps {
		ns := fmt.Sprintf("team-%02d", a)
		for i := range perApp {
			kind := kinds[i%len(kinds)]
			group := ""
			if kind == "Deployment" {
				group = "apps"
			}
			name := fmt.Sprintf("svc-%03d", i)
			objects = append(objects, ownership.ManagedObject{
				Manager: ownership.OwnerArgoCD, App: "app-" + ns, Group: group, Kind: kind, Namespace: ns, Name: name,
				Fields: fields(name), IgnoredFields: []string{"spec.replicas"}, Automated: true, SelfHeal: true,
			})
		}
	}
	types := []string{"aws_s3_bucket", "aws_iam_role", "aws_db_instance", "google_pubsub_topic", "azurerm_key_vault", "random_password", "terraform_data"}
	for i := range 10_000 {
		switch {
		case i < 50:
			objects = append(objects, ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformType: "kubernetes_namespace_v1",
				TerraformAddress: fmt.Sprintf("kubernetes_namespace_v1.team[%d]", i), Kind: "Namespace", Name: fmt.Sprintf("team-%02d", i),
				Fields: []string{"metadata.labels.team"}})
		case i < 150:
			// The tug-of-war, a hundred times over.
			j := i - 50
			ns, name := fmt.Sprintf("team-%02d", j%apps), fmt.Sprintf("svc-%03d", 4*(j/apps))
			objects = append(objects, ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformType: "kubectl_manifest",
				TerraformAddress: fmt.Sprintf("kubectl_manifest.scale[%d]", i), Group: "apps", Kind: "Deployment", Namespace: ns, Name: name,
				Fields: []string{"spec.replicas", "spec.template.spec.containers[" + name + "].image"}})
		case i < 160:
			objects = append(objects, ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformType: "helm_release",
				TerraformAddress: fmt.Sprintf("helm_release.addon[%d]", i), Group: "helm.sh", Kind: "HelmRelease", Namespace: "addons", Name: fmt.Sprintf("addon-%d", i)})
		default:
			t := types[i%len(types)]
			objects = append(objects, ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformType: t,
				TerraformAddress: fmt.Sprintf("module.m%d.%s.r%d", i%40, t, i)})
		}
	}
	return m, objects
}

// BenchmarkCheckOwnership10k measures the budget: 10,000 Terraform
// resources against 50 apps with 10,000 managed resources, checked after
// the sources are loaded in under 200 ms. "check" is CheckOwnership alone,
// "matrix" OwnershipMatrix alone, "check+matrix" what relcap ownership
// check computes per environment; that one fails when over budget (the
// budget is widened tenfold under the race detector).
func BenchmarkCheckOwnership10k(b *testing.B) {
	m, objects := budgetWorld()
	for _, c := range []struct {
		name   string
		f      func()
		budget bool
	}{
		{"check", func() { ownership.Check(m, objects) }, false},
		{"matrix", func() { ownership.Matrix(m, objects) }, false},
		{"check+matrix", func() { ownership.Check(m, objects); ownership.Matrix(m, objects) }, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.f()
			}
			b.ReportMetric(float64(len(objects)), "objects")
			if per := b.Elapsed() / time.Duration(b.N); c.budget && per > ownershipBudgetScale*200*time.Millisecond {
				b.Fatalf("%s per check of %d objects: over the 200 ms budget (×%d under -race)", per, len(objects), ownershipBudgetScale)
			}
		})
	}
}

// TestBudgetWorldFightsAHundredTimes keeps the benchmark's world honest:
// it has the size the issue names and exercises the conflict path.
func TestBudgetWorldFightsAHundredTimes(t *testing.T) {
	t.Parallel()
	m, objects := budgetWorld()
	require.Len(t, objects, 20_000)
	fs := byCode(ownership.Check(m, objects))
	require.Equal(t, 100, len(fs[ownership.CodeConflict]), "each kubectl_manifest.scale[i] fights one Deployment")
	require.Len(t, ownership.Matrix(m, objects), 19_900, "one row per object, the 100 shared Deployments once")
}

// inferWorld is budgetWorld with the live field managers Argo CD returns:
// Argo CD's controller holds every field of its objects, and of the hundred
// Deployments Terraform also writes, the kubectl provider holds the two
// fields it applied last (those at an even index) or none (Argo CD took
// them back); kube-controller-manager holds an annotation of its own on
// every object.
func inferWorld() ownership.Sources {
	_, objects := budgetWorld()
	var src ownership.Sources
	src.LiveRan = true
	fought := map[string]bool{}
	for _, o := range objects {
		if o.Manager == ownership.OwnerTerraform && o.KubeKey() != "" {
			fought[o.KubeKey()] = true
		}
	}
	for i, o := range objects {
		if o.Manager == ownership.OwnerTerraform {
			src.Terraform = append(src.Terraform, o)
			continue
		}
		o.Live = []ownership.FieldManager{
			{Manager: "argocd-controller", Operation: "Update", Fields: o.Fields},
			{Manager: "kube-controller-manager", Operation: "Update", Fields: []string{`metadata.annotations["deployment.kubernetes.io/revision"]`}},
		}
		if i%2 == 0 && fought[o.KubeKey()] {
			o.Live = append(o.Live, ownership.FieldManager{Manager: "kubectl", Operation: "Apply",
				Fields: []string{"spec.replicas", "spec.template.spec.containers[" + o.Name + "].image"}})
		}
		src.Live = append(src.Live, o)
	}
	return src
}

// BenchmarkInfer20k: relcap ownership infer's proposal over the budget
// world's 20,000 objects with their live field managers (the sources
// already read). docs/PERFORMANCE.md has the figures.
func BenchmarkInfer20k(b *testing.B) {
	src := inferWorld()
	b.ReportAllocs()
	for b.Loop() {
		ownership.Infer(src, nil)
	}
}

func TestInferWorldFindsTheHundredFights(t *testing.T) {
	t.Parallel()
	inf := ownership.Infer(inferWorld(), nil)
	require.Equal(t, 100, len(inf.Objects), "each Deployment Terraform also writes, and no other")
	require.Len(t, inf.Apps, 50)
	require.True(t, inf.Terraform)
}
