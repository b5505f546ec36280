package gitconfig

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSSHSigningKeyOnlyWhenGitSignsWithSSH(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		c := exec.Command("git", args...)
		c.Dir = dir
		out, err := c.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", t.TempDir())
	git("init", "-q")
	git("config", "user.signingkey", "/keys/id_ed25519")
	require.Equal(t, "/keys/id_ed25519", Get(t.Context(), dir, "user.signingkey"))
	require.Empty(t, SSHSigningKey(t.Context(), dir), "gpg signs: no SSH key")
	git("config", "gpg.format", "ssh")
	require.Equal(t, "/keys/id_ed25519", SSHSigningKey(t.Context(), dir))
	require.Empty(t, Get(t.Context(), dir, "no.such"))
}
