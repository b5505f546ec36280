//go:build !race

package config

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// Built without the race detector only: the parse is one goroutine, so
// -race finds nothing here and makes it 8x slower (67 s instead of 8 on
// 2 cores).
// make test-norace runs this file's tests.

// TestAMillionLineOwnershipMapIsReadInBoundedMemory: a 1,000,000-line map
// is read one batch of rules at a time: the heap's peak stays a fraction of
// what the whole document's node tree took (over 1 GB before), problems
// keep their line and column at the end of the file, and a map of another
// shape that large is refused with what to do rather than read whole.
func TestAMillionLineOwnershipMapIsReadInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 30 MB map")
	}
	data := bigOwnership(1_000_000)
	data = append(data, "  - match: {kind: Pod}\n    owner: Terraform\n"...)
	runtime.GC()
	peak := heapPeak(t)
	_, err := ParseOwnership("ownership.yaml", data)
	used := peak()
	require.EqualError(t, err, `ownership.yaml:1000004:12: rules[250000].owner: want "terraform", got "Terraform" (owners are lowercase)`)
	t.Logf("heap peak while validating a %d MB, 1,000,004-line map: %d MB", len(data)>>20, used>>20)
	require.Less(t, used, uint64(600<<20), "the heap peaked at %d MB", used>>20)

	anchored := append([]byte("version: 1\nx: &a {}\n"), data[len("version: 1\n"):]...)
	_, err = ParseOwnership("ownership.yaml", anchored)
	require.ErrorContains(t, err, "ownership.yaml: this ownership map is 29 MB and uses anchors")
}
