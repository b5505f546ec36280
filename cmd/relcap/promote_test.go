package main

import (
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"
)

const kustomization = `# web in %s — pinned by relcap
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deployment.yaml # the workload
images:
  - name: web
    newTag: "1.0.0" # replaced by a digest pin
`

// promoteRepo is a release repository whose environments pull from a real
// OCI registry on loopback and are pinned in a bare environment repository.
func promoteRepo(t *testing.T) (cfg, host, envRepo string) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	host = u.Host

	work := t.TempDir()
	for _, env := range []string{"staging", "prod"} {
		p := filepath.Join(work, "apps/web", env)
		require.NoError(t, os.MkdirAll(p, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(p, "kustomization.yaml"), []byte(strings.Replace(kustomization, "%s", env, 1)), 0o644))
	}
	git := func(dir string, args ...string) {
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	git(work, "init", "-q", "-b", "main")
	git(work, "add", ".")
	git(work, "commit", "-q", "-m", "env")
	envRepo = filepath.Join(t.TempDir(), "env.git")
	git(work, "clone", "-q", "--bare", work, envRepo)
	git(envRepo, "remote", "remove", "origin") // the repository Argo CD reads

	c := strings.NewReplacer(
		"registry.example.com/staging/web", host+"/staging/web",
		"registry.example.com/prod/web", host+"/prod/web",
		"path: env,", "path: "+envRepo+",",
		"require_signature: true", "require_signature: false",
	).Replace(validConfig)
	dir := releaseRepo(t, c)
	return filepath.Join(dir, "relcap.yaml"), host, envRepo
}

func pushImage(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(1024, 2)
	require.NoError(t, err)
	r, err := name.ParseReference(ref)
	require.NoError(t, err)
	require.NoError(t, remote.Write(r, img))
	d, err := img.Digest()
	require.NoError(t, err)
	return d.String()
}

func TestPromotePinsTheDigestAndRefusesProdBeforeStagingConverged(t *testing.T) {
	t.Parallel()
	cfg, host, envRepo := promoteRepo(t)
	data := t.TempDir()
	digest := pushImage(t, host+"/ci/web:1.4.2")

	code, out, errOut := invoke(t, data, "-c", cfg, "--actor", "alice", "promote", "--env", "staging", "--image", host+"/ci/web:1.4.2")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "digest     "+digest)
	require.Contains(t, out, "copied     into "+host+"/staging/web: verified")
	require.Contains(t, out, "+    digest: "+digest)

	show, err := exec.Command("git", "-C", envRepo, "show", "main:apps/web/staging/kustomization.yaml").Output()
	require.NoError(t, err)
	pinned := string(show)
	require.Contains(t, pinned, "# web in staging — pinned by relcap", "comments survive")
	require.Contains(t, pinned, "- deployment.yaml # the workload")
	require.Contains(t, pinned, "digest: "+digest)
	require.NotContains(t, pinned, "newTag", "never a tag beside the pin")
	_, err = remote.Head(mustRef(t, host+"/staging/web@"+digest))
	require.NoError(t, err, "the same digest is in the staging repository")

	code, out, errOut = invoke(t, data, "-c", cfg, "--actor", "alice", "promote", "--env", "prod", "--image", host+"/ci/web@"+digest)
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, out+errOut, "has not converged in staging")
	_, err = remote.Head(mustRef(t, host+"/prod/web@"+digest))
	require.Error(t, err, "nothing copied into prod")

	code, _, errOut = invoke(t, data, "journal", "verify")
	require.Equal(t, 0, code, errOut)
}

func TestPromoteOfAMissingImageSaysSoAndRecordsNothingAsPromoted(t *testing.T) {
	t.Parallel()
	cfg, host, envRepo := promoteRepo(t)
	data := t.TempDir()
	code, out, errOut := invoke(t, data, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:nope")
	require.Equal(t, exitError, code, out+errOut)
	require.Contains(t, errOut, "ci/web:nope")
	branches, err := exec.Command("git", "-C", envRepo, "branch", "--list", "relcap/*").Output()
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(branches)), "no env-repo change")
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	require.NoError(t, err)
	return r
}
