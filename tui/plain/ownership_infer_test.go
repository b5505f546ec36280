package plain_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/owners"
	"github.com/relcap/relcap/workflow/ownership"
)

func inferred() owners.Inferred {
	at := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	return owners.Inferred{Envs: []string{"staging"}, Written: "/repo/ownership.draft.yaml", YAML: []byte("version: 1\n"),
		Inference: ownership.Inference{Live: true, Apps: []string{"web-staging"}, Objects: []ownership.InferredObject{{
			Key: "apps/Deployment web/web", Owner: "argocd", Fields: map[string]ownership.Owner{"spec.replicas": "hpa"},
			Writers: []ownership.Writer{
				{Owner: "argocd", Via: "argocd app web-staging", Fields: 3},
				{Owner: "terraform", Via: "kubectl", Manager: "kubectl", Operation: "Apply", Time: at, Fields: 2},
				{Owner: "hpa", Via: "kube-controller-manager", Manager: "kube-controller-manager", Operation: "Update", Subresource: "scale", Time: at, Fields: 1},
			},
			Contested: []ownership.ContestedField{
				{Field: "spec.replicas", Owners: []ownership.Owner{"argocd", "hpa"}, Holders: []string{"kube-controller-manager (hpa)"}, Wanting: []ownership.Owner{"argocd"}},
				{Field: "spec.selector", Owners: []ownership.Owner{"argocd", "terraform"}, Holders: []string{"argocd-controller (argocd)", "kubectl (terraform)"}},
			},
		}}},
		Changes: []ownership.Change{{Subject: "apps/Deployment web/web", Via: "terraform kubectl_manifest.web", Now: "terraform", NowAt: "ownership.yaml:3", Proposed: "argocd"}},
	}
}

func TestPrintInferenceShowsWritersContestedFieldsAndTheDifference(t *testing.T) {
	var b strings.Builder
	plain.PrintInference(&b, inferred(), false)
	out := b.String()
	for _, want := range []string{
		"staging: 1 object(s) written by more than one owner, 2 contested field(s), 1 flipping\n",
		"apps/Deployment web/web → argocd\n",
		"  declared by argocd app web-staging (3 fields)\n",
		"  held by field manager kubectl (Apply, last at 2026-12-03T18:00:00Z): terraform, 2 fields\n",
		"  held by field manager kube-controller-manager (Update of scale, last at 2026-12-03T18:00:00Z): hpa, 1 fields\n",
		"  FLIPPING  spec.replicas: argocd and hpa; held by kube-controller-manager (hpa)\n",
		"  contested spec.selector: argocd and terraform; held by argocd-controller (argocd), kubectl (terraform)\n",
		"  proposed: spec.replicas → hpa\n",
		"  apps/Deployment web/web (terraform kubectl_manifest.web): terraform (ownership.yaml:3) → argocd\n",
		"draft written to /repo/ownership.draft.yaml",
	} {
		require.Contains(t, out, want)
	}
	b.Reset()
	plain.PrintInference(&b, inferred(), true)
	require.True(t, strings.HasSuffix(b.String(), "\nversion: 1\n"), "--out - prints the draft")

	data, err := json.Marshal(plain.InferenceDocument(inferred()))
	require.NoError(t, err)
	var doc struct {
		Contested, Flipping int
		Objects             []struct {
			Contested []struct {
				Field    string
				Flipping bool
			}
		}
	}
	require.NoError(t, json.Unmarshal(data, &doc))
	require.Equal(t, 2, doc.Contested)
	require.Equal(t, 1, doc.Flipping)
	require.True(t, doc.Objects[0].Contested[0].Flipping)
	require.False(t, doc.Objects[0].Contested[1].Flipping)
}
