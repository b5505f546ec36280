package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/relcap/relcap/adapters/argocd/remote/remotetest"
)

// buildArgoHelper builds relcap-argocd beside the test binary, where the
// commands these tests run in process find it (remote.FindHelper), as
// relcap finds it beside itself in a release. TestMain calls it once.
func buildArgoHelper() error {
	_, err := remotetest.Build()
	return err
}

// TestRelcapLinksNoArgoCDClient holds the process boundary: the relcap
// binary links none of argo-cd, kubectl, Kubernetes' own packages,
// component-base or gRPC (they are relcap-argocd's), so no command pays
// for their package initialisation (docs/PERFORMANCE.md, "Start-up").
func TestRelcapLinksNoArgoCDClient(t *testing.T) {
	t.Parallel()
	out, err := runGo(t, "list", "-deps", ".")
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{"github.com/argoproj/", "k8s.io/kubectl", "k8s.io/kubernetes", "k8s.io/component-base", "google.golang.org/grpc",
		"github.com/relcap/relcap/adapters/argocd/argosim", "github.com/relcap/relcap/adapters/argocd/serve"}
	var bad []string
	for _, pkg := range strings.Fields(out) {
		for _, f := range forbidden {
			if strings.HasPrefix(pkg, f) {
				bad = append(bad, pkg)
			}
		}
	}
	if pkg := "github.com/relcap/relcap/adapters/argocd"; strings.Contains("\n"+out+"\n", "\n"+pkg+"\n") {
		bad = append(bad, pkg)
	}
	if len(bad) > 0 {
		t.Fatalf("relcap links %d package(s) that belong to relcap-argocd, e.g. %s; reach Argo CD through adapters/argocd/remote", len(bad), strings.Join(bad[:min(5, len(bad))], ", "))
	}
	if !strings.Contains(out, "github.com/relcap/relcap/adapters/argocd/remote\n") {
		t.Fatal("relcap does not link adapters/argocd/remote: the check above proves nothing")
	}
}

func runGo(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("go", args...).Output()
	return string(out), err
}
