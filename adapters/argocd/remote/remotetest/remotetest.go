// Package remotetest builds relcap-argocd, relcap's Argo CD helper, for
// tests that call it through adapters/argocd/remote: once per test run,
// beside the test binary, where remote.FindHelper looks first (as it finds
// the helper beside relcap in a release).
package remotetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/relcap/relcap/adapters/argocd/remote"
	"github.com/relcap/relcap/adapters/internal/flock"
)

var (
	once sync.Once
	path string
	err  error
)

// Build builds the helper beside the running test binary (in go test's
// own temporary directory, removed with it) and returns its path.
func Build() (string, error) {
	once.Do(func() {
		path, err = BuildBeside(remote.HelperName, "github.com/relcap/relcap/cmd/relcap-argocd")
	})
	return path, err
}

// BuildBeside builds the main package pkg as name beside the running test
// binary and returns its path; a build already there, made after the test
// binary, is used as it is. A test re-run in a process of its own (the
// same test binary) so finds the parent's build instead of linking and
// writing the same tens of megabytes again; concurrent callers wait for
// one build (a flock beside it). It is built without VCS stamping, like
// the test binary, and without symbols, which no test reads.
func BuildBeside(name, pkg string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(filepath.Dir(exe), name)
	lock, err := os.OpenFile(dst+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	for {
		ok, err := flock.TryLock(lock)
		if err != nil {
			return "", err
		}
		if ok {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer func() { _ = flock.Unlock(lock) }()
	if fresh(dst, exe) {
		return dst, nil
	}
	tmp := dst + ".building"
	if out, err := exec.Command("go", "build", "-buildvcs=false", "-ldflags=-s -w", "-o", tmp, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return dst, os.Rename(tmp, dst)
}

// fresh reports whether the file at p was made after the test binary exe:
// by this run of the tests, not left by an earlier one.
func fresh(p, exe string) bool {
	built, err := os.Stat(p)
	if err != nil {
		return false
	}
	test, err := os.Stat(exe)
	return err == nil && !built.ModTime().Before(test.ModTime())
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
