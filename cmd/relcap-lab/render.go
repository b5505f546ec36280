package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Names the lab gives the things it creates.
const (
	// TokenEnv is the environment variable the lab's relcap.yaml reads the
	// Argo CD token from (argocd.token_env).
	TokenEnv = "RELCAP_LAB_ARGOCD_TOKEN"
	// ArgoNamespace is where Argo CD's own objects live.
	ArgoNamespace = "argocd"
	// NodeName is the kwok-managed fake node pods are scheduled on.
	NodeName = "fake"
	// ClusterName is the name of the Argo CD cluster Secret pointing at the
	// lab's apiserver (Applications use its server URL as destination).
	ClusterName = "lab"
	// EnvRepoName is the environment repository git daemon serves.
	EnvRepoName = "env.git"
	// AppName is the application relcap releases in the lab.
	AppName = "web"
)

// PeopleFile is the lab's people file (allowed-signers format) in its
// directory; People are the principals it gives keys to, whose private keys
// are in people/<name>: the lab plays several people on one machine, each
// approving with their own key.
const PeopleFile = "allowed_signers"

var People = []string{"alice", "bob", "captain"}

// labPeople are People and the user bringing the lab up ($USER), who acts
// in it too when a command names no --actor.
func labPeople() []string {
	if u := os.Getenv("USER"); u != "" && !slices.Contains(People, u) && principalName.MatchString(u) {
		return append(slices.Clone(People), u)
	}
	return People
}

// principalName is a name the people file can hold as a principal as it
// is: no spaces, quotes, commas or pattern characters.
var principalName = regexp.MustCompile(`^[A-Za-z0-9._@-]+$`)

// Envs are the environments of the lab's relcap.yaml, in promotion order.
var Envs = []string{"staging", "prod"}

// Lab is what rendering needs to know about a running lab.
type Lab struct {
	Dir        string
	Ports      Ports
	KubeToken  string // apiserver bearer token (system:masters)
	CAPEM      []byte // CA of the apiserver's serving certificate
	ArgoToken  string // Argo CD session token of admin
	EnvRepo    string // absolute path of the bare environment repository
	BinDir     string
	Kubeconfig string
	// TFMirror is the Terraform provider mirror (gavinbunney/kubectl).
	TFMirror string
	// ArgoVersion is the Argo CD version the lab runs.
	ArgoVersion string
	// ArgoCAFile is the CA file that verifies argocd-server's certificate;
	// empty when Argo CD is served in plaintext (up --argocd-insecure).
	ArgoCAFile string
	// ClientCert and ClientKey are a client certificate pair signed by
	// the lab's CA (no server of the lab asks for one yet).
	ClientCert, ClientKey string
	// DockerConfig is the directory of the docker config.json holding the
	// registry's credentials (DOCKER_CONFIG).
	DockerConfig string
	// Gitea is the lab's Gitea when up ran with --gitea: then Argo CD
	// follows its environment repository, whose protected main takes
	// changes only through a reviewed pull request, and relcap.yaml
	// promotes through one (envrepo.review).
	Gitea *GiteaState
	// UnreadyDigest is the digest of the failed-readiness drill's build
	// (UnreadyTag in every environment's repository), whose Pods the
	// image webhook has run and never become ready.
	UnreadyDigest string
	// Rehearsal, when set, puts each environment's rehearsal: keys into
	// relcap.yaml (up always sets it).
	Rehearsal *Rehearsal
}

// UnreadyTag tags the failed-readiness drill's build (ci/web and every
// environment's repository).
const UnreadyTag = "drill-unready"

// LabReadinessGrace is the lab environments' argocd.readiness_grace.
const LabReadinessGrace = "30s"

// ImageWebhookComponent is the image webhook's component name (logs,
// stop and start).
const ImageWebhookComponent = "image-webhook"

// InterruptedComponent is what the interrupted-reconciliation drill stops
// and starts: Argo CD's application controller, as a crash (grace 0s).
const InterruptedComponent = binArgoController

// Rehearsal is what relcap.yaml's rehearsal: keys need beyond Lab: the
// relcap-lab executable whose stop and start interrupt reconciliation.
type Rehearsal struct {
	Self string // absolute path of relcap-lab
}

// unreadyImage is env's pin of the unready build.
func (l Lab) unreadyImage(env string) string { return l.repository(env) + "@" + l.UnreadyDigest }

// interruptCommands are the argv of the drill's interruption and resume.
func (l Lab) interruptCommands() (stop, start []string) {
	self := l.Rehearsal.Self
	return []string{self, "stop", "--dir", l.Dir, "--grace", "0s", InterruptedComponent},
		[]string{self, "start", "--dir", l.Dir, InterruptedComponent}
}

// yamlFlowList renders items as a YAML flow sequence of double-quoted
// strings (strconv.Quote's escapes are YAML's for these).
func yamlFlowList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// argoRepoURL is the environment repository Argo CD follows: Gitea's in a
// lab with Gitea, else git daemon's.
func (l Lab) argoRepoURL() string {
	if l.Gitea != nil {
		return l.Gitea.CloneURL
	}
	return l.gitURL()
}

// GiteaTokenEnv is the lab.env export holding the captain's Gitea token,
// which the lab's relcap.yaml names in envrepo.review.token_env;
// GiteaApproverTokenEnv holds the approver's, for reviewing in Gitea as
// them.
const (
	GiteaTokenEnv         = "RELCAP_LAB_GITEA_TOKEN"
	GiteaApproverTokenEnv = "RELCAP_LAB_GITEA_APPROVER_TOKEN"
)

// GiteaPeople maps the lab Gitea's accounts to the lab's people
// (envrepo.review.users): the approver's reviews count as bob's.
var GiteaPeople = [][2]string{{GiteaCaptain, "captain"}, {GiteaApprover, "bob"}}

// giteaCredentials is the git credential store file of a lab with Gitea:
// the captain's token for git push, found through git's credential helper
// as a captain's own machine would have it.
func (l Lab) giteaCredentials() string { return filepath.Join(l.Dir, "gitea", "git-credentials") }

func (l Lab) apiServerURL() string         { return fmt.Sprintf("https://127.0.0.1:%d", l.Ports.APIServer) }
func (l Lab) argoServer() string           { return fmt.Sprintf("127.0.0.1:%d", l.Ports.Server) }
func (l Lab) argoTLS() bool                { return l.ArgoCAFile != "" }
func (l Lab) registryHost() string         { return fmt.Sprintf("127.0.0.1:%d", l.Ports.Registry) }
func (l Lab) gitURL() string               { return fmt.Sprintf("git://127.0.0.1:%d/%s", l.Ports.Git, EnvRepoName) }
func (l Lab) repository(env string) string { return l.registryHost() + "/" + env + "/" + AppName }

// Namespace is the namespace env's workload runs in.
func Namespace(env string) string { return AppName + "-" + env }

// ArgoApp is the name of env's Argo CD Application.
func ArgoApp(env string) string { return AppName + "-" + env }

// ManifestPath is env's manifest in the environment repository.
func ManifestPath(env string) string { return "apps/" + AppName + "/" + env + "/deploy.yaml" }

// RenderKubeconfig renders a kubeconfig for the lab's apiserver that
// verifies it against caPEM and authenticates with a bearer token.
func RenderKubeconfig(server string, caPEM []byte, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: lab
  context:
    cluster: lab
    user: admin
current-context: lab
`, strconv.Quote(server), base64.StdEncoding.EncodeToString(caPEM), strconv.Quote(token))
}

// RenderTokenAuthFile renders kube-apiserver's --token-auth-file: one
// user, admin, in system:masters.
func RenderTokenAuthFile(token string) string {
	return token + ",admin,admin,system:masters\n"
}

// RenderRelcapConfig renders a relcap.yaml for the lab: staging then prod,
// each an Argo CD Application following a plain manifest in the
// environment repository, images in the lab registry, Argo CD reached over
// TLS verified with the lab's CA (ca_file), or in plaintext when the lab
// serves it so, with the token from $RELCAP_LAB_ARGOCD_TOKEN.
func RenderRelcapConfig(l Lab) string {
	var b strings.Builder
	b.WriteString(`# relcap.yaml for the relcap lab (written by relcap-lab up; do not edit:
# the next up rewrites it). source lab.env first for the token.
version: 1
app: ` + AppName + `
ownership: ownership.yaml
people: ` + strconv.Quote(filepath.Join(l.Dir, PeopleFile)) + `
environments:
`)
	for _, env := range Envs {
		prod := env == "prod"
		fmt.Fprintf(&b, "  - name: %s\n", env)
		if prod {
			b.WriteString("    production: true\n")
		}
		fmt.Fprintf(&b, "    terraform: {dir: infra/%s}\n", env)
		fmt.Fprintf(&b, "    registry: {repository: %s, require_signature: false}\n", l.repository(env))
		if l.Gitea != nil {
			var users []string
			for _, u := range GiteaPeople {
				users = append(users, u[0]+": "+u[1])
			}
			fmt.Fprintf(&b, "    envrepo:\n      path: %s\n      branch: main\n      file: %s\n      image: %s\n      format: manifest\n", strconv.Quote(l.Gitea.CloneURL), ManifestPath(env), AppName)
			fmt.Fprintf(&b, "      review: {via: pull_request, forge: gitea, url: %s, token_env: %s, users: {%s}}\n", strconv.Quote(l.Gitea.RepoURL), GiteaTokenEnv, strings.Join(users, ", "))
		} else {
			fmt.Fprintf(&b, "    envrepo: {path: %s, branch: main, file: %s, image: %s, format: manifest}\n", strconv.Quote(l.EnvRepo), ManifestPath(env), AppName)
		}
		transport := "plaintext: true"
		if l.argoTLS() {
			transport = "ca_file: " + strconv.Quote(l.ArgoCAFile)
		}
		// The lab's kwok Pods are ready the moment they run (or never, for
		// the unready build): a readiness grace well under relcap's
		// default names a failed readiness sooner without calling a
		// good rollout failed.
		fmt.Fprintf(&b, "    argocd: {server: %s, app: %s, token_env: %s, %s, readiness_grace: %s}\n", l.argoServer(), ArgoApp(env), TokenEnv, transport, LabReadinessGrace)
		if prod {
			b.WriteString("    approvals: {plan: 1, promotion: 1, distinct_from_author: true}\n")
		} else {
			b.WriteString("    approvals: {plan: 0, promotion: 0, distinct_from_author: false}\n")
		}
		// The lab's own roots (infra/) keep their state in local files on
		// this one machine: accepted, with the reason, so every review
		// says so. The e2e suite's release roots use a pg backend and
		// drop this line.
		b.WriteString(LabCustodyAcceptance)
		if l.Rehearsal != nil {
			stop, start := l.interruptCommands()
			fmt.Fprintf(&b, "    rehearsal:\n      unready_image: %s\n      interrupt:\n        stop: %s\n        start: %s\n",
				strconv.Quote(l.unreadyImage(env)), yamlFlowList(stop), yamlFlowList(start))
		}
	}
	b.WriteString("effort: {idle_threshold: 2m, baseline_hours_per_release: 3}\n")
	return b.String()
}

// RenderOwnership renders the lab's ownership.yaml: Argo CD owns the web
// Deployments, Terraform owns everything it declares.
func RenderOwnership() string {
	return `# ownership.yaml for the relcap lab (written by relcap-lab up).
version: 1
rules:
  - match: {group: apps, kind: Deployment, namespace: "` + AppName + `-*"}
    owner: argocd
  - match: {terraform_type: "*"}
    owner: terraform
`
}

// LabCustodyAcceptance is the custody: line of each lab environment.
const LabCustodyAcceptance = "    custody: {accept: {custody.local-backend: \"the lab's own roots keep their state in local files on this one machine\"}}\n"

// RenderTerraformRoot renders a minimal Terraform root for env that needs
// no provider download.
func RenderTerraformRoot(env string) string {
	return `# Terraform root of the lab's ` + env + ` environment (written by relcap-lab up).
resource "terraform_data" "lab" {
  input = "` + env + `"
}
`
}

// RenderEnvFile renders shell exports, single-quoted, in the given order.
func RenderEnvFile(vars [][2]string) string {
	var b strings.Builder
	b.WriteString("# source this file: . lab.env (written by relcap-lab up)\n")
	for _, kv := range vars {
		fmt.Fprintf(&b, "export %s=%s\n", kv[0], shellQuote(kv[1]))
	}
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Exports of lab.env that say how Argo CD is reached.
const (
	// ArgoCAEnv names the CA file that verifies argocd-server (set only
	// when it serves TLS).
	ArgoCAEnv = "RELCAP_LAB_ARGOCD_CA"
	// ArgoVersionEnv is the Argo CD version the lab runs.
	ArgoVersionEnv = "RELCAP_LAB_ARGOCD_VERSION"
	// UnreadyDigestEnv is the digest of the unready build (UnreadyTag).
	UnreadyDigestEnv = "RELCAP_LAB_UNREADY_DIGEST"
)

// EnvVars are the exports of lab.env.
func (l Lab) EnvVars() [][2]string {
	// The argocd CLI: --server-crt is the CA pool it verifies the server
	// with.
	opts := "--plaintext"
	if l.argoTLS() {
		opts = "--server-crt " + l.ArgoCAFile
	}
	vars := [][2]string{
		{"RELCAP_LAB_DIR", l.Dir},
		{"KUBECONFIG", l.Kubeconfig},
		{TokenEnv, l.ArgoToken},
		{"ARGOCD_SERVER", l.argoServer()},
		{"ARGOCD_OPTS", opts},
		{ArgoVersionEnv, l.ArgoVersion},
	}
	if l.argoTLS() {
		vars = append(vars, [2]string{ArgoCAEnv, l.ArgoCAFile})
	}
	vars = append(vars, [][2]string{
		{"RELCAP_LAB_ARGOCD_CLIENT_CERT", l.ClientCert},
		{"RELCAP_LAB_ARGOCD_CLIENT_KEY", l.ClientKey},
		{"RELCAP_LAB_REGISTRY", l.registryHost()},
		// The failed-readiness drill's build (UnreadyTag), in every
		// environment's repository.
		{UnreadyDigestEnv, l.UnreadyDigest},
		// Registry credentials, for relcap and push-random alike
		// (go-containerregistry's default keychain reads it).
		{"DOCKER_CONFIG", l.DockerConfig},
		{"RELCAP_LAB_ENVREPO", l.EnvRepo},
		{"RELCAP_LAB_GIT_URL", l.gitURL()},
		{"RELCAP_LAB_APISERVER", l.apiServerURL()},
		{"RELCAP_LAB_BIN", l.BinDir},
		{"TF_CLI_CONFIG_FILE", filepath.Join(l.Dir, "terraform.rc")},
	}...)
	if g := l.Gitea; g != nil {
		captain, _ := g.User(GiteaCaptain)
		approver, _ := g.User(GiteaApprover)
		vars = append(vars, [][2]string{
			{"RELCAP_LAB_GITEA_URL", g.URL},
			{"RELCAP_LAB_GITEA_REPO", g.RepoURL},
			{"RELCAP_LAB_GITEA_CLONE_URL", g.CloneURL},
			{GiteaTokenEnv, captain.Token},
			{GiteaApproverTokenEnv, approver.Token},
			// git push finds the captain's token through git's
			// credential helper, scoped to the lab's Gitea, without
			// replacing the user's own git configuration.
			{"GIT_CONFIG_COUNT", "1"},
			{"GIT_CONFIG_KEY_0", "credential." + g.URL + ".helper"},
			{"GIT_CONFIG_VALUE_0", "store --file=" + l.giteaCredentials()},
		}...)
	}
	return vars
}

// Kubernetes objects, as JSON that kubectl apply takes.

type obj = map[string]any

func mustJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // maps of strings always encode
	}
	return string(b) + "\n"
}

// RenderDeployment is env's workload: one Deployment running image, as
// the YAML file the environment repository holds.
func RenderDeployment(env, image string) string {
	labels := obj{"app": AppName}
	return mustYAML(obj{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": obj{"name": AppName, "namespace": Namespace(env), "labels": labels},
		"spec": obj{
			"replicas": 2,
			"selector": obj{"matchLabels": labels},
			"template": obj{
				"metadata": obj{"labels": labels},
				"spec": obj{
					"containers": []obj{{"name": AppName, "image": image}},
					// Only kwok's fake node carries this label.
					"nodeSelector": obj{"type": "kwok"},
				},
			},
		},
	})
}

func mustYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		panic(err) // maps of strings always encode
	}
	return string(b)
}

// RenderNode is the fake node kwok manages.
func RenderNode() string {
	return mustJSON(obj{
		"apiVersion": "v1", "kind": "Node",
		"metadata": obj{
			"name":        NodeName,
			"annotations": obj{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			"labels":      obj{"type": "kwok", "kubernetes.io/hostname": NodeName, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
		},
		"spec": obj{},
	})
}

// RenderServerTLSSecret is argocd-server-tls, the Secret argocd-server
// (2.14 and 3.x alike) takes its serving certificate from before falling
// back to a self-signed one.
func RenderServerTLSSecret(certPEM, keyPEM []byte) string {
	return mustJSON(obj{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   obj{"name": "argocd-server-tls", "namespace": ArgoNamespace},
		"type":       "kubernetes.io/tls",
		"stringData": obj{"tls.crt": string(certPEM), "tls.key": string(keyPEM)},
	})
}

// RenderClusterSecret registers the lab's apiserver with Argo CD. The
// in-cluster destination does not work out of cluster (LAB.md).
func RenderClusterSecret(server, token string) string {
	cfg := mustJSON(obj{"bearerToken": token, "tlsClientConfig": obj{"insecure": true}})
	return mustJSON(obj{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": obj{
			"name": "cluster-" + ClusterName, "namespace": ArgoNamespace,
			"labels": obj{"argocd.argoproj.io/secret-type": "cluster"},
		},
		"type":       "Opaque",
		"stringData": obj{"name": ClusterName, "server": server, "config": cfg},
	})
}

// RenderApplication is an automated, self-healing Argo CD Application
// following path of repoURL into namespace on the lab cluster.
func RenderApplication(name, repoURL, path, server, namespace string) string {
	return mustJSON(obj{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": obj{"name": name, "namespace": ArgoNamespace},
		"spec": obj{
			"project":     "default",
			"source":      obj{"repoURL": repoURL, "path": path, "targetRevision": "main"},
			"destination": obj{"server": server, "namespace": namespace},
			"syncPolicy": obj{
				"automated":   obj{"prune": true, "selfHeal": true},
				"syncOptions": []string{"CreateNamespace=true"},
			},
		},
	})
}
