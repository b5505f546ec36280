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
	"syscall"
	"time"
)

// Versions are the versions of everything the lab builds. They key the
// binary cache, so changing one builds a fresh set next to the old.
type Versions struct {
	Kubernetes string `json:"kubernetes"`
	ArgoCD     string `json:"argocd"`
	Kwok       string `json:"kwok"`
}

// Key names the cache directory for these versions.
func (v Versions) Key() string {
	return fmt.Sprintf("k8s-%s-argocd-%s-kwok-%s", v.Kubernetes, v.ArgoCD, v.Kwok)
}

// Variant is one Argo CD minor the lab runs, with the Kubernetes it runs
// on and where both are built (issue 14: Argo CD 3.6 beside 2.14).
type Variant struct {
	// Minor is how it is chosen: relcap-lab up --argocd 3.6.
	Minor    string
	Versions Versions
	// K8sModule and ArgoModule are the throw-away build modules under
	// lab/ that pin these versions.
	K8sModule, ArgoModule string
	// ArgoPath is argo-cd's Go module path: its cmd package is the
	// multi-call binary, its manifests/ hold the CRDs and base config.
	ArgoPath string
	// Toolchain is GOTOOLCHAIN for building (and downloading) Argo CD,
	// whose go.mod may want a newer Go than the local one; "" keeps the
	// local go. The toolchain module comes through the module proxy.
	Toolchain string
	// APIServerArgs are kube-apiserver flags this Kubernetes needs in
	// the lab, after the common ones.
	APIServerArgs []string
}

// Variants are the Argo CD minors the lab knows, the default first.
//
// Argo CD 3.6 is tested with Kubernetes 1.34-1.37 (its docs'
// tested-kubernetes-versions.md) and links k8s.io v0.37.0, so its lab runs
// Kubernetes 1.37.0; 2.14 keeps the 1.31.0 LAB.md verified. kwok 0.8.0
// serves both.
var Variants = []Variant{
	{
		Minor: "2.14", Versions: Versions{Kubernetes: "1.31.0", ArgoCD: "2.14.21", Kwok: "0.8.0"},
		K8sModule: "k8s", ArgoModule: "argocd", ArgoPath: "github.com/argoproj/argo-cd/v2",
	},
	{
		Minor: "3.6", Versions: Versions{Kubernetes: "1.37.0", ArgoCD: "3.6.1", Kwok: "0.8.0"},
		K8sModule: "k8s-1.37", ArgoModule: "argocd3", ArgoPath: "github.com/argoproj/argo-cd/v3",
		Toolchain: "go1.27.3",
		// Since 1.34 kube-apiserver turns a watch from resourceVersion
		// 0 into a watch-list (streamed initial events), which needs
		// etcd progress notifications that Debian's etcd 3.4.23 lacks:
		// every such watch ends at once with "the required storage
		// feature RequestWatchProgress is disabled". kwok 0.8.0 watches
		// Pods and Nodes from resourceVersion 0, so it saw changes only
		// at its relists and Pods took ~16 s to become Ready. Without
		// WatchList the watches are plain again (client-go's own
		// watch-list requests fall back to a LIST, as they did).
		APIServerArgs: []string{"--feature-gates=WatchList=false"},
	},
}

// DefaultVariant is the lab's Argo CD when nothing chooses one.
var DefaultVariant = Variants[0]

// DefaultVersions are the versions LAB.md verified together.
var DefaultVersions = DefaultVariant.Versions

// ArgoCDEnv chooses the Argo CD minor when --argocd is not given.
const ArgoCDEnv = "RELCAP_LAB_ARGOCD"

// SelectVariant finds the variant named by s: a minor ("3.6"), its full
// version ("3.6.1", "v3.6.1"), or "" for the default.
func SelectVariant(s string) (Variant, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if s == "" {
		return DefaultVariant, nil
	}
	var known []string
	for _, v := range Variants {
		if s == v.Minor || s == v.Versions.ArgoCD {
			return v, nil
		}
		known = append(known, v.Minor)
	}
	return Variant{}, fmt.Errorf("argo cd %q: the lab runs %s (or their full versions)", s, strings.Join(known, ", "))
}

// Is3 reports whether this is Argo CD 3.x, whose components start a
// little differently (see argoComponents).
func (v Variant) Is3() bool { return strings.HasPrefix(v.Versions.ArgoCD, "3.") }

// toolchainEnv is the environment that builds and downloads Argo CD.
func (v Variant) toolchainEnv() []string {
	if v.Toolchain == "" {
		return nil
	}
	return []string{"GOTOOLCHAIN=" + v.Toolchain}
}

// Names of the files in a binary cache directory.
const (
	binAPIServer         = "kube-apiserver"
	binControllerManager = "kube-controller-manager"
	binScheduler         = "kube-scheduler"
	binKubectl           = "kubectl"
	binArgoCD            = "argocd"
	binKwok              = "kwok"
	// argo-cd/v2/cmd (and v3/cmd) is one multi-call binary that picks the component
	// from the name it was started as.
	binArgoServer     = "argocd-server"
	binArgoRepoServer = "argocd-repo-server"
	binArgoController = "argocd-application-controller"
	// gitVerifyWrapper is argo-cd's hack/git-verify-wrapper.sh, which
	// its image puts on PATH: repo-server 3.6 runs it for every manifest
	// generation, GPG disabled or not ("permission denied" without it).
	gitVerifyWrapper = "git-verify-wrapper.sh"
	// manifestsDir holds argo-cd's CRDs and base config; stagesDir kwok's
	// "fast" node and pod stages, copied out of the module cache so `up`
	// needs nothing but the cache directory.
	manifestsDir = "argocd-manifests"
	stagesDir    = "kwok-stages"
	// completeStamp is written last: a directory without it is rebuilt.
	completeStamp = ".complete"
)

// BinaryNames lists the executables every complete cache directory holds.
func BinaryNames() []string {
	return []string{binAPIServer, binControllerManager, binScheduler, binKubectl, binArgoCD,
		binArgoServer, binArgoRepoServer, binArgoController, binKwok}
}

// cacheFiles lists every file a complete cache directory of v holds.
func (v Variant) cacheFiles() []string {
	files := append(BinaryNames(), completeStamp, manifestsDir, stagesDir)
	if v.Is3() {
		files = append(files, gitVerifyWrapper)
	}
	return files
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
	// Src is the directory holding the throw-away build modules (the
	// repository's lab/: k8s/ and argocd/, k8s-1.37/ and argocd3/).
	Src      string
	CacheDir string
	Variant  Variant
	// Log receives one line per step, with its duration.
	Log io.Writer
}

// BinDir is where the binaries for b.Variant's versions live.
func (b Builder) BinDir() string { return filepath.Join(b.CacheDir, "bin", b.Variant.Versions.Key()) }

// Complete reports whether BinDir holds a finished build.
func (b Builder) Complete() bool {
	dir := b.BinDir()
	for _, n := range b.Variant.cacheFiles() {
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
	v := b.Variant
	k8sSrc, argoSrc := filepath.Join(b.Src, v.K8sModule), filepath.Join(b.Src, v.ArgoModule)
	for _, d := range []string{k8sSrc, argoSrc} {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err != nil {
			return "", fmt.Errorf("lab build module %s: %w (pass --src to the repository's lab/ directory)", d, err)
		}
	}
	steps := []struct {
		what string
		run  func() error
	}{
		{"kubernetes " + v.Versions.Kubernetes + " (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)", func() error {
			return goCmd(ctx, k8sSrc, nil, "build", "-ldflags="+labLDFlags+" "+k8sVersionLDFlags(v.Versions.Kubernetes), "-o", dir+string(filepath.Separator),
				"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager",
				"k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kubectl")
		}},
		{"argo cd " + v.Versions.ArgoCD + toolchainNote(v), func() error {
			// The version argo-cd's Makefile links in; without it the
			// server says v99.99.99+unknown.
			ldflags := labLDFlags + " -X " + v.ArgoPath + "/common.version=" + v.Versions.ArgoCD
			if err := goCmd(ctx, argoSrc, v.toolchainEnv(), "build", "-ldflags="+ldflags, "-o", filepath.Join(dir, binArgoCD), v.ArgoPath+"/cmd"); err != nil {
				return err
			}
			for _, n := range []string{binArgoServer, binArgoRepoServer, binArgoController} {
				_ = os.Remove(filepath.Join(dir, n))
				if err := os.Symlink(binArgoCD, filepath.Join(dir, n)); err != nil {
					return fmt.Errorf("link %s: %w", n, err)
				}
			}
			src, err := moduleDir(ctx, v.toolchainEnv(), v.ArgoPath, "v"+v.Versions.ArgoCD)
			if err != nil {
				return err
			}
			if v.Is3() {
				wrapper, err := os.ReadFile(filepath.Join(src, "hack", gitVerifyWrapper))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, gitVerifyWrapper), wrapper, 0o755); err != nil {
					return err
				}
			}
			return copyYAML(filepath.Join(dir, manifestsDir), map[string]string{
				"crds":   filepath.Join(src, "manifests", "crds"),
				"config": filepath.Join(src, "manifests", "base", "config"),
			})
		}},
		{"kwok " + v.Versions.Kwok, func() error {
			if err := goCmd(ctx, os.TempDir(), []string{"GOBIN=" + dir}, "install", "sigs.k8s.io/kwok/cmd/kwok@v"+v.Versions.Kwok); err != nil {
				return err
			}
			src, err := moduleDir(ctx, nil, "sigs.k8s.io/kwok", "v"+v.Versions.Kwok)
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
	if err := os.WriteFile(filepath.Join(dir, completeStamp), []byte(v.Versions.Key()+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("mark binary cache complete: %w", err)
	}
	fmt.Fprintf(b.Log, "binaries: built into %s in %s\n", dir, since(start))
	return dir, nil
}

// k8sVersionLDFlags links the version into Kubernetes binaries as its
// release build does (hack/lib/version.sh): without it the apiserver says
// v0.0.0-master, which Argo CD shows as the cluster's version.
// labLDFlags leave the symbol table and DWARF out of the lab's binaries,
// as Kubernetes' and Argo CD's release builds do: nobody debugs them here,
// and the links of a cold build write and read less.
const labLDFlags = "-s -w"

func k8sVersionLDFlags(version string) string {
	major, minor, _ := strings.Cut(version, ".")
	minor, _, _ = strings.Cut(minor, ".")
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags, "-X "+pkg+".gitVersion=v"+version, "-X "+pkg+".gitMajor="+major, "-X "+pkg+".gitMinor="+minor, "-X "+pkg+".gitTreeState=clean")
	}
	return strings.Join(flags, " ")
}

func toolchainNote(v Variant) string {
	if v.Toolchain == "" {
		return ""
	}
	return " (GOTOOLCHAIN=" + v.Toolchain + ")"
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
// it is there) and returns its directory. env is added to go's
// environment (GOTOOLCHAIN for a module that wants a newer Go).
func moduleDir(ctx context.Context, env []string, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS="), env...)
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

// takeTurns waits for the lock file at path, which labs built side by side
// share (one build installs or builds, the other finds it done), and
// returns its release.
func takeTurns(path string) (unlock func(), err error) {
	lock, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
		lock.Close()
	}, nil
}

// ensureDebian installs the Debian packages whose commands are missing,
// with apt-get (updating its lists first).
//
// Labs are built side by side (lab/e2e-matrix.sh), and two apt-get runs at
// once fail on apt's lock: the builds take turns on a lock file, and each
// looks again for what is missing once it has it.
func ensureDebian(ctx context.Context, log io.Writer) error {
	missingDebian := func() []string {
		var missing []string
		for _, cmd := range []string{"etcd", "redis-server", "git"} {
			if _, err := exec.LookPath(cmd); err != nil {
				missing = append(missing, debianPackages[cmd])
			}
		}
		return missing
	}
	if len(missingDebian()) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		missing := missingDebian()
		return fmt.Errorf("missing %s: install with sudo apt-get install -y %s", strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	unlock, err := takeTurns(filepath.Join(os.TempDir(), "relcap-lab-apt.lock"))
	if err != nil {
		return fmt.Errorf("apt-get: %w", err)
	}
	defer unlock()
	missing := missingDebian()
	if len(missing) == 0 {
		return nil // another build installed them meanwhile
	}
	fmt.Fprintf(log, "apt-get: installing %s\n", strings.Join(missing, " "))
	// DPkg::Lock::Timeout: wait for an apt run of the system's own rather
	// than fail at once.
	for _, args := range [][]string{{"-o", "DPkg::Lock::Timeout=600", "update", "-qq"},
		append([]string{"-o", "DPkg::Lock::Timeout=600", "install", "-y", "-qq", "--no-install-recommends"}, missing...)} {
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
