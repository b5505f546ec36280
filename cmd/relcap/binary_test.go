package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The tests that need the real relcap binary (the team store's two
// machines, the tmux terminals) share one build per test process: linking
// relcap is the slowest step of each such test on a loaded machine, and
// every test used to link its own.
var (
	binaryOnce sync.Once
	binaryDir  string
	binaryPath string
	binaryErr  error
)

// relcapBinary builds the relcap binary once for the package's tests and
// returns its path. It is built without -race whatever the test binary
// was built with (it is the program users run), and without the symbol
// table and DWARF data, which no test reads and which make the link slower.
func relcapBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		binaryDir, binaryErr = os.MkdirTemp("", "relcap-bin-")
		if binaryErr != nil {
			return
		}
		binaryPath = filepath.Join(binaryDir, "relcap")
		if out, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", binaryPath, ".").CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		binaryErr = placeArgoHelper(binaryDir)
	})
	require.NoError(t, binaryErr, "build relcap")
	return binaryPath
}

// removeRelcapBinary removes the shared build, if one was made; TestMain
// calls it after the tests ran.
func removeRelcapBinary() {
	if binaryDir != "" {
		_ = os.RemoveAll(binaryDir)
	}
}
