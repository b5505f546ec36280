package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
)

// ReconciliationTimeout is how often the lab's Argo CD looks at Git
// again (ARGOCD_RECONCILIATION_TIMEOUT).
const ReconciliationTimeout = 5 * time.Second

// UpOptions configure Up.
type UpOptions struct {
	Dir     string
	Builder Builder
	// Self is the relcap-lab executable, run again as the lab's registry.
	Self string
	// Timeout bounds the start of every component and the wait for the
	// seeded Applications.
	Timeout time.Duration
	// WaitApps waits for the seeded Applications to be Synced and Healthy.
	WaitApps bool
	// ArgoInsecure serves Argo CD in plaintext (argocd-server --insecure)
	// instead of TLS with a certificate of the lab's CA.
	ArgoInsecure bool
	// Gitea also runs the lab's Gitea (StartGitea), built on first use.
	Gitea bool
	Out   io.Writer
}

// Up starts a lab in o.Dir and returns once Argo CD serves and the lab's
// files are written (and, with WaitApps, the seeded Applications are Synced
// and Healthy). On failure it stops what it started and keeps the logs.
func Up(ctx context.Context, o UpOptions) (err error) {
	begin := time.Now()
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	if err := checkFreeDir(dir); err != nil {
		return err
	}
	binDir, err := o.Builder.Build(ctx)
	if err != nil {
		return err
	}
	var gitea GiteaBuild
	if o.Gitea {
		if gitea, err = o.Builder.BuildGitea(ctx); err != nil {
			return err
		}
	}
	ports, err := pickLabPorts(o.Gitea)
	if err != nil {
		return err
	}
	for _, d := range []string{"logs", "pki", "etcd", "redis", "git", "registry", "argocd/home", "argocd/ssh", "argocd/tls", "argocd/gnupg", "argocd/tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("create lab directory: %w", err)
		}
	}
	variant := o.Builder.Variant
	pki, err := GeneratePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return fmt.Errorf("generate certificates: %w", err)
	}
	argoCA := pki.CACert
	if o.ArgoInsecure {
		argoCA = ""
	}
	l := &launcher{dir: dir, out: o.Out, start: begin, state: State{Dir: dir, BinDir: binDir, Versions: variant.Versions, Ports: ports, ArgoCA: argoCA, StartedAt: begin.UTC()}}
	if err := WriteState(dir, l.state); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			l.abort()
			err = fmt.Errorf("%w\nlab stopped; logs kept in %s (relcap-lab down --dir %s removes them)", err, filepath.Join(dir, "logs"), dir)
		}
	}()
	l.logf("binaries %s; ports %v", binDir, ports.All())

	lab := Lab{
		TFMirror: o.Builder.ProviderMirror(), Dir: dir, Ports: ports, KubeToken: randomToken(),
		EnvRepo: filepath.Join(dir, "git", EnvRepoName), BinDir: binDir, Kubeconfig: filepath.Join(dir, "kubeconfig"),
		CAPEM: pki.CAPEM, ArgoVersion: variant.Versions.ArgoCD, ArgoCAFile: argoCA, ClientCert: pki.ClientCert, ClientKey: pki.ClientKey,
		DockerConfig: filepath.Join(dir, "docker"),
	}
	// The registry asks for basic auth; clients get the credentials only
	// through the docker config (DOCKER_CONFIG in lab.env).
	registryPassword, registryUsers := randomToken(), filepath.Join(dir, "registry", "users")
	if err := writeRegistryAuth(registryUsers, lab.DockerConfig, lab.registryHost(), RegistryUser, registryPassword); err != nil {
		return fmt.Errorf("registry credentials: %w", err)
	}
	tokens := filepath.Join(dir, "pki", "tokens.csv")
	if err := os.WriteFile(tokens, []byte(RenderTokenAuthFile(lab.KubeToken)), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(lab.Kubeconfig, []byte(RenderKubeconfig(lab.apiServerURL(), lab.CAPEM, lab.KubeToken)), 0o600); err != nil {
		return err
	}
	bin := func(n string) string { return filepath.Join(binDir, n) }
	kc := kubectl{bin: bin(binKubectl), kubeconfig: lab.Kubeconfig}
	loop := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(lab.CAPEM)
	labTLS := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}

	// 1. Storage, registry and Git: nothing depends on anything.
	err = l.launchReady(ctx, o.Timeout,
		Component{Name: "etcd", Path: "etcd", Ports: []int{ports.Etcd, ports.EtcdPeer}, Args: []string{
			"--name", "lab", "--data-dir", filepath.Join(dir, "etcd"),
			"--listen-client-urls", "http://" + loop(ports.Etcd), "--advertise-client-urls", "http://" + loop(ports.Etcd),
			"--listen-peer-urls", "http://" + loop(ports.EtcdPeer), "--initial-advertise-peer-urls", "http://" + loop(ports.EtcdPeer),
			"--initial-cluster", "lab=http://" + loop(ports.EtcdPeer),
		}, Ready: httpProbe(nil, "http://"+loop(ports.Etcd)+"/health", "", `"health":"true"`)},
		Component{Name: "redis", Path: "redis-server", Ports: []int{ports.Redis}, Args: []string{
			"--bind", "127.0.0.1", "--port", strconv.Itoa(ports.Redis), "--save", "", "--appendonly", "no", "--dir", filepath.Join(dir, "redis"),
		}, Ready: redisProbe(ports.Redis)},
		Component{Name: "registry", Path: o.Self, Ports: []int{ports.Registry}, Args: []string{"registry", "--listen", loop(ports.Registry), "--users", registryUsers},
			Ready: registryProbe("http://"+loop(ports.Registry), RegistryUser, registryPassword)},
		// The image webhook only needs the registry when a Pod is
		// created, and is up before the apiserver (failurePolicy Fail
		// in RenderWebhookConfiguration).
		Component{Name: ImageWebhookComponent, Path: o.Self, Ports: []int{ports.ImageWebhook}, Args: []string{
			"image-webhook", "--listen", loop(ports.ImageWebhook), "--cert", pki.WebhookCert, "--key", pki.WebhookKey,
			"--registry", lab.registryHost(), "--docker-config", lab.DockerConfig,
		}, Ready: httpProbe(labTLS, "https://"+loop(ports.ImageWebhook)+"/healthz", "", "ok")},
		Component{Name: "git-daemon", Path: "git", Ports: []int{ports.Git}, Args: []string{
			"daemon", "--export-all", "--reuseaddr", "--informative-errors", "--base-path=" + filepath.Join(dir, "git"),
			"--listen=127.0.0.1", "--port=" + strconv.Itoa(ports.Git), filepath.Join(dir, "git"),
		}, Ready: tcpProbe(ports.Git)},
	)
	if err != nil {
		return err
	}

	// The first release: one image in every environment's repository, and
	// the environment repository pinning it.
	registryAuth := staticKeychain{host: lab.registryHost(), auth: &authn.Basic{Username: RegistryUser, Password: registryPassword}}
	digest, err := pushRandomImage(ctx, registryAuth, lab.registryHost()+"/ci/"+AppName+":1.0.0", lab.repository("staging")+":1.0.0", lab.repository("prod")+":1.0.0")
	if err != nil {
		return err
	}
	files := map[string]string{}
	for _, env := range Envs {
		files[ManifestPath(env)] = RenderDeployment(env, lab.repository(env)+"@"+digest.String())
	}
	rev, err := CreateEnvRepo(ctx, lab.EnvRepo, files)
	if err != nil {
		return err
	}
	l.logf("registry seeded with %s/ci/%s:1.0.0 (%s); environment repository %s at %s", lab.registryHost(), AppName, digest, lab.gitURL(), rev[:12])
	// The failed-readiness drill's build, in every environment's
	// repository like the first release: the image webhook has its Pods
	// run and never become ready.
	unreadyRefs := []string{lab.registryHost() + "/ci/" + AppName + ":" + UnreadyTag}
	for _, env := range Envs {
		unreadyRefs = append(unreadyRefs, lab.repository(env)+":"+UnreadyTag)
	}
	unready, err := pushRandomLabeled(ctx, registryAuth, map[string]string{ReadinessLabel: "never"}, unreadyRefs...)
	if err != nil {
		return err
	}
	lab.UnreadyDigest = unready.String()
	// Each environment's rehearsal: keys (relcap rehearse): the unready
	// build and how relcap-lab stops and restarts reconciliation.
	lab.Rehearsal = &Rehearsal{Self: o.Self}
	if o.Gitea {
		// The same first release in the forge's repository, which Argo
		// CD follows and relcap.yaml promotes to through pull requests.
		gs, gerr := StartGitea(ctx, l, gitea, filepath.Join(dir, "gitea"), ports.Gitea, o.Timeout, files)
		if err = gerr; err != nil {
			return err
		}
		lab.Gitea = &gs
		l.mu.Lock()
		l.state.Gitea = &gs
		err = WriteState(dir, l.state)
		l.mu.Unlock()
		if err != nil {
			return err
		}
		l.logf("gitea %s: %s (main protected; accounts %s and %s, tokens in %s)", gs.Version, gs.RepoURL, GiteaCaptain, GiteaApprover, filepath.Join(dir, StateFile))
	}

	// 2. The apiserver.
	apiClient := labTLS
	err = l.launchReady(ctx, o.Timeout, Component{Name: "kube-apiserver", Path: bin(binAPIServer), Ports: []int{ports.APIServer}, Args: append([]string{
		"--etcd-servers=http://" + loop(ports.Etcd), "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports.APIServer),
		"--advertise-address=127.0.0.1", "--cert-dir=" + filepath.Join(dir, "pki"),
		"--tls-cert-file=" + pki.ServingCert, "--tls-private-key-file=" + pki.ServingKey,
		"--service-account-key-file=" + pki.SAPub, "--service-account-signing-key-file=" + pki.SAKey,
		"--service-account-issuer=https://kubernetes.default.svc", "--token-auth-file=" + tokens,
		"--authorization-mode=RBAC", "--service-cluster-ip-range=10.96.0.0/16",
		// Without this the apiserver keeps failing to publish a
		// loopback endpoint for the kubernetes Service (LAB.md).
		"--endpoint-reconciler-type=none",
	}, variant.APIServerArgs...), Ready: httpProbe(apiClient, lab.apiServerURL()+"/readyz", lab.KubeToken, "ok")})
	if err != nil {
		return err
	}

	// 3. Controllers, scheduler, kwok, and Argo CD's API objects.
	kwokArgs := []string{"--kubeconfig", lab.Kubeconfig, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--server-address=" + loop(ports.Kwok)}
	stages, err := writeKwokStages(binDir, filepath.Join(dir, "kwok-stages"))
	if err != nil {
		return err
	}
	sort.Strings(stages)
	for _, s := range stages {
		kwokArgs = append(kwokArgs, "--config", s)
	}
	var wg sync.WaitGroup
	var setupErr error
	webhookConfig := RenderWebhookConfiguration("https://"+loop(ports.ImageWebhook)+WebhookPath, lab.CAPEM)
	wg.Go(func() { setupErr = setupCluster(ctx, kc, binDir, webhookConfig, o.Timeout, l) })
	err = l.launchReady(ctx, o.Timeout,
		Component{Name: "kube-controller-manager", Path: bin(binControllerManager), Ports: []int{ports.ControllerManager}, Args: []string{
			"--kubeconfig=" + lab.Kubeconfig, "--authentication-kubeconfig=" + lab.Kubeconfig, "--authorization-kubeconfig=" + lab.Kubeconfig,
			// serviceaccount creates the default service account
			// without which no pod is ever admitted (LAB.md).
			"--controllers=deployment,replicaset,serviceaccount,serviceaccount-token,namespace,garbagecollector",
			"--service-account-private-key-file=" + pki.SAKey, "--root-ca-file=" + pki.CACert, "--leader-elect=false",
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports.ControllerManager), "--cert-dir=" + filepath.Join(dir, "pki", "kcm"),
		}, Ready: httpProbe(insecureTLS, "https://"+loop(ports.ControllerManager)+"/healthz", "", "ok")},
		Component{Name: "kube-scheduler", Path: bin(binScheduler), Ports: []int{ports.Scheduler}, Args: []string{
			"--kubeconfig=" + lab.Kubeconfig, "--authentication-kubeconfig=" + lab.Kubeconfig, "--authorization-kubeconfig=" + lab.Kubeconfig,
			"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports.Scheduler), "--cert-dir=" + filepath.Join(dir, "pki", "scheduler"),
		}, Ready: httpProbe(insecureTLS, "https://"+loop(ports.Scheduler)+"/healthz", "", "ok")},
		Component{Name: "kwok", Path: bin(binKwok), Ports: []int{ports.Kwok}, Args: kwokArgs, Ready: tcpProbe(ports.Kwok)},
	)
	wg.Wait()
	if err = errors.Join(err, setupErr); err != nil {
		return err
	}
	if err = readyNode(ctx, kc, o.Timeout, l); err != nil {
		return err
	}

	// 4. Argo CD, serving TLS with a certificate of the lab's CA (from
	// Secret argocd-server-tls) unless asked for plaintext.
	api := newArgoAPI(lab.argoServer(), nil)
	if lab.argoTLS() {
		api = newArgoAPI(lab.argoServer(), pki.CAPEM)
		cert, kerr := os.ReadFile(pki.ArgoCert)
		key, cerr := os.ReadFile(pki.ArgoKey)
		if err = errors.Join(kerr, cerr); err != nil {
			return err
		}
		if err = kc.apply(ctx, RenderServerTLSSecret(cert, key)); err != nil {
			return err
		}
	}
	err = l.launchReady(ctx, o.Timeout, argoComponents(variant, lab, api, bin)...)
	if err != nil {
		return err
	}

	// 5. The cluster, the Applications, a token.
	if err = kc.apply(ctx, RenderClusterSecret(lab.apiServerURL(), lab.KubeToken)); err != nil {
		return err
	}
	for _, env := range Envs {
		if err = kc.apply(ctx, RenderApplication(ArgoApp(env), lab.argoRepoURL(), filepath.Dir(ManifestPath(env)), lab.apiServerURL(), Namespace(env))); err != nil {
			return err
		}
	}
	lctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	password, err := kc.secretValue(lctx, ArgoNamespace, "argocd-initial-admin-secret", "password")
	if err != nil {
		return err
	}
	if lab.ArgoToken, err = argoLogin(lctx, api, "admin", password); err != nil {
		return err
	}
	if err = writeLabFiles(lab); err != nil {
		return err
	}
	if err = l.allRunning(); err != nil {
		return err
	}
	l.mu.Lock()
	l.state.Ready = true
	err = WriteState(dir, l.state)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	l.logf("Argo CD %s ready: %s%s (token in %s)", variant.Versions.ArgoCD, api.base, argoTransportNote(argoCA), filepath.Join(dir, "argocd-token"))

	if o.WaitApps {
		if err = waitApps(lctx, api, lab.ArgoToken, l); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "\nlab up in %s: . %s, then relcap -c %s ...\n", since(begin), filepath.Join(dir, "lab.env"), filepath.Join(dir, "relcap.yaml"))
	return nil
}

// setupCluster registers the image webhook (before Argo CD creates any
// app Pod), creates Argo CD's namespace, CRDs (server-side: they are too
// big for the last-applied annotation) and base configuration, and the
// fake node. It runs while the controllers start.
func setupCluster(ctx context.Context, kc kubectl, binDir, webhookConfig string, timeout time.Duration, l *launcher) error {
	t := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	crds, _ := filepath.Glob(filepath.Join(binDir, manifestsDir, "crds", "*.yaml"))
	config, _ := filepath.Glob(filepath.Join(binDir, manifestsDir, "config", "*.yaml"))
	if len(crds) == 0 || len(config) == 0 {
		return fmt.Errorf("no argo cd manifests in %s: rebuild with relcap-lab build", filepath.Join(binDir, manifestsDir))
	}
	if err := kc.apply(ctx, webhookConfig); err != nil {
		return fmt.Errorf("register the image webhook: %w", err)
	}
	ns := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ArgoNamespace + `"}}`
	if err := kc.apply(ctx, ns); err != nil {
		return err
	}
	if err := kc.applyFiles(ctx, crds); err != nil {
		return err
	}
	if err := kc.applyFiles(ctx, config, "-n", ArgoNamespace); err != nil {
		return err
	}
	if err := kc.wait(ctx, "Established", "crd/applications.argoproj.io", "crd/appprojects.argoproj.io", "crd/applicationsets.argoproj.io"); err != nil {
		return err
	}
	if err := kc.apply(ctx, RenderNode()); err != nil {
		return err
	}
	l.logf("argo cd CRDs and config applied, node %s created in %s", NodeName, since(t))
	return nil
}

// readyNode waits for kwok to report the fake node Ready, then removes the
// not-ready taint admission put on it at creation: no node-lifecycle
// controller runs to do that, and pods would stay Pending (LAB.md).
func readyNode(ctx context.Context, kc kubectl, timeout time.Duration, l *launcher) error {
	t := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := kc.wait(ctx, "Ready", "node/"+NodeName); err != nil {
		return fmt.Errorf("kwok never made node %s ready: %w", NodeName, err)
	}
	if _, err := kc.run(ctx, "", "taint", "nodes", NodeName, "node.kubernetes.io/not-ready:NoSchedule-"); err != nil && !strings.Contains(err.Error(), "not found") {
		return err
	}
	l.logf("node %s Ready and schedulable in %s", NodeName, since(t))
	return nil
}

// waitApps waits until every seeded Application is Synced and Healthy.
func waitApps(ctx context.Context, api argoAPI, token string, l *launcher) error {
	t := time.Now()
	var last []argoApp
	for {
		apps, err := argoApps(ctx, api, token)
		if err == nil {
			last = apps
			done := len(apps) >= len(Envs)
			for _, a := range apps {
				done = done && a.Sync == "Synced" && a.Health == "Healthy"
			}
			if done {
				var s []string
				for _, a := range apps {
					s = append(s, a.Name+" "+a.Sync+" "+a.Health+" at "+short(a.Revision))
				}
				l.logf("applications %s in %s", strings.Join(s, ", "), since(t))
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("applications not Synced/Healthy: %v (last error %v)", last, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// argoComponents are Argo CD's repo-server, server and application
// controller as the lab runs them: outside the cluster, on loopback,
// repo-server in plaintext, the kubeconfig of the lab's apiserver.
// argocd-server serves TLS from Secret argocd-server-tls, or plaintext
// (--insecure) when lab has no Argo CD CA.
func argoComponents(v Variant, lab Lab, api argoAPI, bin func(string) string) []Component {
	dir, ports := lab.Dir, lab.Ports
	loop := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	env := []string{
		"ARGOCD_GPG_ENABLED=false", // else repo-server dies on /app/config/gpg/keys (LAB.md)
		"HOME=" + filepath.Join(dir, "argocd", "home"),
		"TMPDIR=" + filepath.Join(dir, "argocd", "tmp"),
		"ARGOCD_SSH_DATA_PATH=" + filepath.Join(dir, "argocd", "ssh"),
		"ARGOCD_TLS_DATA_PATH=" + filepath.Join(dir, "argocd", "tls"),
		"ARGOCD_GNUPGHOME=" + filepath.Join(dir, "argocd", "gnupg"),
		// Notice a new commit within seconds rather than the default
		// 3 min: this sets the controller's resync period and
		// repo-server's cache of what a branch resolves to.
		"ARGOCD_RECONCILIATION_TIMEOUT=" + ReconciliationTimeout.String(),
		// 3.x adds up to 60 s of random delay to each of those resyncs
		// (2.14: none), which made it notice a commit 10-30 s later.
		"ARGOCD_RECONCILIATION_JITTER=0s",
	}
	redis, repo := loop(ports.Redis), loop(ports.RepoServer)
	server := []string{
		"--kubeconfig", lab.Kubeconfig, "--namespace", ArgoNamespace,
		"--address", "127.0.0.1", "--port", strconv.Itoa(ports.Server),
		"--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(ports.ServerMetrics),
		"--redis", redis, "--repo-server", repo, "--repo-server-plaintext", "--dex-server", "",
	}
	if !lab.argoTLS() {
		server = append(server, "--insecure")
	}
	repoServer := []string{
		"--redis", redis, "--address", "127.0.0.1", "--port", strconv.Itoa(ports.RepoServer),
		"--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(ports.RepoServerMetrics), "--disable-tls",
	}
	repoEnv := env
	if v.Is3() {
		// git-verify-wrapper.sh, which repo-server 3.6 runs for every
		// manifest generation, is in the binary cache.
		repoEnv = append(slices.Clone(env), "PATH="+lab.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		// 3.5 added mTLS: --client-ca-path defaults to the mounted
		// Secret's path, and 3.6 refuses any value with --disable-tls
		// ("cannot be used when --disable-tls is enabled") even when
		// that file does not exist.
		repoServer = append(repoServer, "--client-ca-path=")
	}
	return []Component{
		{Name: "argocd-repo-server", Path: bin(binArgoRepoServer), Env: repoEnv, Ports: []int{ports.RepoServer, ports.RepoServerMetrics}, Args: repoServer,
			Ready: httpProbe(nil, "http://"+loop(ports.RepoServerMetrics)+"/healthz", "", "")},
		{Name: "argocd-server", Path: bin(binArgoServer), Env: env, Ports: []int{ports.Server, ports.ServerMetrics}, Args: server, Ready: api.healthz()},
		{Name: "argocd-application-controller", Path: bin(binArgoController), Env: env, Ports: []int{ports.ControllerMetrics}, Args: []string{
			"--kubeconfig", lab.Kubeconfig, "--namespace", ArgoNamespace,
			"--redis", redis, "--repo-server", repo, "--repo-server-plaintext",
			// it always binds 0.0.0.0 for metrics; v2.14 has no flag
			"--metrics-port", strconv.Itoa(ports.ControllerMetrics),
		}, Ready: httpProbe(nil, "http://"+loop(ports.ControllerMetrics)+"/healthz", "", "")},
	}
}
