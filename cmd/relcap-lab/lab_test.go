package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/forge"
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
		Ports: Ports{Etcd: 1, APIServer: 2, Server: 3}, ArgoCA: dir + "/pki/ca.crt", StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Ready: true,
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
	// 2.14's key is the one of before Argo CD 3.6 joined: existing caches
	// are reused.
	require.Equal(t, "k8s-1.31.0-argocd-2.14.21-kwok-0.8.0", DefaultVersions.Key())
	b := Builder{CacheDir: "/c", Variant: DefaultVariant}
	require.Equal(t, "/c/bin/k8s-1.31.0-argocd-2.14.21-kwok-0.8.0", b.BinDir())
	require.False(t, b.Complete())
	v3, err := SelectVariant("3.6")
	require.NoError(t, err)
	b.Variant = v3
	require.Equal(t, "/c/bin/k8s-1.37.0-argocd-3.6.1-kwok-0.8.0", b.BinDir(), "each Argo CD version has a cache of its own")
}

func TestKubernetesVersionIsLinkedIn(t *testing.T) {
	t.Parallel()
	f := k8sVersionLDFlags("1.37.0")
	for _, want := range []string{"-X k8s.io/component-base/version.gitVersion=v1.37.0", "-X k8s.io/component-base/version.gitMajor=1",
		"-X k8s.io/component-base/version.gitMinor=37", "-X k8s.io/client-go/pkg/version.gitVersion=v1.37.0"} {
		require.Contains(t, f, want)
	}
}

func TestSelectVariantByMinorOrVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "2.14.21", "2.14": "2.14.21", "2.14.21": "2.14.21", "v2.14.21": "2.14.21", "3.6": "3.6.1", " 3.6.1 ": "3.6.1", "v3.6.1": "3.6.1"} {
		v, err := SelectVariant(in)
		require.NoError(t, err, in)
		require.Equal(t, want, v.Versions.ArgoCD, in)
	}
	require.Equal(t, DefaultVariant, Variants[0])
	require.Equal(t, "2.14", DefaultVariant.Minor, "the default stays 2.14")
	for _, bad := range []string{"3.5", "2", "latest", "3.6.0"} {
		_, err := SelectVariant(bad)
		require.ErrorContains(t, err, "the lab runs 2.14, 3.6", bad)
	}
	v3, _ := SelectVariant("3.6")
	require.True(t, v3.Is3())
	require.Equal(t, []string{"GOTOOLCHAIN=go1.27.3"}, v3.toolchainEnv())
	require.False(t, DefaultVariant.Is3())
	require.Nil(t, DefaultVariant.toolchainEnv(), "2.14 builds with the local go")
}

// TestVariantsMatchTheirBuildModules keeps Variants and lab/ in step: each
// variant's modules require exactly the versions that key its cache, and
// the Kubernetes module replaces every staging module by the matching
// v0.x (LAB.md: anything else picks another structured-merge-diff).
func TestVariantsMatchTheirBuildModules(t *testing.T) {
	t.Parallel()
	for _, v := range Variants {
		argo, err := os.ReadFile(filepath.Join("..", "..", "lab", v.ArgoModule, "go.mod"))
		require.NoError(t, err)
		require.Regexp(t, `(?m)^require `+regexp.QuoteMeta(v.ArgoPath+" v"+v.Versions.ArgoCD)+`$`, string(argo), v.ArgoModule)
		require.False(t, regexp.MustCompile(`(?m)^\s*[^/\s].*=> \./`).Match(argo), "%s: a local replace cannot work outside argo-cd's repository", v.ArgoModule)
		tools, err := os.ReadFile(filepath.Join("..", "..", "lab", v.ArgoModule, "tools.go"))
		require.NoError(t, err)
		require.Contains(t, string(tools), `_ "`+v.ArgoPath+`/cmd"`)

		k8s, err := os.ReadFile(filepath.Join("..", "..", "lab", v.K8sModule, "go.mod"))
		require.NoError(t, err)
		require.Regexp(t, `(?m)^require k8s.io/kubernetes `+regexp.QuoteMeta("v"+v.Versions.Kubernetes)+`$`, string(k8s), v.K8sModule)
		staging := "v0." + strings.TrimPrefix(v.Versions.Kubernetes, "1.")
		replaces := regexp.MustCompile(`(?m)^\s+(k8s.io/\S+) => (\S+) (\S+)$`).FindAllStringSubmatch(string(k8s), -1)
		require.NotEmpty(t, replaces, v.K8sModule)
		for _, r := range replaces {
			require.Equal(t, r[1], r[2], "%s replaces %s by itself", v.K8sModule, r[1])
			require.Equal(t, staging, r[3], "%s: %s", v.K8sModule, r[1])
		}
	}
}

func testLab() Lab {
	return Lab{
		Dir: "/tmp/lab", Ports: Ports{APIServer: 6443, Server: 8080, Registry: 5000, Git: 9418},
		KubeToken: "kube-token", CAPEM: []byte("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"),
		ArgoToken: "argo'token", EnvRepo: "/tmp/lab/git/env.git", BinDir: "/cache/bin", Kubeconfig: "/tmp/lab/kubeconfig",
		ArgoVersion: "3.6.1", ClientCert: "/tmp/lab/pki/client.crt", ClientKey: "/tmp/lab/pki/client.key", DockerConfig: "/tmp/lab/docker",
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

// TestRenderedRelcapConfigRehearsal: with Lab.Rehearsal (up --rehearsal)
// each environment gets the rehearsal: keys relcap rehearse reads, and
// nothing else changes; without it there are none, so a relcap whose
// configuration does not know the key reads the file. Checked with yaml.v3
// directly until config.Parse knows rehearsal:.
func TestRenderedRelcapConfigRehearsal(t *testing.T) {
	t.Parallel()
	type env struct {
		Name      string
		Rehearsal *struct {
			UnreadyImage string `yaml:"unready_image"`
			Interrupt    struct {
				Stop, Start []string
			}
		}
	}
	decode := func(l Lab) (typed struct{ Environments []env }, loose map[string]any) {
		require.NoError(t, yaml.Unmarshal([]byte(RenderRelcapConfig(l)), &typed))
		require.NoError(t, yaml.Unmarshal([]byte(RenderRelcapConfig(l)), &loose))
		return typed, loose
	}
	l := testLab()
	l.Dir = "/tmp/lab dir"
	l.UnreadyDigest = "sha256:" + strings.Repeat("ab", 32)
	plain, plainLoose := decode(l)
	for _, e := range plain.Environments {
		require.Nil(t, e.Rehearsal, "no rehearsal: without Lab.Rehearsal")
	}
	l.Rehearsal = &Rehearsal{Self: "/opt/relcap lab/bin/relcap-lab"}
	got, loose := decode(l)
	// relcap itself reads them as the drills' configuration.
	p, err := config.Parse(filepath.Join(l.Dir, "relcap.yaml"), []byte(RenderRelcapConfig(l)))
	require.NoError(t, err)
	for _, e := range p.Environments {
		require.Equal(t, "127.0.0.1:5000/"+e.Name+"/web@sha256:"+strings.Repeat("ab", 32), e.Rehearsal.UnreadyImage)
		require.Equal(t, []string{"/opt/relcap lab/bin/relcap-lab", "stop", "--dir", "/tmp/lab dir", "--grace", "0s", "argocd-application-controller"}, e.Rehearsal.InterruptStop)
	}
	require.Len(t, got.Environments, len(Envs))
	for i, e := range got.Environments {
		require.Equal(t, Envs[i], e.Name)
		require.NotNil(t, e.Rehearsal, e.Name)
		require.Equal(t, "127.0.0.1:5000/"+e.Name+"/web@sha256:"+strings.Repeat("ab", 32), e.Rehearsal.UnreadyImage, "the unready build in the environment's own repository")
		require.Equal(t, []string{"/opt/relcap lab/bin/relcap-lab", "stop", "--dir", "/tmp/lab dir", "--grace", "0s", "argocd-application-controller"}, e.Rehearsal.Interrupt.Stop)
		require.Equal(t, []string{"/opt/relcap lab/bin/relcap-lab", "start", "--dir", "/tmp/lab dir", "argocd-application-controller"}, e.Rehearsal.Interrupt.Start)
		delete(loose["environments"].([]any)[i].(map[string]any), "rehearsal")
	}
	require.Equal(t, plainLoose, loose, "rehearsal: is the only difference")
	// The interruption is what relcap-lab itself parses as stop and start.
	stop, start := l.interruptCommands()
	for _, argv := range [][]string{stop, start} {
		var out, errOut strings.Builder
		err := run(t.Context(), argv[1:], &out, &errOut)
		require.ErrorContains(t, err, "no lab state", "parsed as a command on a lab directory: %s", errOut.String())
	}
}

// TestRenderedRelcapConfigWithGiteaPromotesThroughItsPullRequests: a lab
// with Gitea pins in Gitea's repository through a reviewed pull request,
// maps its accounts to the lab's people, and gives git push the captain's
// token through git's credential helper only.
func TestRenderedRelcapConfigWithGiteaPromotesThroughItsPullRequests(t *testing.T) {
	t.Parallel()
	l := testLab()
	l.Gitea = &GiteaState{URL: "http://127.0.0.1:3000", RepoURL: "http://127.0.0.1:3000/captain/env", CloneURL: "http://127.0.0.1:3000/captain/env.git",
		Users: []GiteaUser{{Login: GiteaCaptain, Token: "captain-token"}, {Login: GiteaApprover, Token: "approver-token"}}}
	require.Equal(t, l.Gitea.CloneURL, l.argoRepoURL(), "Argo CD follows Gitea's repository")
	p, err := config.Parse(filepath.Join(l.Dir, "relcap.yaml"), []byte(RenderRelcapConfig(l)))
	require.NoError(t, err)
	for _, e := range p.Environments {
		require.Equal(t, l.Gitea.CloneURL, e.EnvRepo.Path)
		r := e.EnvRepo.Review
		require.True(t, r.PullRequests())
		require.Equal(t, forge.Gitea, r.Forge)
		require.Equal(t, l.Gitea.RepoURL, r.URL)
		require.Equal(t, GiteaTokenEnv, r.TokenEnv)
		require.Equal(t, "bob", r.PrincipalOf(GiteaApprover))
		require.Equal(t, "captain", r.PrincipalOf(GiteaCaptain))
	}
	require.NotContains(t, RenderRelcapConfig(l), "captain-token", "no token in relcap.yaml")
	vars := map[string]string{}
	for _, kv := range l.EnvVars() {
		vars[kv[0]] = kv[1]
	}
	require.Equal(t, "captain-token", vars[GiteaTokenEnv])
	require.Equal(t, "approver-token", vars[GiteaApproverTokenEnv])
	require.Equal(t, "1", vars["GIT_CONFIG_COUNT"])
	require.Equal(t, "credential.http://127.0.0.1:3000.helper", vars["GIT_CONFIG_KEY_0"])
	require.Equal(t, "store --file="+l.giteaCredentials(), vars["GIT_CONFIG_VALUE_0"])

	plain := testLab()
	require.Equal(t, plain.gitURL(), plain.argoRepoURL())
	for _, kv := range plain.EnvVars() {
		require.NotContains(t, kv[0], "GITEA")
		require.NotContains(t, kv[0], "GIT_CONFIG")
	}
}

// TestRenderedRelcapConfigCarriesTheArgoCDCAWithTLS: a lab serving Argo
// CD over TLS gives relcap the CA file (argocd.ca_file) instead of
// plaintext; one served in plaintext says plaintext and no CA.
func TestRenderedRelcapConfigCarriesTheArgoCDCAWithTLS(t *testing.T) {
	t.Parallel()
	argocd := func(l Lab) []map[string]any {
		var c struct {
			Environments []struct {
				ArgoCD map[string]any `yaml:"argocd"`
			}
		}
		require.NoError(t, yaml.Unmarshal([]byte(RenderRelcapConfig(l)), &c))
		require.Len(t, c.Environments, len(Envs))
		var out []map[string]any
		for _, e := range c.Environments {
			out = append(out, e.ArgoCD)
		}
		return out
	}
	l := testLab()
	for _, a := range argocd(l) {
		require.Equal(t, true, a["plaintext"])
		require.NotContains(t, a, "ca_file")
	}
	l.ArgoCAFile = "/tmp/lab dir/pki/ca.crt"
	for i, a := range argocd(l) {
		require.Equal(t, map[string]any{"server": "127.0.0.1:8080", "app": ArgoApp(Envs[i]), "token_env": TokenEnv, "ca_file": "/tmp/lab dir/pki/ca.crt", "readiness_grace": LabReadinessGrace}, a)
	}
}

func TestEnvFileSaysHowArgoCDAndTheRegistryAreReached(t *testing.T) {
	t.Parallel()
	env := func(l Lab) map[string]string {
		m := map[string]string{}
		for _, kv := range l.EnvVars() {
			_, dup := m[kv[0]]
			require.False(t, dup, "%s exported twice", kv[0])
			m[kv[0]] = kv[1]
		}
		return m
	}
	l := testLab()
	plain := env(l)
	require.Equal(t, "--plaintext", plain["ARGOCD_OPTS"])
	require.NotContains(t, plain, ArgoCAEnv, "no CA to name when argocd-server serves plaintext")
	require.Equal(t, "3.6.1", plain[ArgoVersionEnv])
	require.Equal(t, "/tmp/lab/docker", plain["DOCKER_CONFIG"])
	require.Equal(t, "/tmp/lab/pki/client.crt", plain["RELCAP_LAB_ARGOCD_CLIENT_CERT"])
	require.Equal(t, "/tmp/lab/pki/client.key", plain["RELCAP_LAB_ARGOCD_CLIENT_KEY"])
	l.UnreadyDigest = "sha256:" + strings.Repeat("cd", 32)
	require.Equal(t, l.UnreadyDigest, env(l)[UnreadyDigestEnv], "the unready build, for drills and e2e")
	l.UnreadyDigest = ""

	l.ArgoCAFile = "/tmp/lab/pki/ca.crt"
	tls := env(l)
	require.Equal(t, "/tmp/lab/pki/ca.crt", tls[ArgoCAEnv])
	require.Equal(t, "--server-crt /tmp/lab/pki/ca.crt", tls["ARGOCD_OPTS"], "the argocd CLI verifies the server with the lab's CA")
}

func TestPKISignsArgoCDServerAndClientCertificates(t *testing.T) {
	t.Parallel()
	p, err := GeneratePKI(t.TempDir())
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(p.CAPEM))
	load := func(certFile, keyFile string) *x509.Certificate {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		require.NoError(t, err, certFile)
		c, err := x509.ParseCertificate(pair.Certificate[0])
		require.NoError(t, err)
		return c
	}
	srv := load(p.ArgoCert, p.ArgoKey)
	_, err = srv.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	require.NoError(t, err, "argocd-server's certificate is valid for 127.0.0.1 under the lab's CA")
	_, err = srv.Verify(x509.VerifyOptions{Roots: pool, DNSName: "localhost"})
	require.NoError(t, err)
	client := load(p.ClientCert, p.ClientKey)
	_, err = client.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "the client certificate is for client auth under the lab's CA")
	_, err = load(p.ServingCert, p.ServingKey).Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"})
	require.NoError(t, err)
	_, err = load(p.WebhookCert, p.WebhookKey).Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	require.NoError(t, err, "the apiserver verifies the image webhook on 127.0.0.1 with the lab's CA (its caBundle)")
	for _, f := range []string{p.ArgoKey, p.ClientKey, p.ServingKey, p.SAKey, p.WebhookKey} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}

	var sec struct {
		Metadata   struct{ Name, Namespace string }
		Type       string
		StringData map[string]string `json:"stringData"`
	}
	require.NoError(t, json.Unmarshal([]byte(RenderServerTLSSecret([]byte("CERT"), []byte("KEY"))), &sec))
	require.Equal(t, "argocd-server-tls", sec.Metadata.Name)
	require.Equal(t, ArgoNamespace, sec.Metadata.Namespace)
	require.Equal(t, "kubernetes.io/tls", sec.Type)
	require.Equal(t, map[string]string{"tls.crt": "CERT", "tls.key": "KEY"}, sec.StringData)
}

func TestArgoComponentsServeTLSUnlessInsecure(t *testing.T) {
	t.Parallel()
	bin := func(n string) string { return "/bin/" + n }
	server := func(cs []Component) Component {
		for _, c := range cs {
			if c.Name == "argocd-server" {
				return c
			}
		}
		t.Fatal("no argocd-server")
		return Component{}
	}
	for _, v := range Variants {
		l := testLab()
		s := server(argoComponents(v, l, newArgoAPI(l.argoServer(), nil), bin))
		require.Contains(t, s.Args, "--insecure", v.Minor)
		l.ArgoCAFile = "/tmp/lab/pki/ca.crt"
		s = server(argoComponents(v, l, newArgoAPI(l.argoServer(), []byte("ca")), bin))
		require.NotContains(t, s.Args, "--insecure", v.Minor)
		require.Equal(t, "/bin/"+binArgoServer, s.Path)
	}
	// What 3.6 needs and 2.14 must not get.
	v3, _ := SelectVariant("3.6")
	repo := func(v Variant) Component { return argoComponents(v, testLab(), newArgoAPI("x", nil), bin)[0] }
	require.Equal(t, "argocd-repo-server", repo(v3).Name)
	require.Contains(t, repo(v3).Args, "--client-ca-path=", "3.6 refuses its default mTLS CA path with --disable-tls")
	require.Contains(t, repo(v3).Env, "PATH=/cache/bin"+string(os.PathListSeparator)+os.Getenv("PATH"), "git-verify-wrapper.sh is found in the binary cache")
	require.NotContains(t, repo(DefaultVariant).Args, "--client-ca-path=")
	require.Equal(t, []string{"--feature-gates=WatchList=false"}, v3.APIServerArgs)
	require.Empty(t, DefaultVariant.APIServerArgs)
	require.Contains(t, v3.cacheFiles(), gitVerifyWrapper)
	require.NotContains(t, DefaultVariant.cacheFiles(), gitVerifyWrapper, "an existing 2.14 cache stays complete")
	require.Equal(t, "https://127.0.0.1:8080", newArgoAPI("127.0.0.1:8080", []byte("ca")).base)
	require.Equal(t, "http://127.0.0.1:8080", newArgoAPI("127.0.0.1:8080", nil).base)
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

// A lab with Gitea picks its port with the others (distinct from them);
// one without leaves it out of Ports.All, which down checks free.
func TestPickLabPortsWithGitea(t *testing.T) {
	p, err := pickLabPorts(true)
	require.NoError(t, err)
	require.Positive(t, p.Gitea)
	require.Len(t, p.All(), len(p.fields())+1)
	seen := map[int]bool{}
	for _, port := range p.All() {
		require.False(t, seen[port], "port %d picked twice in %+v", port, p)
		seen[port] = true
	}
	without, err := PickPorts()
	require.NoError(t, err)
	require.Zero(t, without.Gitea)
	require.Len(t, without.All(), len(without.fields()))
}

// Gitea's configuration keeps it on loopback, offline, without SSH or
// registration, reading its templates from the copied source tree; main's
// protection leaves nobody a direct push and no admin override.
func TestGiteaConfigAndProtection(t *testing.T) {
	g := GiteaBuild{Version: GiteaVersion, Binary: "/cache/gitea", StaticRoot: "/cache/src"}
	ini := renderGiteaConfig(g, "/lab/gitea", 4321)
	for _, want := range []string{"HTTP_ADDR = 127.0.0.1\n", "HTTP_PORT = 4321\n", "ROOT_URL = http://127.0.0.1:4321/\n", "DISABLE_SSH = true\n",
		"OFFLINE_MODE = true\n", "STATIC_ROOT_PATH = /cache/src\n", "DB_TYPE = sqlite3\n", "INSTALL_LOCK = true\n", "DISABLE_REGISTRATION = true\n",
		"ROOT = /lab/gitea/repositories\n", "DEFAULT_BRANCH = main\n"} {
		require.Contains(t, ini, want)
	}
	p := GiteaProtection()
	require.Equal(t, GiteaBranch, p.RuleName)
	require.False(t, p.EnablePush, "no direct push to main")
	require.Empty(t, p.PushWhitelistUsernames)
	require.EqualValues(t, 1, p.RequiredApprovals)
	require.True(t, p.BlockOnRejectedReviews)
	require.True(t, p.DismissStaleApprovals)
	require.True(t, p.BlockAdminMergeOverride)
}
