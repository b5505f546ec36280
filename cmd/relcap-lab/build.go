package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Versions are the versions of everything the lab builds. They key the
// binary cache, so changing one builds a fresh set next to the old.
type Versions struct {
	Kubernetes string `json:"kubernetes"`
	ArgoCD     string `json:"argocd"`
	Kwok       string `json:"kwok"`
}

// DefaultVersions are the versions LAB.md verified together.
var DefaultVersions = Versions{Kubernetes: "1.31.0", ArgoCD: "2.14.21", Kwok: "0.8.0"}

// Key names the cache directory for these versions.
func (v Versions) Key() string {
	return fmt.Sprintf("k8s-%s-argocd-%s-kwok-%s", v.Kubernetes, v.ArgoCD, v.Kwok)
}

// Names of the files in a binary cache directory.
const (
	binAPIServer         = "kube-apiserver"
	binControllerManager = "kube-controller-manager"
	binScheduler         = "kube-scheduler"
	binKubectl           = "kubectl"
	binArgoCD            = "argocd"
	binKwok              = "kwok"
	// argo-cd/v2/cmd is one multi-call binary that picks the component
	// from the name it was started as.
	binArgoServer     = "argocd-server"
	binArgoRepoServer = "argocd-repo-server"
	binArgoController = "argocd-application-controller"
	// manifestsDir holds argo-cd's CRDs and base config; stagesDir kwok's
	// "fast" node and pod stages, copied out of the module cache so `up`
	// needs nothing but the cache directory.
	manifestsDir = "argocd-manifests"
	stagesDir    = "kwok-stages"
	// completeStamp is written last: a directory without it is rebuilt.
	completeStamp = ".complete"
)

// BinaryNames lists every file a complete cache directory holds.
func BinaryNames() []string {
	return []string{binAPIServer, binControllerManager, binScheduler, binKubectl, binArgoCD,
		binArgoServer, binArgoRepoServer, binArgoController, binKwok}
}

// DefaultCacheDir is $XDG_CACHE_HOME/relcap/lab (os.UserCacheDir falls back
// to ~/.cache).
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: set XDG_CACHE_HOME or pass --cache: %w", err)
	}
	return filepath.Join(base, "relcap", "lab"), nil
}

// Builder builds or reuses the lab binaries.
type Builder struct {
	// Src is the directory holding the throw-away build modules k8s/ and
	// argocd/ (the repository's lab/).
	Src      string
	CacheDir string
	Versions Versions
	// Log receives one line per step, with its duration.
	Log io.Writer
}

// BinDir is where the binaries for b.Versions live.
func (b Builder) BinDir() string { return filepath.Join(b.CacheDir, "bin", b.Versions.Key()) }

// Complete reports whether BinDir holds a finished build.
func (b Builder) Complete() bool {
	dir := b.BinDir()
	for _, n := range append(BinaryNames(), completeStamp, manifestsDir, stagesDir) {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

// Build makes sure the Debian packages are installed and every binary is in
// BinDir, building what is missing. It returns BinDir.
func (b Builder) Build(ctx context.Context) (string, error) {
	start := time.Now()
	if err := b.step("debian packages etcd-server, redis-server", func() error { return ensureDebian(ctx, b.Log) }); err != nil {
		return "", err
	}
	if err := b.step("terraform provider gavinbunney/kubectl "+KubectlProviderVersion+" (filesystem mirror)", func() error { return b.ensureKubectlProvider(ctx) }); err != nil {
		return "", err
	}
	dir := b.BinDir()
	if b.Complete() {
		fmt.Fprintf(b.Log, "binaries: reusing %s\n", dir)
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create binary cache: %w", err)
	}
	_ = os.Remove(filepath.Join(dir, completeStamp))
	k8sSrc, argoSrc := filepath.Join(b.Src, "k8s"), filepath.Join(b.Src, "argocd")
	for _, d := range []string{k8sSrc, argoSrc} {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err != nil {
			return "", fmt.Errorf("lab build module %s: %w (pass --src to the repository's lab/ directory)", d, err)
		}
	}
	steps := []struct {
		what string
		run  func() error
	}{
		{"kubernetes " + b.Versions.Kubernetes + " (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)", func() error {
			return goCmd(ctx, k8sSrc, nil, "build", "-o", dir+string(filepath.Separator),
				"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager",
				"k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kubectl")
		}},
		{"argo cd " + b.Versions.ArgoCD, func() error {
			if err := goCmd(ctx, argoSrc, nil, "build", "-o", filepath.Join(dir, binArgoCD), "github.com/argoproj/argo-cd/v2/cmd"); err != nil {
				return err
			}
			for _, n := range []string{binArgoServer, binArgoRepoServer, binArgoController} {
				_ = os.Remove(filepath.Join(dir, n))
				if err := os.Symlink(binArgoCD, filepath.Join(dir, n)); err != nil {
					return fmt.Errorf("link %s: %w", n, err)
				}
			}
			src, err := moduleDir(ctx, "github.com/argoproj/argo-cd/v2", "v"+b.Versions.ArgoCD)
			if err != nil {
				return err
			}
			return copyYAML(filepath.Join(dir, manifestsDir), map[string]string{
				"crds":   filepath.Join(src, "manifests", "crds"),
				"config": filepath.Join(src, "manifests", "base", "config"),
			})
		}},
		{"kwok " + b.Versions.Kwok, func() error {
			if err := goCmd(ctx, os.TempDir(), []string{"GOBIN=" + dir}, "install", "sigs.k8s.io/kwok/cmd/kwok@v"+b.Versions.Kwok); err != nil {
				return err
			}
			src, err := moduleDir(ctx, "sigs.k8s.io/kwok", "v"+b.Versions.Kwok)
			if err != nil {
				return err
			}
			return copyYAML(filepath.Join(dir, stagesDir), map[string]string{
				"node": filepath.Join(src, "kustomize", "stage", "node", "fast"),
				"pod":  filepath.Join(src, "kustomize", "stage", "pod", "fast"),
			})
		}},
	}
	for _, s := range steps {
		if err := b.step(s.what, s.run); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, completeStamp), []byte(b.Versions.Key()+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("mark binary cache complete: %w", err)
	}
	fmt.Fprintf(b.Log, "binaries: built into %s in %s\n", dir, since(start))
	return dir, nil
}

// step runs one build step and logs its duration.
func (b Builder) step(what string, run func() error) error {
	t := time.Now()
	fmt.Fprintf(b.Log, "build: %s ...\n", what)
	if err := run(); err != nil {
		return fmt.Errorf("build %s: %w", what, err)
	}
	fmt.Fprintf(b.Log, "build: %s done in %s\n", what, since(t))
	return nil
}

// goCmd runs the go command in dir. GOFLAGS gains -mod=mod inside the lab
// modules so a go.sum line the Go version wants differently is fixed rather
// than fatal; GOWORK=off keeps a go.work above the repository out of the
// build. The shared GOCACHE is what makes a rebuild take seconds.
func goCmd(ctx context.Context, dir string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if args[0] == "build" {
		cmd.Env = append(cmd.Env, "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
	}
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, tail(out.String(), 40))
	}
	return nil
}

// moduleDir downloads module@version into the module cache (a no-op when
// it is there) and returns its directory.
func moduleDir(ctx context.Context, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr == nil && info.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	if info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no directory in %q", module, version, out)
	}
	return info.Dir, nil
}

// copyYAML copies the *.yaml files of each source directory, except
// kustomization.yaml, into dst/<name>.
func copyYAML(dst string, srcs map[string]string) error {
	for name, src := range srcs {
		files, err := filepath.Glob(filepath.Join(src, "*.yaml"))
		if err != nil || len(files) == 0 {
			return fmt.Errorf("no YAML files in %s", src)
		}
		to := filepath.Join(dst, name)
		if err := os.MkdirAll(to, 0o755); err != nil {
			return err
		}
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// debianPackages maps each command the lab runs to the Debian package that
// provides it.
var debianPackages = map[string]string{"etcd": "etcd-server", "redis-server": "redis-server", "git": "git"}

// ensureDebian installs the Debian packages whose commands are missing,
// with apt-get (updating its lists first).
func ensureDebian(ctx context.Context, log io.Writer) error {
	var missing []string
	for _, cmd := range []string{"etcd", "redis-server", "git"} {
		if _, err := exec.LookPath(cmd); err != nil {
			missing = append(missing, debianPackages[cmd])
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("missing %s: install with sudo apt-get install -y %s", strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	fmt.Fprintf(log, "apt-get: installing %s\n", strings.Join(missing, " "))
	for _, args := range [][]string{{"update", "-qq"}, append([]string{"install", "-y", "-qq", "--no-install-recommends"}, missing...)} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, tail(string(out), 20))
		}
	}
	for _, cmd := range []string{"etcd", "redis-server", "git"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return errors.New("apt-get installed " + debianPackages[cmd] + " but " + cmd + " is not on PATH")
		}
	}
	return nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// since formats the time since t to a tenth of a second.
func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }
