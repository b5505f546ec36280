package terraform

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow"
)

var _ workflow.KubernetesCapable = (*Adapter)(nil)

// kubernetesProviderTypes are the provider types whose resources write
// Kubernetes objects: hashicorp/kubernetes, hashicorp/helm, the kubectl
// providers (gavinbunney, alekc) and kbst/kustomization.
var kubernetesProviderTypes = map[string]bool{"kubernetes": true, "helm": true, "kubectl": true, "kustomization": true}

// lockProvider matches a provider block of a dependency lock file.
var lockProvider = regexp.MustCompile(`^provider\s+"([^"]+)"\s*\{`)

// KubernetesProviders implements workflow.KubernetesCapable: the
// Kubernetes-capable providers env's root requires, read from its
// dependency lock file, which terraform init writes with every provider
// of the root and its modules (ManagedObjects has run init). A root
// without a lock file after init requires no provider at all. The lock
// file names a provider the configuration requires, so the answer is
// conservative: a root that declares the provider but manages no object
// with it still says it may.
func (a *Adapter) KubernetesProviders(_ context.Context, env workflow.Environment) ([]string, error) {
	t, err := a.target(env)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(t.dir, lockFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("environment %s: %w", env.Name, err)
	}
	return KubernetesProvidersOf(data), nil
}

// KubernetesProvidersOf lists the Kubernetes-capable providers a
// dependency lock file names (their source addresses), sorted.
func KubernetesProvidersOf(lock []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(lock))
	for sc.Scan() {
		m := lockProvider.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		addr := m[1]
		if kubernetesProviderTypes[addr[strings.LastIndexByte(addr, '/')+1:]] {
			out = append(out, addr)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
