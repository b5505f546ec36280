package main

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow/config"
)

// TestPickPortsGivesDistinctFreeLoopbackPorts runs alone (not parallel):
// the other tests of this package open loopback ports of their own, and one
// could take a just-released port before this test binds it again.
func TestPickPortsGivesDistinctFreeLoopbackPorts(t *testing.T) {
	p, err := PickPorts()
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, port := range p.All() {
		require.Positive(t, port)
		require.False(t, seen[port], "port %d picked twice in %+v", port, p)
		seen[port] = true
		// Free: the picker released it, so it can be bound again.
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		require.NoError(t, err)
		require.NoError(t, l.Close())
	}
	require.Len(t, seen, len(p.fields()), "every field of Ports gets a port")
}

func TestStateRoundTrips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want := State{
		Dir: dir, BinDir: "/cache/bin/" + DefaultVersions.Key(), Versions: DefaultVersions,
		Ports: Ports{Etcd: 1, APIServer: 2, Server: 3}, StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Ready: true,
		Processes: []Process{{Name: "etcd", PID: 42, StartTicks: 7, Args: []string{"etcd", "--name", "lab"}, Log: dir + "/logs/etcd.log", Ports: []int{1}}},
	}
	require.NoError(t, WriteState(dir, want))
	got, err := ReadState(dir)
	require.NoError(t, err)
	want.Version = stateVersion
	require.Equal(t, want, got)

	_, err = ReadState(t.TempDir())
	require.ErrorIs(t, err, errNoLab)

	require.NoError(t, os.WriteFile(filepath.Join(dir, StateFile), []byte(`{"version": 99}`), 0o600))
	_, err = ReadState(dir)
	require.ErrorContains(t, err, "version 99")
}

func TestVersionsKeyTheCache(t *testing.T) {
	t.Parallel()
	require.Equal(t, "k8s-1.31.0-argocd-2.14.21-kwok-0.8.0", DefaultVersions.Key())
	b := Builder{CacheDir: "/c", Versions: DefaultVersions}
	require.Equal(t, "/c/bin/k8s-1.31.0-argocd-2.14.21-kwok-0.8.0", b.BinDir())
	require.False(t, b.Complete())
}

func testLab() Lab {
	return Lab{
		Dir: "/tmp/lab", Ports: Ports{APIServer: 6443, Server: 8080, Registry: 5000, Git: 9418},
		KubeToken: "kube-token", CAPEM: []byte("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"),
		ArgoToken: "argo'token", EnvRepo: "/tmp/lab/git/env.git", BinDir: "/cache/bin", Kubeconfig: "/tmp/lab/kubeconfig",
	}
}

func TestRenderedRelcapConfigIsValidAndPointsAtTheLab(t *testing.T) {
	t.Parallel()
	l := testLab()
	p, err := config.Parse(filepath.Join(l.Dir, "relcap.yaml"), []byte(RenderRelcapConfig(l)))
	require.NoError(t, err)
	require.Equal(t, AppName, p.App)
	require.Len(t, p.Environments, 2)
	for i, env := range Envs {
		e := p.Environments[i]
		require.Equal(t, env, e.Name)
		require.Equal(t, env == "prod", e.Production)
		require.Equal(t, "127.0.0.1:8080", e.ArgoCD.Server)
		require.True(t, e.ArgoCD.PlainText)
		require.Equal(t, TokenEnv, e.ArgoCD.TokenEnv)
		require.Equal(t, ArgoApp(env), e.ArgoCD.App)
		require.Equal(t, "127.0.0.1:5000/"+env+"/web", e.Registry.Repository)
		require.Equal(t, "/tmp/lab/git/env.git", e.EnvRepo.Path)
		require.Equal(t, ManifestPath(env), e.EnvRepo.File)
		require.Equal(t, "manifest", e.EnvRepo.Format)
		require.Equal(t, filepath.Join(l.Dir, "infra", env), e.Terraform.Dir)
	}
}

func TestRenderedOwnershipLoadsWithTheConfig(t *testing.T) {
	t.Parallel()
	l := testLab()
	l.Dir = t.TempDir()
	l.EnvRepo = filepath.Join(l.Dir, "git", EnvRepoName)
	require.NoError(t, os.MkdirAll(l.EnvRepo, 0o755))
	require.NoError(t, writeLabFiles(l))
	p, err := config.Load(filepath.Join(l.Dir, "relcap.yaml"))
	require.NoError(t, err)
	require.Len(t, p.Ownership.Rules, 2)
}

func TestRenderKubeconfigCarriesTheCAAndToken(t *testing.T) {
	t.Parallel()
	l := testLab()
	kc := RenderKubeconfig(l.apiServerURL(), l.CAPEM, l.KubeToken)
	require.Contains(t, kc, `server: "https://127.0.0.1:6443"`)
	require.Contains(t, kc, "certificate-authority-data: "+base64.StdEncoding.EncodeToString(l.CAPEM))
	require.Contains(t, kc, `token: "kube-token"`)
	require.Equal(t, "kube-token,admin,admin,system:masters\n", RenderTokenAuthFile("kube-token"))
}

func TestRenderEnvFileQuotesForTheShell(t *testing.T) {
	t.Parallel()
	l := testLab()
	path := filepath.Join(t.TempDir(), "lab.env")
	require.NoError(t, os.WriteFile(path, []byte(RenderEnvFile(l.EnvVars())), 0o600))
	out, err := exec.Command("sh", "-c", `. "$1" && printf '%s|%s|%s' "$`+TokenEnv+`" "$ARGOCD_SERVER" "$KUBECONFIG"`, "sh", path).Output()
	require.NoError(t, err)
	require.Equal(t, "argo'token|127.0.0.1:8080|/tmp/lab/kubeconfig", string(out))
}

func TestRenderedObjectsAreWhatArgoCDAndKubernetesExpect(t *testing.T) {
	t.Parallel()
	var app map[string]any
	require.NoError(t, json.Unmarshal([]byte(RenderApplication("web-staging", "git://127.0.0.1:9418/env.git", "apps/web/staging", "https://127.0.0.1:6443", "web-staging")), &app))
	spec := app["spec"].(map[string]any)
	require.Equal(t, map[string]any{"prune": true, "selfHeal": true}, spec["syncPolicy"].(map[string]any)["automated"])
	require.Equal(t, "https://127.0.0.1:6443", spec["destination"].(map[string]any)["server"])

	var sec map[string]any
	require.NoError(t, json.Unmarshal([]byte(RenderClusterSecret("https://127.0.0.1:6443", "tok")), &sec))
	require.Equal(t, "cluster", sec["metadata"].(map[string]any)["labels"].(map[string]any)["argocd.argoproj.io/secret-type"])
	var cfg map[string]any
	require.NoError(t, json.Unmarshal([]byte(sec["stringData"].(map[string]any)["config"].(string)), &cfg))
	require.Equal(t, "tok", cfg["bearerToken"])

	dep := RenderDeployment("prod", "127.0.0.1:5000/prod/web@sha256:abc")
	var d struct {
		Metadata struct{ Name, Namespace string }
		Spec     struct {
			Template struct {
				Spec struct{ Containers []struct{ Image string } }
			}
		}
	}
	require.NoError(t, yaml.Unmarshal([]byte(dep), &d))
	require.Equal(t, "web-prod", d.Metadata.Namespace)
	require.Equal(t, "127.0.0.1:5000/prod/web@sha256:abc", d.Spec.Template.Spec.Containers[0].Image)
	require.True(t, strings.Contains(RenderNode(), `"kwok.x-k8s.io/node": "fake"`))
}

func TestStartTicksNamesThisProcess(t *testing.T) {
	t.Parallel()
	ticks, err := startTicks(os.Getpid())
	require.NoError(t, err)
	require.True(t, alive(Process{PID: os.Getpid(), StartTicks: ticks}))
	require.False(t, alive(Process{PID: os.Getpid(), StartTicks: ticks + 1}), "a reused pid is not our process")
}

// TestLabLinksNoKubernetesOrArgoCD protects the point of the lab's design:
// it drives the binaries as processes, so the main module never compiles
// Kubernetes or Argo CD server code (or client-go) for it.
func TestLabLinksNoKubernetesOrArgoCD(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-test=false", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{"k8s.io/", "sigs.k8s.io/", "github.com/argoproj/"} {
			require.False(t, strings.HasPrefix(dep, bad), "relcap-lab depends on %s", dep)
		}
	}
}
