package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestKwokStagesLeaveDeclaredPullFailuresToTheirStage(t *testing.T) {
	bin := t.TempDir()
	pod := filepath.Join(bin, stagesDir, "pod")
	require.NoError(t, os.MkdirAll(pod, 0o755))
	ready := "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: pod-ready\nspec:\n  selector:\n    matchExpressions:\n    - key: '.status.phase'\n      operator: 'In'\n      values: ['Pending']\n"
	require.NoError(t, os.WriteFile(filepath.Join(pod, "pod-ready.yaml"), []byte(ready), 0o644))
	files, err := writeKwokStages(bin, filepath.Join(t.TempDir(), "stages"))
	require.NoError(t, err)
	require.Len(t, files, 3)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var st struct {
			Metadata struct{ Name string }
			Spec     struct {
				Selector struct {
					MatchExpressions []struct {
						Key, Operator string
						Values        []string
					} `yaml:"matchExpressions"`
				}
			}
		}
		require.NoError(t, yaml.Unmarshal(b, &st), f)
		var op, opNotReady string
		for _, e := range st.Spec.Selector.MatchExpressions {
			if strings.Contains(e.Key, PullFailsAnnotation) {
				op = e.Operator
				require.Equal(t, []string{"true"}, e.Values)
			}
			if strings.Contains(e.Key, NotReadyAnnotation) {
				opNotReady = e.Operator
				require.Equal(t, []string{"true"}, e.Values)
			}
		}
		switch st.Metadata.Name {
		case "pod-ready":
			require.Equal(t, "NotIn", op, "pod-ready leaves pull failures alone")
			require.Equal(t, "NotIn", opNotReady, "pod-ready leaves readiness failures alone")
		case "relcap-lab-pod-image-pull-backoff":
			require.Equal(t, "In", op)
			require.Empty(t, opNotReady)
		case "relcap-lab-pod-not-ready":
			require.Equal(t, "In", opNotReady)
			require.Empty(t, op)
		default:
			t.Fatalf("unexpected stage %q", st.Metadata.Name)
		}
	}
}

func TestTerraformCLIConfigMirrorsOnlyTheKubectlProvider(t *testing.T) {
	c := RenderTerraformCLIConfig("/cache/terraform-mirror")
	require.Contains(t, c, `path    = "/cache/terraform-mirror"`)
	require.Equal(t, 2, strings.Count(c, `"registry.terraform.io/gavinbunney/kubectl"`))
	require.True(t, strings.HasSuffix(filepath.ToSlash(providerBinary("/m")), "/registry.terraform.io/gavinbunney/kubectl/"+KubectlProviderVersion+"/"+filepath.Base(filepath.Dir(providerBinary("/m")))+"/terraform-provider-kubectl"))
}
