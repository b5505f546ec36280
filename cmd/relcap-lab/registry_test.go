package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/stretchr/testify/require"
)

func TestRenderDockerConfigIsWhatDockerLoginWrites(t *testing.T) {
	t.Parallel()
	var c struct {
		Auths map[string]struct {
			Auth string `json:"auth"`
		} `json:"auths"`
	}
	require.NoError(t, json.Unmarshal([]byte(RenderDockerConfig("127.0.0.1:5000", "relcap-lab", "s3cr:et")), &c))
	require.Len(t, c.Auths, 1)
	b, err := base64.StdEncoding.DecodeString(c.Auths["127.0.0.1:5000"].Auth)
	require.NoError(t, err)
	require.Equal(t, "relcap-lab:s3cr:et", string(b), "base64 of user:password; the password may hold a colon")
}

func TestWriteRegistryAuthKeepsBothFilesPrivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	users, docker := filepath.Join(dir, "registry", "users"), filepath.Join(dir, "docker")
	require.NoError(t, writeRegistryAuth(users, docker, "127.0.0.1:5000", "u", "p"))
	got, err := readUsers(users)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"u": "p"}, got)
	for _, f := range []string{users, filepath.Join(docker, "config.json")} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
	require.NoError(t, os.WriteFile(users, []byte("# nobody\n"), 0o600))
	_, err = readUsers(users)
	require.ErrorContains(t, err, "names no user")
	require.NoError(t, os.WriteFile(users, []byte("nopassword\n"), 0o600))
	_, err = readUsers(users)
	require.ErrorContains(t, err, "want user:password lines")
}

// TestRegistryWantsTheDockerConfigCredentials pushes to the lab's registry
// handler as relcap and push-random do: through go-containerregistry's
// default keychain, which reads $DOCKER_CONFIG. Without it, or with a wrong
// password, the registry refuses. Not parallel: it sets DOCKER_CONFIG.
func TestRegistryWantsTheDockerConfigCredentials(t *testing.T) {
	srv := httptest.NewServer(registryHandler(map[string]string{RegistryUser: "pw"}, log.New(io.Discard, "", 0)))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no config.json: anonymous
	_, err := pushRandomImage(t.Context(), authn.DefaultKeychain, host+"/ci/web:1")
	require.ErrorContains(t, err, "401 Unauthorized")

	wrong := t.TempDir()
	require.NoError(t, writeRegistryAuth(filepath.Join(wrong, "users"), wrong, host, RegistryUser, "not-pw"))
	t.Setenv("DOCKER_CONFIG", wrong)
	_, err = pushRandomImage(t.Context(), authn.DefaultKeychain, host+"/ci/web:1")
	require.ErrorContains(t, err, "401 Unauthorized")

	right := t.TempDir()
	require.NoError(t, writeRegistryAuth(filepath.Join(right, "users"), right, host, RegistryUser, "pw"))
	t.Setenv("DOCKER_CONFIG", right)
	d, err := pushRandomImage(t.Context(), authn.DefaultKeychain, host+"/ci/web:1", host+"/staging/web:1")
	require.NoError(t, err)

	// The lab's own first push uses the credentials directly.
	_, err = pushRandomImage(t.Context(), staticKeychain{host: host, auth: &authn.Basic{Username: RegistryUser, Password: "pw"}}, host+"/prod/web:1")
	require.NoError(t, err)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/v2/staging/web/manifests/"+d.String(), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "reads need credentials too")
	require.Equal(t, `Basic realm="relcap-lab"`, resp.Header.Get("WWW-Authenticate"))
	require.NoError(t, registryProbe(srv.URL, RegistryUser, "pw")(t.Context()))
	require.ErrorContains(t, registryProbe(srv.URL, RegistryUser, "nope")(t.Context()), "401")
}
