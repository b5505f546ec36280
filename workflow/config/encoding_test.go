package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInvalidUTF8IsReportedAtItsLineAndColumn: a byte that is not UTF-8
// in relcap.yaml, the ownership map or the people file is reported as
// file:line:col. Before, yaml.v3's "invalid leading UTF-8 octet" came
// without a line, and the people file's bytes were not looked at.
func TestInvalidUTF8IsReportedAtItsLineAndColumn(t *testing.T) {
	t.Parallel()
	_, err := Parse("relcap.yaml", []byte("version: 1\napp: wéb\xff\n"), WithStat(fakeStat))
	require.EqualError(t, err, "relcap.yaml:2:9: invalid UTF-8 (byte 0xff): save the file as UTF-8")

	_, err = ParseOwnership("ownership.yaml", []byte(ownershipBase+"  - match: {kind: Deployment}\n    owner: terr\xe0form\n"))
	lines := strings.Count(ownershipBase, "\n")
	require.EqualError(t, err, "ownership.yaml:"+itoa(lines+2)+":16: invalid UTF-8 (byte 0xe0): save the file as UTF-8")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "allowed_signers"), []byte("alice ssh-ed25519 AAAA\nb\xc3b ssh-ed25519 AAAA\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "relcap.yaml"), []byte("version: 1\napp: web\npeople: allowed_signers\n"), 0o644))
	_, err = Load(filepath.Join(dir, "relcap.yaml"))
	require.ErrorContains(t, err, filepath.Join(dir, "allowed_signers")+":2:2: invalid UTF-8 (byte 0xc3): save the file as UTF-8")

	// UTF-16 with its byte-order mark is yaml.v3's to read, not an error.
	_, _, _, bad := InvalidUTF8([]byte{0xff, 0xfe, 'v', 0})
	require.False(t, bad)
}

func itoa(n int) string { return strconv.Itoa(n) }
