// Package terraformtest finds the real terraform binary tests run against.
package terraformtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Binary finds the real terraform tests run against: terraform on PATH,
// else the one `make terraform` installs into <module root>/bin. A
// missing binary fails the test: a suite that skips because a tool is
// missing must not pass.
func Binary(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("terraform"); err == nil {
		return p
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(d, "bin", "terraform")
			if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
				return p
			}
			t.Fatalf("no terraform binary: none on PATH and none at %s; run `make terraform` to install Terraform 1.5.7 there", p)
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no terraform binary on PATH, and no module root above %s to look in bin/", wd)
		}
	}
}
