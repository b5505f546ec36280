package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The environment repository's files. The comments are part of the demo:
// relcap's pin keeps them, which the captain sees in the diff.
const (
	envReadme = `# Environment repository (relcap sandbox)

Argo CD (here: the relcap sandbox's Argo CD API simulator) deploys what the
main branch of this repository pins. relcap changes one thing in it: the
image pin of an environment's kustomization, on a relcap/<env>/<release>
branch that lands on main once the environment's approvals are in.
`
	baseKustomization = `# The web application, the same in every environment.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deployment.yaml
`
	deployment = `# The web Deployment. Its image is set per environment by the images:
# entry of apps/web/<env>/kustomization.yaml, which relcap pins by digest.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: web
  labels:
    app.kubernetes.io/name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: web
  template:
    metadata:
      labels:
        app.kubernetes.io/name: web
    spec:
      containers:
        - name: web
          image: web # replaced by the environment's images: entry
          ports:
            - containerPort: 8080
          readinessProbe:
            httpGet: {path: /healthz, port: 8080}
`
	envKustomization = `# web in {{env}} (relcap sandbox). Argo CD deploys what main pins here;
# relcap edits only the images: entry below, and keeps these comments.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: web
resources:
  - ../base # the Deployment
images:
  - name: web
    newName: {{repository}} # the {{env}} repository relcap promotes into
    newTag: "1.4.1" # the running release; relcap replaces it with a digest pin
`
)

// envFiles are the files of the environment repository's first commit.
func (s *Sandbox) envFiles() map[string]string {
	files := map[string]string{
		"README.md":                        envReadme,
		"apps/web/base/kustomization.yaml": baseKustomization,
		"apps/web/base/deployment.yaml":    deployment,
	}
	for _, env := range Environments {
		files[kustomizationPath(env)] = strings.NewReplacer("{{env}}", env, "{{repository}}", s.repository(env)).Replace(envKustomization)
	}
	return files
}

// kustomizationPath is the file that pins env's image.
func kustomizationPath(env string) string { return "apps/web/" + env + "/kustomization.yaml" }

// repository is the registry repository env pulls from.
func (s *Sandbox) repository(env string) string { return s.Registry + "/" + env + "/" + App }

// writeEnvRepo creates the bare environment repository with one commit on
// main. go-git writes the commit in a scratch working tree that is then
// cloned bare, so the sandbox needs no git binary.
func (s *Sandbox) writeEnvRepo() error {
	seed, err := os.MkdirTemp("", "relcap-sandbox-env-")
	if err != nil {
		return fmt.Errorf("sandbox env repo: %w", err)
	}
	defer os.RemoveAll(seed)
	r, err := git.PlainInitWithOptions(seed, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		return fmt.Errorf("sandbox env repo: init: %w", err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return fmt.Errorf("sandbox env repo: %w", err)
	}
	for p, content := range s.envFiles() {
		full := filepath.Join(seed, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("sandbox env repo: %w", err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return fmt.Errorf("sandbox env repo: %w", err)
		}
		if _, err := wt.Add(p); err != nil {
			return fmt.Errorf("sandbox env repo: add %s: %w", p, err)
		}
	}
	sig := &object.Signature{Name: "relcap sandbox", Email: "sandbox@relcap.invalid", When: time.Now()}
	if _, err := wt.Commit("web 1.4.1 in staging and prod (relcap sandbox)", &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		return fmt.Errorf("sandbox env repo: commit: %w", err)
	}
	bare, err := git.PlainClone(s.EnvRepo, true, &git.CloneOptions{URL: seed})
	if err != nil {
		return fmt.Errorf("sandbox env repo: clone bare: %w", err)
	}
	// The bare repository is the origin relcap and the simulator use; a
	// remote pointing at the deleted scratch tree would only confuse.
	if err := bare.DeleteRemote("origin"); err != nil {
		return fmt.Errorf("sandbox env repo: %w", err)
	}
	return nil
}
