package terraform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/ownership"
)

// objectByAddress finds the object of one Terraform address.
func objectByAddress(t *testing.T, objs []ownership.ManagedObject, addr string) ownership.ManagedObject {
	t.Helper()
	for _, o := range objs {
		if o.TerraformAddress == addr {
			return o
		}
	}
	t.Fatalf("no object %s in %d objects", addr, len(objs))
	return ownership.ManagedObject{}
}

// TestObjectsFromStateReadsKubernetesIdentitiesAndFields reads a
// hand-written state document (the kubectl, kubernetes and helm providers
// cannot be installed offline, so real terraform cannot produce it) shaped
// like the LAB.md tug-of-war: kubectl_manifest.web_scale writing replicas
// and the image of Deployment web/web.
func TestObjectsFromStateReadsKubernetesIdentitiesAndFields(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("testdata", "handwritten_state_tug_of_war.json"))
	require.NoError(t, err)
	defer f.Close()
	objs, err := ObjectsFromStateJSON(f)
	require.NoError(t, err)

	var addrs []string
	for _, o := range objs {
		require.Equal(t, ownership.OwnerTerraform, o.Manager)
		addrs = append(addrs, o.TerraformAddress)
	}
	require.ElementsMatch(t, []string{
		"kubectl_manifest.web_scale", "kubectl_manifest.hpa_tolerant", "kubernetes_namespace_v1.web", "kubernetes_secret_v1.db",
		"kubernetes_deployment_v1.api", "kubernetes_manifest.root_app", "kubernetes_labels.web_team", "helm_release.argocd",
		"module.storage.aws_s3_bucket.assets",
	}, addrs, "managed resources only: no data source, no deposed object")

	web := objectByAddress(t, objs, "kubectl_manifest.web_scale")
	require.Equal(t, "apps/Deployment web/web", web.KubeKey())
	require.Equal(t, []string{
		"spec.replicas",
		`spec.selector.matchLabels["app.kubernetes.io/name"]`,
		`spec.template.metadata.labels["app.kubernetes.io/name"]`,
		"spec.template.spec.containers[web].image",
	}, web.Fields)

	worker := objectByAddress(t, objs, "kubectl_manifest.hpa_tolerant")
	require.Equal(t, "apps/Deployment web/worker", worker.KubeKey(), "namespace from the provider's attribute when the body has none")
	require.Equal(t, []string{"spec.replicas"}, worker.IgnoredFields)

	ns := objectByAddress(t, objs, "kubernetes_namespace_v1.web")
	require.Equal(t, "core/Namespace web", ns.KubeKey())
	require.Equal(t, []string{"metadata.labels.team"}, ns.Fields)

	secret := objectByAddress(t, objs, "kubernetes_secret_v1.db")
	require.Equal(t, "core/Secret web/db", secret.KubeKey())
	require.Equal(t, []string{"data.password", "type"}, secret.Fields)

	api := objectByAddress(t, objs, "kubernetes_deployment_v1.api")
	require.Equal(t, "apps/Deployment api/api", api.KubeKey())
	require.Subset(t, api.Fields, []string{
		"metadata.labels.app", "spec.replicas", "spec.selector.matchLabels.app",
		"spec.template.spec.containers[api].image", "spec.template.spec.containers[api].ports[http].containerPort",
		"spec.template.spec.containers[api].env[LOG_LEVEL].value", "spec.template.spec.dnsPolicy",
		"spec.template.spec.containers[api].imagePullPolicy", "spec.progressDeadlineSeconds",
	}, "snake_case becomes camelCase, repeated blocks become lists keyed by name")
	require.NotContains(t, api.Fields, "spec.paused", "zero values are provider defaults, not desired state")

	root := objectByAddress(t, objs, "kubernetes_manifest.root_app")
	require.Equal(t, "argoproj.io/Application argocd/root", root.KubeKey())
	require.Contains(t, root.Fields, "spec.source.repoURL")

	labels := objectByAddress(t, objs, "kubernetes_labels.web_team")
	require.Equal(t, "apps/Deployment web/web", labels.KubeKey())
	require.Equal(t, []string{`metadata.labels["example.com/team"]`}, labels.Fields)

	helm := objectByAddress(t, objs, "helm_release.argocd")
	require.Equal(t, "helm.sh/HelmRelease argocd/argocd", helm.KubeKey())
	require.Empty(t, helm.Fields)

	bucket := objectByAddress(t, objs, "module.storage.aws_s3_bucket.assets")
	require.Equal(t, "aws_s3_bucket", bucket.TerraformType)
	require.Empty(t, bucket.KubeKey())

	b, err := json.Marshal(objs)
	require.NoError(t, err)
	require.NotContains(t, string(b), "hunter2-very-secret", "sensitive values never leave the adapter")
	require.NotContains(t, string(b), "hand-built", "values never leave, only paths")
}

// TestTugOfWarFromStateIsAConflict runs the check on what the state
// document yields beside Argo CD's view of Deployment web/web.
func TestTugOfWarFromStateIsAConflict(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("testdata", "handwritten_state_tug_of_war.json"))
	require.NoError(t, err)
	defer f.Close()
	objs, err := ObjectsFromStateJSON(f)
	require.NoError(t, err)
	objs = append(objs, ownership.ManagedObject{
		Manager: ownership.OwnerArgoCD, App: "web-staging", Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web",
		Fields: []string{"spec.replicas", `spec.selector.matchLabels["app.kubernetes.io/name"]`, "spec.template.spec.containers[web].image"},
	})
	m := ownership.Map{File: "ownership.yaml", Rules: []ownership.Rule{
		{Line: 3, Match: ownership.Match{Group: "apps", Kind: "Deployment", Namespace: "web"}, Owner: ownership.OwnerArgoCD,
			Fields: map[string]ownership.Owner{`metadata.labels["example.com/team"]`: ownership.OwnerTerraform}},
	}}
	var conflict *finding.Finding
	for _, f := range ownership.Check(m, objs) {
		if f.Code == ownership.CodeConflict && f.Subject == "apps/Deployment web/web" {
			conflict = &f
		}
	}
	require.NotNil(t, conflict)
	require.Contains(t, conflict.Fact("fields"), "spec.replicas")
	require.Contains(t, conflict.Fact("fields"), "spec.template.spec.containers[web].image")
	require.Contains(t, conflict.Fact("writers"), "terraform kubectl_manifest.web_scale")
	require.NotContains(t, conflict.Fact("fields"), "example.com/team", "kubernetes_labels keeps to the field the map gives it")
}

func TestObjectsFromStateRejectsWhatIsNotAState(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"truncated":       `{"format_version":"1.0","values":{"root_module":{"resources":[{"address":"a`,
		"future format":   `{"format_version":"2.0"}`,
		"not json at all": "hello",
	} {
		_, err := ObjectsFromStateJSON(strings.NewReader(doc))
		require.Error(t, err, name)
		require.ErrorIs(t, err, fault.ErrUsage, name)
	}
	_, err := ObjectsFromStateJSON(strings.NewReader(`{"format_version":"1.0","values":{"root_module":{"resources":[
	  {"address":"kubectl_manifest.bad","mode":"managed","type":"kubectl_manifest","values":{"yaml_body":"password: hunter2-very-secret\n\tbad: [","kind":"Secret"}}]}}}`))
	require.Error(t, err)
	require.Contains(t, err.Error(), "kubectl_manifest.bad")
	require.NotContains(t, err.Error(), "hunter2", "a broken body is not quoted")

	objs, err := ObjectsFromStateJSON(strings.NewReader(`{"format_version":"1.0"}`))
	require.NoError(t, err)
	require.Empty(t, objs, "an empty state manages nothing")
}

const ownedRoot = `
resource "terraform_data" "bucket" {
  input = "assets"
}

resource "terraform_data" "queue" {
  for_each = toset(["a", "b"])
  input    = each.key
}

module "nested" {
  source = "./nested"
}
`

// TestManagedObjectsFromRealTerraformState reads what a real terraform
// apply left in state: terraform_data resources, which have no Kubernetes
// identity, at the root, with for_each keys and in a child module.
func TestManagedObjectsFromRealTerraformState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ownedRoot)
	require.NoError(t, os.MkdirAll(filepath.Join(f.dir, "nested"), 0o755))
	f.write("nested/main.tf", `resource "terraform_data" "inner" {
  input = "x"
}
`)
	ctx := t.Context()

	objs, err := f.a.ManagedObjects(ctx, f.env)
	require.NoError(t, err, "terraform output:\n%s", f.out.String())
	require.Empty(t, objs, "nothing applied yet")

	f.terraform(ctx, "init", "-input=false", "-no-color")
	f.terraform(ctx, "apply", "-auto-approve", "-input=false", "-no-color")
	objs, err = f.a.ManagedObjects(ctx, f.env)
	require.NoError(t, err, "terraform output:\n%s", f.out.String())
	var addrs []string
	for _, o := range objs {
		require.Equal(t, ownership.OwnerTerraform, o.Manager)
		require.Equal(t, "terraform_data", o.TerraformType)
		require.Empty(t, o.KubeKey())
		addrs = append(addrs, o.TerraformAddress)
	}
	require.ElementsMatch(t, []string{
		"terraform_data.bucket", `terraform_data.queue["a"]`, `terraform_data.queue["b"]`, "module.nested.terraform_data.inner",
	}, addrs)
}

func TestManagedObjectsRefusesAWorkspaceThatDoesNotExist(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ownedRoot)
	require.NoError(t, os.MkdirAll(filepath.Join(f.dir, "nested"), 0o755))
	f.write("nested/main.tf", "")
	f.env.Terraform.Workspace = "staging"
	_, err := f.a.ManagedObjects(t.Context(), f.env)
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), `workspace "staging" does not exist`)
}
