package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestKwokStagesLeaveDeclaredFaultsToTheirStages(t *testing.T) {
	bin := t.TempDir()
	pod := filepath.Join(bin, stagesDir, "pod")
	require.NoError(t, os.MkdirAll(pod, 0o755))
	ready := "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: pod-ready\nspec:\n  selector:\n    matchExpressions:\n    - key: '.status.phase'\n      operator: 'In'\n      values: ['Pending']\n"
	require.NoError(t, os.WriteFile(filepath.Join(pod, "pod-ready.yaml"), []byte(ready), 0o644))
	files, err := writeKwokStages(bin, filepath.Join(t.TempDir(), "stages"))
	require.NoError(t, err)
	require.Len(t, files, 4)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var st struct {
			Metadata struct{ Name string }
			Spec     struct {
				Delay struct {
					DurationMilliseconds int64 `yaml:"durationMilliseconds"`
				} `yaml:"delay"`
				Selector struct {
					MatchExpressions []struct {
						Key, Operator string
						Values        []string
					} `yaml:"matchExpressions"`
				}
			}
		}
		require.NoError(t, yaml.Unmarshal(b, &st), f)
		var op, opNotReady, opSlow string
		for _, e := range st.Spec.Selector.MatchExpressions {
			if strings.Contains(e.Key, SlowStartAnnotation) {
				opSlow = e.Operator
				require.Equal(t, []string{"true"}, e.Values)
			}
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
			require.Equal(t, "NotIn", opSlow, "pod-ready leaves slow starters to their stage")
			require.Zero(t, st.Spec.Delay.DurationMilliseconds)
		case "relcap-lab-pod-slow-ready":
			require.Equal(t, "In", opSlow)
			require.Empty(t, op)
			require.Empty(t, opNotReady)
			require.Equal(t, SlowStartDelay.Milliseconds(), st.Spec.Delay.DurationMilliseconds, "kwok's pod-ready, delayed")
			require.Contains(t, string(b), "phase", "the rest is kwok's own pod-ready stage")
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

// Labs built side by side take turns on what they share: the second waits
// for the first's lock and then finds its work done.
func TestBuildsTakeTurnsOnASharedLock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.lock")
	unlock, err := takeTurns(path)
	require.NoError(t, err)
	got := make(chan struct{})
	go func() {
		second, err := takeTurns(path)
		if err == nil {
			second()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("the second build took the lock while the first held it")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the second build did not get the lock once the first let go")
	}
	_, err = takeTurns(filepath.Join(t.TempDir(), "missing", "x.lock"))
	require.ErrorContains(t, err, "lock")
}
