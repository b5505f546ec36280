package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The Terraform provider the tug-of-war needs: gavinbunney/kubectl, the
// only provider managing Kubernetes YAML that installs from the Go module
// proxy (LAB.md). It goes into a filesystem mirror in the cache, named by a
// CLI configuration file (TF_CLI_CONFIG_FILE) that up writes.
const (
	KubectlProviderModule  = "github.com/gavinbunney/terraform-provider-kubectl"
	KubectlProviderVersion = "1.19.0"
	providerMirrorDir      = "terraform-mirror"
)

// ProviderMirror is the filesystem mirror under the cache directory.
func (b Builder) ProviderMirror() string { return filepath.Join(b.CacheDir, providerMirrorDir) }

// providerBinary is where Terraform's unpacked mirror layout wants the
// provider executable.
func providerBinary(mirror string) string {
	return filepath.Join(mirror, "registry.terraform.io", "gavinbunney", "kubectl", KubectlProviderVersion,
		runtime.GOOS+"_"+runtime.GOARCH, "terraform-provider-kubectl")
}

// ensureKubectlProvider go-installs the provider into the mirror when it is
// not there yet (a minute or two cold, seconds with a warm build cache).
// Labs built side by side share the mirror: one builds it, the others wait
// for it and find it.
func (b Builder) ensureKubectlProvider(ctx context.Context) error {
	bin := providerBinary(b.ProviderMirror())
	if _, err := os.Stat(bin); err == nil {
		return nil
	}
	if err := os.MkdirAll(b.CacheDir, 0o755); err != nil {
		return err
	}
	unlock, err := takeTurns(filepath.Join(b.CacheDir, ".terraform-mirror.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	return goCmd(ctx, os.TempDir(), []string{"GOBIN=" + filepath.Dir(bin), "GOFLAGS="}, "install", KubectlProviderModule+"@v"+KubectlProviderVersion)
}

// RenderTerraformCLIConfig points Terraform at the mirror for
// gavinbunney/kubectl and nowhere else for it.
func RenderTerraformCLIConfig(mirror string) string {
	return `# Terraform CLI configuration of the relcap lab (written by relcap-lab up).
provider_installation {
  filesystem_mirror {
    path    = ` + fmt.Sprintf("%q", mirror) + `
    include = ["registry.terraform.io/gavinbunney/kubectl"]
  }
  direct {
    exclude = ["registry.terraform.io/gavinbunney/kubectl"]
  }
}
`
}

// PullFailsAnnotation is the fault switch of the lab's image pull failure:
// a Pod whose annotation names the digest its first container runs is
// kept in ImagePullBackOff by kwok, as if the registry did not have it.
// Pinning another digest (a rollback) makes the new Pods Ready again.
const PullFailsAnnotation = "relcap-lab.io/pull-fails"

// pullFailsQuery is true for a Pod whose first container runs the digest
// named by PullFailsAnnotation (kwok evaluates selector keys as jq).
var pullFailsQuery = runsAnnotatedDigest(PullFailsAnnotation)

// runsAnnotatedDigest is a jq selector key, true for a Pod whose first
// container runs the digest that annotation names: how the lab's fault
// stages pick the Pods of one build.
func runsAnnotatedDigest(annotation string) string {
	return `(.spec.containers.[0].image | split("@") | last) == (.metadata.annotations["` + annotation + `"] // "")`
}

// RenderImagePullStage is a kwok stage that puts the matching Pods in
// ImagePullBackOff and keeps them there.
func RenderImagePullStage() string {
	return podFaultStage("relcap-lab-pod-image-pull-backoff", pullFailsQuery,
		"'.status.containerStatuses.[0].state.waiting.reason'", "ImagePullBackOff", `      {{ $now := Now }}
      phase: Pending
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        started: false
        restartCount: 0
        state:
          waiting:
            reason: ImagePullBackOff
            message: {{ printf "Back-off pulling image %q" .image | Quote }}
      {{ end }}
`)
}

// NotReadyAnnotation is the fault switch of the lab's readiness failure: a
// Pod whose annotation names the digest its first container runs is kept
// Running but not Ready by kwok, as if its readiness probe kept failing.
// Pinning another digest (a rollback) makes the new Pods Ready again.
const NotReadyAnnotation = "relcap-lab.io/not-ready"

// NotReadyMessage is the Pod status message of the readiness failure, as
// the kubelet words a failing HTTP readiness probe.
const NotReadyMessage = "Readiness probe failed: HTTP probe failed with statuscode: 503"

// notReadyQuery is true for a Pod whose first container runs the digest
// named by NotReadyAnnotation.
var notReadyQuery = runsAnnotatedDigest(NotReadyAnnotation)

// RenderNotReadyStage is a kwok stage that puts the matching Pods in
// phase Running with every container started but not ready, the Ready
// condition False with the failing probe's message, and keeps them there.
func RenderNotReadyStage() string {
	return podFaultStage("relcap-lab-pod-not-ready", notReadyQuery, "'.status.message'", NotReadyMessage, `      {{ $now := Now }}
      phase: Running
      startTime: {{ $now | Quote }}
      message: `+fmt.Sprintf("%q", NotReadyMessage)+`
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        message: `+fmt.Sprintf("%q", NotReadyMessage)+`
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
`)
}

// podFaultStage is a kwok stage for the Pods query matches that are not
// being deleted and not yet in the state it sets (doneKey is not
// doneValue), with statusTemplate, indented for it, as their status.
func podFaultStage(name, query, doneKey, doneValue, statusTemplate string) string {
	return `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: ` + name + `
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '` + query + `'
      operator: 'In'
      values: ['true']
    - key: ` + doneKey + `
      operator: 'NotIn'
      values: ['` + doneValue + `']
  next:
    statusTemplate: |
` + statusTemplate
}

// SlowStartAnnotation makes a rollout take a while, so the e2e suite can
// interrupt Argo CD in the middle of one: a Pod whose annotation names the
// digest its first container runs becomes Ready only SlowStartDelay after
// it was scheduled (kwok's own pod-ready stage, delayed).
const SlowStartAnnotation = "relcap-lab.io/slow-start"

// SlowStartDelay is how long such a Pod stays Pending.
const SlowStartDelay = 30 * time.Second

var slowStartQuery = runsAnnotatedDigest(SlowStartAnnotation)

// faultQueries are the fault stages' selectors: kwok's fast pod-ready
// stage leaves the Pods they match alone.
var faultQueries = []string{pullFailsQuery, notReadyQuery, slowStartQuery}

// slowReadyStage turns kwok's pod-ready stage into the slow-start one:
// renamed, narrowed to the annotated Pods, and delayed.
func slowReadyStage(podReady string) (string, error) {
	const (
		name   = "  name: pod-ready\n"
		anchor = "  selector:\n    matchExpressions:\n"
	)
	if !strings.Contains(podReady, name) || !strings.Contains(podReady, anchor) {
		return "", errors.New("kwok's pod-ready stage has no name or selector to rewrite")
	}
	s := strings.Replace(podReady, name, "  name: relcap-lab-pod-slow-ready\n", 1)
	return strings.Replace(s, anchor, fmt.Sprintf("  delay:\n    durationMilliseconds: %d\n", SlowStartDelay.Milliseconds())+
		anchor+"    - key: '"+slowStartQuery+"'\n      operator: 'In'\n      values: ['true']\n", 1), nil
}

// writeKwokStages writes the stages kwok runs with into dir: kwok's "fast"
// stages from the binary cache, pod-ready narrowed so it leaves the Pods
// of a declared pull or readiness failure alone, and the two fault stages.
func writeKwokStages(binDir, dir string) ([]string, error) {
	src, _ := filepath.Glob(filepath.Join(binDir, stagesDir, "*", "*.yaml"))
	if len(src) == 0 {
		return nil, fmt.Errorf("no kwok stages in %s: rebuild with relcap-lab build", filepath.Join(binDir, stagesDir))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, f := range src {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		s := string(b)
		if filepath.Base(f) == "pod-ready.yaml" {
			slow, err := slowReadyStage(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			p := filepath.Join(dir, "pod-relcap-lab-slow-ready.yaml")
			if err := os.WriteFile(p, []byte(slow), 0o644); err != nil {
				return nil, err
			}
			out = append(out, p)
			const anchor = "  selector:\n    matchExpressions:\n"
			var narrow string
			for _, q := range faultQueries {
				narrow += "    - key: '" + q + "'\n      operator: 'NotIn'\n      values: ['true']\n"
			}
			s = strings.Replace(s, anchor, anchor+narrow, 1)
		}
		p := filepath.Join(dir, filepath.Base(filepath.Dir(f))+"-"+filepath.Base(f))
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	for name, stage := range map[string]string{
		"pod-relcap-lab-image-pull-backoff.yaml": RenderImagePullStage(),
		"pod-relcap-lab-not-ready.yaml":          RenderNotReadyStage(),
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(stage), 0o644); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
