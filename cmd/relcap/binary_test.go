package main

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/remote/remotetest"
)

// The tests that need the real relcap binary (the team store's two
// machines, the tmux terminals) share one build per test process: linking
// relcap is the slowest step of each such test on a loaded machine, and
// every test used to link its own.
var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// relcapBinary builds the relcap binary once for the package's tests and
// returns its path: beside the test binary, with relcap-argocd, where an
// installed relcap finds its helper. It is built without -race whatever
// the test binary was built with (it is the program users run), and
// without the symbol table and DWARF data, which no test reads and which
// make the link slower. Tests re-run in a process of their own use the
// parent's build (remotetest.BuildBeside).
func relcapBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		if _, binaryErr = remotetest.Build(); binaryErr != nil {
			return
		}
		binaryPath, binaryErr = remotetest.BuildBeside("relcap", "github.com/relcap/relcap/cmd/relcap")
	})
	require.NoError(t, binaryErr, "build relcap")
	return binaryPath
}
