package ownership_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/ownership"
)

func TestForeignFieldsAreWhatAnApplyWouldTakeBack(t *testing.T) {
	t.Parallel()
	m := ownership.Map{File: "ownership.yaml", Rules: []ownership.Rule{
		{Line: 3, Match: ownership.Match{Group: "apps", Kind: "Deployment", Namespace: "web"}, Owner: ownership.OwnerArgoCD,
			Fields: map[string]ownership.Owner{"spec.replicas": "hpa"}},
		{Line: 7, Match: ownership.Match{Kind: "ConfigMap"}, Owner: ownership.OwnerTerraform},
	}}
	deploy := ownership.ManagedObject{Manager: ownership.OwnerTerraform, TerraformAddress: "kubectl_manifest.web", TerraformType: "kubectl_manifest",
		Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web",
		Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image", "metadata.labels.team"}, IgnoredFields: []string{"metadata.labels"}}
	foreign, rule := ownership.ForeignFields(m, deploy)
	require.Equal(t, "ownership.yaml:3", rule)
	require.Equal(t, []ownership.FieldOwner{{Field: "spec.replicas", Owner: "hpa"}, {Field: "spec.template.spec.containers[web].image", Owner: ownership.OwnerArgoCD}}, foreign,
		"an ignored field is left to its owner")

	cm := ownership.ManagedObject{Manager: ownership.OwnerTerraform, Kind: "ConfigMap", Namespace: "web", Name: "conf", Fields: []string{"data.x"}}
	foreign, _ = ownership.ForeignFields(m, cm)
	require.Empty(t, foreign, "Terraform's own object")

	unknown := ownership.ManagedObject{Manager: ownership.OwnerTerraform, Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api"}
	foreign, _ = ownership.ForeignFields(m, unknown)
	require.Equal(t, []ownership.FieldOwner{{Field: "the whole object", Owner: ownership.OwnerArgoCD}}, foreign)

	foreign, rule = ownership.ForeignFields(m, ownership.ManagedObject{Manager: ownership.OwnerTerraform, Kind: "Secret", Name: "x"})
	require.Empty(t, foreign)
	require.Empty(t, rule, "no rule: the ownership check reports it unowned")
}
