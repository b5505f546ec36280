package ownership_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/ownership"
)

var t0 = time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)

// tugOfWar is the lab's fight: a kubectl_manifest applies staging's
// Deployment server-side with replicas 5 and its own image, Argo CD's
// self-heal puts both back. Live, Argo CD holds replicas and the image
// again; both hold the fields they set to the same values.
func tugOfWar() ownership.Sources {
	tfFields := []string{"spec.replicas", "spec.selector.matchLabels.app", "spec.template.metadata.labels.app",
		"spec.template.spec.containers[web].image", "spec.template.spec.nodeSelector.type"}
	argoFields := []string{"spec.replicas", "spec.selector.matchLabels.app", "spec.template.metadata.labels.app",
		"spec.template.spec.containers[web].image", "spec.template.spec.containers[web].ports[0].containerPort"}
	return ownership.Sources{
		LiveRan: true,
		Terraform: []ownership.ManagedObject{
			{Manager: ownership.OwnerTerraform, TerraformAddress: "kubectl_manifest.web_scale", TerraformType: "kubectl_manifest",
				Group: "apps", Kind: "Deployment", Namespace: "web-staging", Name: "web", Fields: tfFields},
			{Manager: ownership.OwnerTerraform, TerraformAddress: "terraform_data.lab", TerraformType: "terraform_data"},
		},
		Live: []ownership.ManagedObject{
			{Manager: ownership.OwnerArgoCD, App: "web-staging", Group: "apps", Kind: "Deployment", Namespace: "web-staging", Name: "web",
				Fields: argoFields, Live: []ownership.FieldManager{
					{Manager: "argocd-controller", Operation: "Update", Time: t0.Add(time.Minute), Fields: append(argoFields,
						`metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`)},
					{Manager: "kubectl", Operation: "Apply", Time: t0, Fields: []string{"spec.selector.matchLabels.app",
						"spec.template.metadata.labels.app", "spec.template.spec.nodeSelector.type"}},
					{Manager: "kube-controller-manager", Operation: "Update", Time: t0, Fields: []string{
						`metadata.annotations["deployment.kubernetes.io/revision"]`}},
				}},
			{Manager: ownership.OwnerArgoCD, App: "web-staging", Kind: "Service", Namespace: "web-staging", Name: "web",
				Fields: []string{"spec.ports[0].port"}, Live: []ownership.FieldManager{
					{Manager: "argocd-controller", Operation: "Update", Time: t0, Fields: []string{"spec.ports[0].port"}}}},
		},
	}
}

func TestInferFindsTheTugOfWarsContestedFieldsAndNamesBothManagers(t *testing.T) {
	inf := ownership.Infer(tugOfWar(), nil)
	require.True(t, inf.Live)
	require.Equal(t, []string{"web-staging"}, inf.Apps)
	require.True(t, inf.Terraform, "terraform_data.lab is left to Terraform's catch-all")
	require.Len(t, inf.Objects, 1, "the Service has one writer: the catch-all covers it")
	obj := inf.Objects[0]
	require.Equal(t, "apps/Deployment web-staging/web", obj.Key)
	require.Equal(t, ownership.Match{Group: "apps", Kind: "Deployment", Namespace: "web-staging", Name: "web"}, obj.Match)
	require.Equal(t, ownership.OwnerArgoCD, obj.Owner, "an object an application deploys is proposed for Argo CD")
	require.Equal(t, map[string]ownership.Owner{"spec.template.spec.nodeSelector.type": ownership.OwnerTerraform}, obj.Fields,
		"a field only Terraform declares goes to Terraform")

	var fields, flipping []string
	for _, c := range obj.Contested {
		fields = append(fields, c.Field)
		require.Equal(t, []ownership.Owner{ownership.OwnerArgoCD, ownership.OwnerTerraform}, c.Owners)
		if c.Flipping() {
			flipping = append(flipping, c.Field)
			require.Equal(t, []string{"argocd-controller (argocd)"}, c.Holders)
			require.Equal(t, []ownership.Owner{ownership.OwnerTerraform}, c.Wanting)
		}
	}
	require.Equal(t, []string{"spec.replicas", "spec.selector.matchLabels.app", "spec.template.metadata.labels.app",
		"spec.template.spec.containers[web].image"}, fields)
	require.Equal(t, []string{"spec.replicas", "spec.template.spec.containers[web].image"}, flipping,
		"Terraform declares them and Argo CD holds them: they flip at the next apply")

	var managers []string
	for _, w := range obj.Writers {
		if w.Manager != "" {
			managers = append(managers, w.Manager+"="+string(w.Owner))
		}
	}
	require.Equal(t, []string{"argocd-controller=argocd", "kubectl=terraform"}, managers,
		"the controller's own annotation is nobody's desired state: kube-controller-manager is no writer here")
	require.Contains(t, obj.Writers[len(obj.Writers)-1].Why, "kubectl_manifest.web_scale")
}

func TestInferGivesAnHPAsReplicasToTheHPA(t *testing.T) {
	src := ownership.Sources{LiveRan: true, Live: []ownership.ManagedObject{{
		Manager: ownership.OwnerArgoCD, App: "web", Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web",
		Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image"},
		Live: []ownership.FieldManager{
			{Manager: "argocd-controller", Operation: "Apply", Fields: []string{"spec.template.spec.containers[web].image"}},
			{Manager: "kube-controller-manager", Operation: "Update", Subresource: "scale", Fields: []string{"spec.replicas"}},
		},
	}}}
	inf := ownership.Infer(src, nil)
	require.Len(t, inf.Objects, 1)
	obj := inf.Objects[0]
	require.Equal(t, map[string]ownership.Owner{"spec.replicas": "hpa"}, obj.Fields)
	require.Len(t, obj.Contested, 1)
	require.Equal(t, "spec.replicas", obj.Contested[0].Field)
	require.True(t, obj.Contested[0].Flipping(), "Argo CD declares replicas the HPA holds")

	// A person may say what a manager is.
	inf = ownership.Infer(src, ownership.ManagerOwners{"kube-controller-manager": "keda"})
	require.Equal(t, map[string]ownership.Owner{"spec.replicas": "keda"}, inf.Objects[0].Fields)
}

func TestInferWithoutTheClusterReportsWhatBothDeclare(t *testing.T) {
	src := tugOfWar()
	for i := range src.Live {
		src.Live[i].Live = nil
	}
	src.LiveRan, src.LiveError = false, "argo cd unreachable"
	src.Desired = []ownership.Desired{{App: "web-staging", Objects: src.Live}}
	src.Live = nil
	inf := ownership.Infer(src, nil)
	require.False(t, inf.Live)
	require.Equal(t, "argo cd unreachable", inf.Unread)
	require.Len(t, inf.Objects, 1)
	for _, c := range inf.Objects[0].Contested {
		require.False(t, c.Flipping(), "%s: without the live object, nobody is known to hold it", c.Field)
	}
	require.Len(t, inf.Objects[0].Contested, 4)
}

func TestInferNamesAnUnknownManagerAsAnOwnerTheMapAccepts(t *testing.T) {
	src := ownership.Sources{LiveRan: true, Live: []ownership.ManagedObject{{
		Manager: ownership.OwnerArgoCD, App: "web", Kind: "ConfigMap", Namespace: "web", Name: "cfg",
		Fields: []string{"data.mode"},
		Live:   []ownership.FieldManager{{Manager: "Mozilla/5.0 (X11)", Operation: "Update", Fields: []string{"data.mode"}}},
	}}}
	inf := ownership.Infer(src, nil)
	require.Len(t, inf.Objects, 1)
	require.Equal(t, []ownership.Owner{"argocd", "mozilla-5.0--x11-"}, inf.Objects[0].Contested[0].Owners)
	require.Empty(t, inf.Objects[0].Fields, "a manager relcap only names is contested, never proposed as the owner")
}

func TestTheProposedMapAndItsDifferenceFromTheCurrentOne(t *testing.T) {
	src := tugOfWar()
	inf := ownership.Infer(src, nil)
	current := ownership.Map{File: "ownership.yaml",
		Rules: []ownership.Rule{
			{Line: 3, Match: ownership.Match{TerraformType: "*"}, Owner: ownership.OwnerTerraform},
			{Line: 5, Match: ownership.Match{App: "web-staging"}, Owner: ownership.OwnerArgoCD},
		},
		Handoffs: []ownership.Handoff{{Line: 8, Match: ownership.Match{Kind: "Namespace"}, From: "terraform", To: "argocd"}},
	}
	m := inf.Map("ownership.draft.yaml", current)
	require.Equal(t, ownership.Map{File: "ownership.draft.yaml",
		Rules: []ownership.Rule{
			{Match: ownership.Match{Group: "apps", Kind: "Deployment", Namespace: "web-staging", Name: "web"}, Owner: ownership.OwnerArgoCD,
				Fields: map[string]ownership.Owner{"spec.template.spec.nodeSelector.type": ownership.OwnerTerraform}},
			{Match: ownership.Match{App: "web-staging"}, Owner: ownership.OwnerArgoCD},
			{Match: ownership.Match{TerraformType: "*"}, Owner: ownership.OwnerTerraform},
		},
		Handoffs: current.Handoffs,
	}, m)

	changes := ownership.Diff(current, m, src.Objects())
	var lines []string
	for _, c := range changes {
		lines = append(lines, c.String())
	}
	require.Equal(t, []string{
		"apps/Deployment web-staging/web (argocd app web-staging) spec.template.spec.nodeSelector.type: argocd (ownership.yaml:5) → terraform",
		"apps/Deployment web-staging/web (terraform kubectl_manifest.web_scale): terraform (ownership.yaml:3) → argocd",
	}, lines, "Terraform's view of the Deployment moves to Argo CD; the node selector only Terraform sets goes to it")
	require.Empty(t, ownership.Diff(m, m, src.Objects()))
}

// What the lab's tug-of-war really shows (Argo CD 2.14 and 3.6): the
// kubectl provider's forced server-side apply took every field it sets,
// the selector whole; Argo CD's self-heal a second later took back the
// two whose values differ and left the rest, whose values agree.
func TestInferOnTheLabsLiveManagersFlipsOnlyWhatArgoCDTookBack(t *testing.T) {
	tfFields := []string{"spec.replicas", "spec.selector.matchLabels.app", "spec.template.metadata.labels.app",
		"spec.template.spec.containers[web].image", "spec.template.spec.nodeSelector.type"}
	argoFields := []string{"spec.replicas", "spec.selector.matchLabels.app", "spec.template.metadata.labels.app",
		"spec.template.spec.containers[web].image", "spec.template.spec.nodeSelector.type", "spec.template.spec.containers[web].ports[0].containerPort"}
	src := ownership.Sources{LiveRan: true,
		Terraform: []ownership.ManagedObject{{Manager: ownership.OwnerTerraform, TerraformAddress: "kubectl_manifest.web_scale", TerraformType: "kubectl_manifest",
			Group: "apps", Kind: "Deployment", Namespace: "web-staging", Name: "web", Fields: tfFields}},
		Live: []ownership.ManagedObject{{Manager: ownership.OwnerArgoCD, App: "web-staging", Group: "apps", Kind: "Deployment", Namespace: "web-staging", Name: "web",
			Fields: argoFields, Live: []ownership.FieldManager{
				{Manager: "kubectl", Operation: "Apply", Time: t0, Fields: []string{"spec.selector", "spec.template.metadata.labels.app",
					"spec.template.spec.containers[web]", "spec.template.spec.nodeSelector"}},
				{Manager: "argocd-controller", Operation: "Update", Time: t0.Add(time.Second), Fields: []string{"spec.replicas",
					"spec.template.spec.containers[web].image", "spec.template.spec.containers[web].ports[0].containerPort"}},
			}}},
	}
	obj := ownership.Infer(src, nil).Objects[0]
	got := map[string]string{}
	for _, c := range obj.Contested {
		got[c.Field] = strings.Join(c.Holders, ",")
		if c.Flipping() {
			got[c.Field] += " FLIPS"
		}
	}
	require.Equal(t, map[string]string{
		"spec.replicas": "argocd-controller (argocd) FLIPS",
		"spec.template.spec.containers[web].image": "argocd-controller (argocd) FLIPS",
		"spec.selector.matchLabels.app":            "kubectl (terraform)",
		"spec.template.metadata.labels.app":        "kubectl (terraform)",
		"spec.template.spec.nodeSelector.type":     "kubectl (terraform)",
	}, got, "a selector held whole holds the label below it, a container held by its name alone does not hold its image; Argo CD wrote after the provider and left the labels: they agree")
}
