package signing

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
)

// TestGenerateKeyFileMakesAnOpenSSHKey: the demo's keys must be keys
// OpenSSH reads and that sign as the people file says.
func TestGenerateKeyFileMakesAnOpenSSHKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "alice")
	line, err := GenerateKeyFile(path, "alice@relcap.demo")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "ssh-ed25519 AAAA"), line)
	require.True(t, strings.HasSuffix(line, " alice@relcap.demo"), line)

	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	pub, err := os.ReadFile(path + ".pub")
	require.NoError(t, err)
	require.Equal(t, line+"\n", string(pub))

	// ssh-keygen reads the private key and derives the same public key.
	out, code := run(t, nil, nil, "ssh-keygen", "-y", "-f", path)
	require.Zero(t, code, out)
	require.Equal(t, strings.Join(strings.Fields(line)[:2], " "), strings.Join(strings.Fields(out)[:2], " "))

	people := writeFile(t, dir, "allowed_signers", "alice "+line)
	sig, err := NewSigner(SignerOptions{Key: path, People: people}).Sign(t.Context(), "alice", approval.NamespaceJournal, statement)
	require.NoError(t, err)
	good, out := sshVerify(t, people, "alice", approval.NamespaceJournal, statement, sig.Armored, time.Time{})
	require.True(t, good, out)

	_, err = GenerateKeyFile(path, "again")
	require.ErrorIs(t, err, os.ErrExist, "an existing key is never overwritten")
	again, err := os.ReadFile(path + ".pub")
	require.NoError(t, err)
	require.Equal(t, string(pub), string(again))

	_, err = GenerateKeyFile(filepath.Join(dir, "bad"), "two\nlines")
	require.ErrorIs(t, err, fault.ErrUsage)
}

// TestSignerStopsWithTheContext: a cancelled context ends Sign with an
// error satisfying errors.Is(err, context.Canceled).
func TestSignerStopsWithTheContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bob := newKey(t, dir, "bob", "ed25519", "")
	people := writeFile(t, dir, "allowed_signers", "bob "+bob.line)
	socket := startAgent(t)
	sshAdd(t, socket, bob)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := NewSigner(SignerOptions{AgentSocket: socket, People: people}).Sign(ctx, "bob", approval.NamespaceApproval, statement)
	require.ErrorIs(t, err, context.Canceled)
	err = NewVerifier(people).Verify(ctx, "bob", approval.NamespaceApproval, statement, approval.Signature{}, time.Now())
	require.ErrorIs(t, err, context.Canceled)
}
