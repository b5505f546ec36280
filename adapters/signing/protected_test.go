package signing

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

// gitIn runs git in dir for a test.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.TrimSpace(string(out))
}

// TestThePeopleFileThatCountsIsOrigins: with an origin, the content that
// counts is the file committed on origin's default branch at the commit
// origin names, whatever the working copy or this machine's
// remote-tracking ref say; without one, the working copy, said to be
// unprotected.
func TestThePeopleFileThatCountsIsOrigins(t *testing.T) {
	t.Parallel()
	alice, _ := testKey(t, 1)
	bob, _ := testKey(t, 2)
	repo := t.TempDir()
	path := filepath.Join(repo, "allowed_signers")
	honest := "alice " + alice + "\nbob " + bob + "\n"
	require.NoError(t, os.WriteFile(path, []byte(honest), 0o644))
	gitIn(t, repo, "init", "-q", "-b", "main")
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "people")

	unprotected, err := NewPeopleSource(path).read(t.Context())
	require.NoError(t, err)
	require.False(t, unprotected.state.Protected)
	require.Contains(t, unprotected.state.Where, "has no origin")
	require.True(t, strings.HasPrefix(unprotected.state.Revision, fileRevisionPrefix))

	origin := filepath.Join(t.TempDir(), "origin.git")
	gitIn(t, repo, "clone", "-q", "--bare", repo, origin)
	gitIn(t, repo, "remote", "add", "origin", origin)
	honestCommit := gitIn(t, repo, "rev-parse", "HEAD")

	// A forged commit, which this machine's origin/main is made to name.
	forged := honest + "bob " + alice + "\n"
	require.NoError(t, os.WriteFile(path, []byte(forged), 0o644))
	gitIn(t, repo, "commit", "-q", "-am", "bob's other key")
	forgedCommit := gitIn(t, repo, "rev-parse", "HEAD")
	gitIn(t, repo, "update-ref", "refs/remotes/origin/main", forgedCommit)

	r, err := NewPeopleSource(path).read(t.Context())
	require.NoError(t, err)
	require.True(t, r.state.Protected)
	require.Equal(t, honest, string(r.data), "origin's content, not the working copy nor the local ref")
	require.True(t, strings.HasPrefix(r.state.Revision, gitRevisionPrefix+honestCommit+":"), r.state.Revision)
	require.Equal(t, []string{"bob"}, r.state.Differs)
	require.Contains(t, r.state.Where, "allowed_signers at origin/main")

	v := NewProtectedVerifier(path)
	data, err := v.Source.content(t.Context(), r.state.Revision)
	require.NoError(t, err)
	require.Equal(t, honest, string(data))

	// A revision never on origin's main does not vouch for anything.
	blob := gitIn(t, repo, "rev-parse", forgedCommit+":allowed_signers")
	_, err = v.Source.content(t.Context(), gitRevisionPrefix+forgedCommit+":"+blob)
	require.ErrorIs(t, err, ErrUnverified)
	require.Contains(t, err.Error(), "not in the history of origin's main")
	// Nor one whose blob is not the file's at that commit.
	_, err = v.Source.content(t.Context(), gitRevisionPrefix+honestCommit+":"+blob)
	require.ErrorIs(t, err, ErrUnverified)
	require.Contains(t, err.Error(), "the record was altered")

	// An origin that cannot be reached leaves nothing to verify against.
	gitIn(t, repo, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "gone.git"))
	_, err = NewPeopleSource(path).read(t.Context())
	require.ErrorIs(t, err, workflow.ErrPeopleUnavailable)
}
