//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The end-to-end suite (issue 8) runs relcap's own commands against a real
// lab: kube-apiserver, Argo CD, kwok, git daemon and a registry, started by
// relcap-lab up and stopped by relcap-lab down. Nothing here skips: a
// missing tool or a lab that does not start fails the suite.
//
// $RELCAP_LAB_ARGOCD chooses the Argo CD the lab runs (2.14, the default,
// or 3.6; issue 14). argocd-server serves TLS with the lab's CA, which
// relcap verifies (argocd.ca_file); $RELCAP_LAB_E2E_TLS=0 serves plaintext.
//
//	go test -tags e2e -count=1 -timeout 40m -run TestE2E ./cmd/relcap-lab
//	RELCAP_LAB_ARGOCD=3.6 go test -tags e2e -count=1 -timeout 40m -run TestE2E ./cmd/relcap-lab

// e2eLab is a running lab and the binaries that drive it.
type e2eLab struct {
	dir, relcap, lab string
	env              map[string]string // lab.env
	data             string            // XDG data/state of relcap
	variant          Variant           // the Argo CD (and Kubernetes) it runs
	tls              bool              // argocd-server serves TLS
}

// e2eVariant is the Argo CD the suite runs: $RELCAP_LAB_ARGOCD, 2.14 when
// unset.
func e2eVariant(t testing.TB) Variant {
	t.Helper()
	v, err := SelectVariant(os.Getenv(ArgoCDEnv))
	require.NoError(t, err, "$%s", ArgoCDEnv)
	return v
}

// e2eTLS says whether the suite's lab serves Argo CD over TLS, verified
// with the lab's CA (argocd.ca_file), as a team's server is: always,
// unless $RELCAP_LAB_E2E_TLS=0 asks for plaintext to tell a TLS problem
// from another.
func e2eTLS() bool {
	switch os.Getenv("RELCAP_LAB_E2E_TLS") {
	case "0", "false":
		return false
	}
	return true
}

// startLab builds relcap, its Argo CD helper (beside it, where relcap looks
// first) and relcap-lab, brings a lab up in a temporary
// directory and registers its teardown, which must leave nothing behind.
func startLab(t testing.TB, upArgs ...string) *e2eLab {
	t.Helper()
	bin := t.TempDir()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	for name, pkg := range map[string]string{"relcap": "./cmd/relcap", "relcap-argocd": "./cmd/relcap-argocd", "relcap-lab": "./cmd/relcap-lab"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkg)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "build %s: %s", name, out)
	}
	l := &e2eLab{dir: filepath.Join(t.TempDir(), "lab"), relcap: filepath.Join(bin, "relcap"), lab: filepath.Join(bin, "relcap-lab"), data: t.TempDir(),
		variant: e2eVariant(t), tls: e2eTLS()}
	args := []string{"up", "--dir", l.dir, "--src", filepath.Join(root, "lab"), "--argocd", l.variant.Minor}
	if !l.tls {
		args = append(args, "--argocd-insecure")
	}
	args = append(args, upArgs...)
	t.Logf("lab: argo cd %s on kubernetes %s, argocd-server TLS %v", l.variant.Versions.ArgoCD, l.variant.Versions.Kubernetes, l.tls)
	up := exec.Command(l.lab, args...)
	up.Stdout, up.Stderr = os.Stderr, os.Stderr // progress and timings in the test log
	start := time.Now()
	upErr := up.Run()
	t.Cleanup(func() {
		if t.Failed() {
			// down removes the lab directory: keep the components' logs
			// of a failed run for the post-mortem.
			keep := filepath.Join(os.TempDir(), "relcap-e2e-logs-"+strconv.FormatInt(time.Now().Unix(), 10))
			if out, err := exec.Command("cp", "-a", filepath.Join(l.dir, "logs"), keep).CombinedOutput(); err == nil {
				t.Logf("the lab's logs are kept in %s", keep)
			} else {
				t.Logf("keeping the lab's logs: %v: %s", err, out)
			}
		}
		out, err := exec.Command(l.lab, "down", "--dir", l.dir).CombinedOutput()
		require.NoError(t, err, "relcap-lab down must stop everything and leave no port: %s", out)
	})
	require.NoError(t, upErr, "relcap-lab up")
	t.Logf("lab up in %s", time.Since(start).Round(time.Second))
	l.env = readEnvFile(t, filepath.Join(l.dir, "lab.env"))
	require.Equal(t, l.variant.Versions.ArgoCD, l.env[ArgoVersionEnv], "the lab runs the Argo CD asked for")
	require.NotEmpty(t, l.env["DOCKER_CONFIG"], "the registry's credentials reach clients through DOCKER_CONFIG")
	if l.tls {
		require.NotEmpty(t, l.env[ArgoCAEnv])
	} else {
		require.NotContains(t, l.env, ArgoCAEnv)
	}
	return l
}

// readEnvFile reads the export lines relcap-lab writes.
func readEnvFile(t testing.TB, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	env := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(s.Text(), "export "), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		env[k] = strings.ReplaceAll(strings.Trim(v, "'"), `'\''`, "'")
	}
	require.NoError(t, s.Err())
	require.NotEmpty(t, env[TokenEnv], "lab.env must carry the Argo CD token")
	return env
}

func (l *e2eLab) environ() []string {
	env := append(os.Environ(), "XDG_DATA_HOME="+l.data, "XDG_STATE_HOME="+filepath.Join(l.data, "state"), "NO_COLOR=1")
	for k, v := range l.env {
		env = append(env, k+"="+v)
	}
	return env
}

// run runs a binary of the lab with its environment and returns the exit
// code and combined output.
func (l *e2eLab) run(t testing.TB, bin string, args ...string) (int, string) {
	t.Helper()
	return l.runEnv(t, nil, bin, args...)
}

// runEnv is run with extra environment variables, which win over the
// lab's.
func (l *e2eLab) runEnv(t testing.TB, extra []string, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = l.dir
	env := l.environ()
	if bin == l.relcap {
		// Each lab person runs relcap from their own shell, holding their
		// own key (extra may name another: an impersonation attempt).
		env = append(env, l.signingEnv(actorOf(args))...)
	}
	cmd.Env = append(env, extra...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	machine := bin == l.relcap && slices.Contains(args, "--json")
	if machine {
		// --json's document is stdout alone: what relcap says on stderr
		// (a warning at the session's close) is logged, and joins the
		// output only when the command failed.
		cmd.Stderr = &errOut
	}
	err := cmd.Run()
	if machine && errOut.Len() > 0 {
		t.Logf("relcap %s (stderr):\n%s", strings.Join(args, " "), errOut.String())
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String() + errOut.String()
	}
	require.NoError(t, err)
	return 0, out.String()
}

// actorOf is who a relcap command line acts as: its --actor, else the
// user running the suite, as relcap decides.
func actorOf(args []string) string {
	for i, a := range args {
		if a == "--actor" && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--actor="); ok {
			return v
		}
	}
	return os.Getenv("USER")
}

// relcapOK runs relcap against the lab's relcap.yaml and requires exit 0.
func (l *e2eLab) relcapOK(t testing.TB, args ...string) string {
	t.Helper()
	code, out := l.run(t, l.relcap, append([]string{"-c", filepath.Join(l.dir, "relcap.yaml"), "--no-tui"}, args...)...)
	require.Equal(t, 0, code, "relcap %s:\n%s", strings.Join(args, " "), out)
	return out
}

func (l *e2eLab) kubectl(t testing.TB, args ...string) string {
	t.Helper()
	code, out := l.run(t, filepath.Join(l.env["RELCAP_LAB_BIN"], binKubectl), args...)
	require.Equal(t, 0, code, "kubectl %s:\n%s", strings.Join(args, " "), out)
	return strings.TrimSpace(out)
}

// live reads what the Kubernetes API says env's Deployment runs: its image
// and how many replicas are ready of how many wanted. ready counts only
// once every replica runs the current template (a rollout in progress has
// ready < want).
func (l *e2eLab) live(t testing.TB, env string) (image string, ready, want int) {
	t.Helper()
	out := l.kubectl(t, "get", "deployment", AppName, "-n", Namespace(env), "-o",
		`jsonpath={.spec.template.spec.containers[0].image}|{.status.readyReplicas}|{.spec.replicas}|{.status.updatedReplicas}|{.status.observedGeneration}|{.metadata.generation}`)
	f := strings.Split(out, "|")
	require.Len(t, f, 6, out)
	n := func(s string) int { i, _ := strconv.Atoi(s); return i }
	ready, want = n(f[1]), n(f[2])
	if n(f[3]) != want || f[4] != f[5] {
		ready = 0
	}
	return f[0], ready, want
}

func (l *e2eLab) pushBuild(t testing.TB, tag string) (ref, digest string) {
	t.Helper()
	ref = l.env["RELCAP_LAB_REGISTRY"] + "/ci/" + AppName + ":" + tag
	code, out := l.run(t, l.lab, "push-random", ref)
	require.Equal(t, 0, code, out)
	return ref, strings.TrimSpace(out)
}

func TestE2E(t *testing.T) {
	l := startLab(t)
	repo := func(env string) string { return l.env["RELCAP_LAB_REGISTRY"] + "/" + env + "/" + AppName }

	t.Run("the registry and argo cd want the lab's credentials and CA", func(t *testing.T) { testLabAccess(t, l) })

	t.Run("the seeded release is converged and relcap agrees", func(t *testing.T) {
		rev := strings.TrimSpace(l.runGit(t, "rev-parse", "main"))
		out := l.relcapOK(t, "converge", "--env", "staging", "--revision", rev, "--timeout", "2m")
		require.Contains(t, out, "web-staging converged: synced at "+rev[:12])
	})

	t.Run("a release to staging then prod converges, cross-checked with the Kubernetes API", func(t *testing.T) {
		ref, digest := l.pushBuild(t, "1.1.0")

		l.relcapOK(t, "--actor", "alice", "promote", "--env", "staging", "--image", ref)
		rev := strings.TrimSpace(l.runGit(t, "rev-parse", "main"))
		out := l.relcapOK(t, "converge", "--env", "staging", "--timeout", "3m")
		require.Contains(t, out, "converged in staging")
		require.Contains(t, out, digest)
		image, ready, want := l.live(t, "staging")
		require.Equal(t, repo("staging")+"@"+digest, image, "the apiserver runs the promoted digest")
		require.Equal(t, want, ready, "kwok reports every pod ready")
		require.Contains(t, l.relcapOK(t, "converge", "--env", "staging", "--revision", rev, "--timeout", "1m"), "healthy, running "+digest)

		// prod needs a second person's approval.
		code, out := l.run(t, l.relcap, "-c", filepath.Join(l.dir, "relcap.yaml"), "--no-tui", "--actor", "alice", "promote", "--env", "prod", "--image", ref)
		require.Equal(t, 3, code, "prod waits for a promotion approval:\n%s", out)
		i := strings.Index(out, "relcap approve --release ")
		require.GreaterOrEqual(t, i, 0, out)
		id := strings.Fields(out[i+len("relcap approve --release "):])[0]
		code, out = l.runEnv(t, l.signingEnv("bob"), l.relcap, "-c", filepath.Join(l.dir, "relcap.yaml"), "--no-tui", "--actor", "bob", "approve", "--release", id)
		require.Equal(t, 0, code, "bob's signed approval of the pinned change:\n%s", out)
		require.Contains(t, out, "signed by bob with SHA256:")
		out = l.relcapOK(t, "resume", id, "--timeout", "3m")
		require.Contains(t, out, "converged in prod")
		image, ready, want = l.live(t, "prod")
		require.Equal(t, repo("prod")+"@"+digest, image)
		require.Equal(t, want, ready)
	})

	t.Run("self-heal puts a manual change back, and relcap sees it as drift", func(t *testing.T) { testSelfHeal(t, l) })

	t.Run("tug-of-war: terraform kubectl_manifest and argo cd write one Deployment", func(t *testing.T) { testTugOfWar(t, l) })
	t.Run("image pull failure is named by converge and rollback converges", func(t *testing.T) { testImagePullFailure(t, l, repo) })
	t.Run("break-glass: a hotfix survives its deny window, end captures it and removes the window", func(t *testing.T) { testBreakGlass(t, l) })
	t.Run("break-glass left to expire: argo cd itself self-heals when the window closes", func(t *testing.T) { testBreakGlassExpires(t, l) })
	t.Run("a failed sync (invalid manifest) is named by converge and rollback converges", func(t *testing.T) { testFailedSync(t, l, repo) })
	t.Run("an interrupted reconciliation is named by converge and rollback converges after the restart", func(t *testing.T) { testInterruptedReconciliation(t, l, repo) })
	// Readiness failures are named from the unready build (the lab's
	// webhook, no fault annotation), here and in relcap rehearse: each
	// costs workflow.ReadinessGrace, so the suite has no third one.
	t.Run("the registry decides: an absent digest never pulls, the unready build never becomes ready", func(t *testing.T) { testFaultsTheRegistryDecides(t, l, repo) })
	t.Run("the captain releases through the cockpit, a second person approves from another shell", func(t *testing.T) { testCockpitRelease(t, l, repo) })
	t.Run("relcap rehearse: each drill detects, names and recovers its failure; a killed one is undone", func(t *testing.T) { testRehearsals(t, l, repo) })
	t.Run("state custody: pg backends pass and a backup restores; production on staging's state or a local file is stopped", func(t *testing.T) { testStateCustody(t, l) })
}

func (l *e2eLab) runGit(t testing.TB, args ...string) string {
	t.Helper()
	code, out := l.run(t, "git", append([]string{"-C", l.env["RELCAP_LAB_ENVREPO"]}, args...)...)
	require.Equal(t, 0, code, out)
	return out
}

// testLabAccess: the registry refuses a client without the lab's docker
// config, and argocd-server presents a certificate of the lab's CA (or,
// served in plaintext, answers plain HTTP).
func testLabAccess(t *testing.T, l *e2eLab) {
	ref := l.env["RELCAP_LAB_REGISTRY"] + "/ci/" + AppName + ":anonymous"
	code, out := l.runEnv(t, []string{"DOCKER_CONFIG=" + t.TempDir()}, l.lab, "push-random", ref)
	require.NotEqual(t, 0, code, "a push without credentials must fail:\n%s", out)
	require.Contains(t, out, "401 Unauthorized")
	_, digest := l.pushBuild(t, "access-check")
	require.True(t, strings.HasPrefix(digest, "sha256:"), digest)

	server := l.env["ARGOCD_SERVER"]
	if !l.tls {
		resp, err := http.Get("http://" + server + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return
	}
	ca, err := os.ReadFile(l.env[ArgoCAEnv])
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	conn, err := tls.Dial("tcp", server, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	require.NoError(t, err, "argocd-server's certificate verifies with $%s", ArgoCAEnv)
	require.Equal(t, "argocd-server", conn.ConnectionState().PeerCertificates[0].Subject.CommonName)
	require.NoError(t, conn.Close())
	_, err = tls.Dial("tcp", server, &tls.Config{MinVersion: tls.VersionTLS12})
	require.Error(t, err, "not by the system's roots")

	// relcap verifies the server with argocd.ca_file: every other check
	// runs with the lab's CA; another CA is refused, saying what to set.
	other, err := GeneratePKI(t.TempDir())
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(l.dir, "relcap.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(b), strconv.Quote(l.env[ArgoCAEnv]))
	cfg := filepath.Join(t.TempDir(), "relcap.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(strings.ReplaceAll(string(b), strconv.Quote(l.env[ArgoCAEnv]), strconv.Quote(other.CACert))), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(cfg), "ownership.yaml"), []byte(RenderOwnership()), 0o644))
	for _, env := range Envs {
		require.NoError(t, os.MkdirAll(filepath.Join(filepath.Dir(cfg), "infra", env), 0o755))
	}
	code, out = l.run(t, l.relcap, "-c", cfg, "--no-tui", "converge", "--env", "staging", "--revision", l.headRev(t), "--timeout", "30s")
	require.Equal(t, 1, code, "a server whose certificate the configured CA did not sign is refused:\n%s", out)
	require.Contains(t, out, "x509: certificate signed by unknown authority")
	require.Contains(t, out, "set argocd.ca_file to the CA that signed the server's certificate")
	require.NotContains(t, out, l.env[TokenEnv], "no secret in the message")
}
