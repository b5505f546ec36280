// Package remotetest builds relcap-argocd, relcap's Argo CD helper, for
// tests that call it through adapters/argocd/remote: once per test
// process, beside the test binary, where remote.FindHelper looks first (as
// it finds the helper beside relcap in a release).
package remotetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/relcap/relcap/adapters/argocd/remote"
)

var (
	once sync.Once
	path string
	err  error
)

// Build builds the helper beside the running test binary (in go test's
// own temporary directory, removed with it) and returns its path. It is
// built without VCS stamping, like the test binary, so their builds match,
// and without symbols, which no test reads.
func Build() (string, error) {
	once.Do(func() {
		exe, e := os.Executable()
		if e != nil {
			err = e
			return
		}
		path = filepath.Join(filepath.Dir(exe), remote.HelperName)
		out, e := exec.Command("go", "build", "-buildvcs=false", "-ldflags=-s -w", "-o", path, "github.com/relcap/relcap/cmd/relcap-argocd").CombinedOutput()
		if e != nil {
			err = fmt.Errorf("go build relcap-argocd: %w\n%s", e, out)
		}
	})
	return path, err
}

// Helper is Build for one test, which fails if the build does.
func Helper(t testing.TB) string {
	t.Helper()
	p, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
