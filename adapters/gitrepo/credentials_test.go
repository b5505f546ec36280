package gitrepo

import (
	"context"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/workflowtest"
)

// forgeLikeServer serves bare over HTTP with git's own http-backend, as a
// forge serves a public repository: anyone fetches, a push needs the user
// name and password given (else 401, asking for them).
func forgeLikeServer(t *testing.T, bare, user, password string) *httptest.Server {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	require.NoError(t, err)
	out, err := exec.Command("git", "-C", bare, "config", "http.receivepack", "true").CombinedOutput()
	require.NoError(t, err, string(out))
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(bare), "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		push := strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack"
		if u, p, ok := r.BasicAuth(); push && (!ok || u != user || p != password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="forge"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestPinOverHTTPAsksTheCredentialsOnlyWhenOriginWantsThem(t *testing.T) {
	t.Parallel()
	bare, _, _ := initOrigin(t, envFiles())
	srv := forgeLikeServer(t, bare, "captain", "s3cret-token-0123456789")
	repoURL := srv.URL + "/" + filepath.Base(bare)

	var asked atomic.Int32
	var askedFor atomic.Value
	a, err := New(Options{WorkDir: t.TempDir(), Clock: workflowtest.NewClock(testTime), Credentials: func(_ context.Context, u *url.URL) (string, string, error) {
		asked.Add(1)
		askedFor.Store(u.String())
		return "captain", "s3cret-token-0123456789", nil
	}})
	require.NoError(t, err)

	ch, err := a.Pin(t.Context(), pinRequest(repoURL, "R1", digest(t, "a")))
	require.NoError(t, err)
	require.True(t, ch.Pushed)
	require.Equal(t, int32(1), asked.Load(), "the clone is fetched without credentials; the push asks once")
	su, _ := url.Parse(srv.URL)
	require.Equal(t, "http://"+su.Host+"/env.git", askedFor.Load(), "asked for the repository's address, without userinfo")
	origin, err := git.PlainOpen(bare)
	require.NoError(t, err)
	ref, err := origin.Reference(branchRef("R1"), true)
	require.NoError(t, err)
	require.Equal(t, ch.Commit, ref.Hash().String())

	_, err = a.Pin(t.Context(), pinRequest(repoURL, "R2", digest(t, "b")))
	require.NoError(t, err)
	require.Equal(t, int32(1), asked.Load(), "the credentials found are reused in the process")

	// Without a way to ask, the push fails and says where credentials go;
	// credentials that are refused fail too, and never appear.
	_, err = newAdapter(t, t.TempDir()).Pin(t.Context(), pinRequest(repoURL, "R3", digest(t, "c")))
	require.Error(t, err)
	require.Contains(t, err.Error(), "git's credential helper")
	wrong, err := New(Options{WorkDir: t.TempDir(), Credentials: func(context.Context, *url.URL) (string, string, error) {
		return "captain", "wrong-token-0123456789", nil
	}})
	require.NoError(t, err)
	_, err = wrong.Pin(t.Context(), pinRequest(repoURL, "R4", digest(t, "d")))
	require.Error(t, err)
	require.NotContains(t, err.Error(), "wrong-token-0123456789")
}
