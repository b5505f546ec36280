// Command relcap-lab runs a real Kubernetes control plane and Argo CD on
// loopback for relcap's end-to-end tests (issue 8): etcd and redis from
// Debian, kube-apiserver, kube-controller-manager, kube-scheduler and
// kubectl built from k8s.io/kubernetes, Argo CD built from its Go module,
// kwok for a fake node whose pods become Ready, git daemon for the
// environment repository and an in-process OCI registry.
//
// It drives those as processes: this program never links Kubernetes or
// Argo CD server code. The binaries are built in the throw-away modules
// under lab/ (kept out of the main module so `go test ./...` never
// compiles Kubernetes) and cached under a directory keyed by their
// versions.
//
//	relcap-lab build  [--cache D] [--src lab] [--argocd 2.14|3.6] [--gitea]
//	relcap-lab up     [--dir D] [--cache D] [--src lab] [--argocd 2.14|3.6] [--argocd-insecure] [--gitea] [--timeout 3m] [--wait-apps=true]
//	relcap-lab status [--dir D]
//	relcap-lab down   [--dir D]
//	relcap-lab push-random [--label K=V]... REF...   (push a random image, print its digest)
//	relcap-lab image-webhook --listen A --cert F --key F --registry HOST:PORT [--docker-config D]   (run by up)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errShown) {
			fmt.Fprintln(os.Stderr, "relcap-lab:", err)
		}
		os.Exit(exitCode(err))
	}
}

// errShown is an error the flag package has already printed.
var errShown = errors.New("bad flag")

// usageError is a command-line mistake (exit code 2).
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

const usage = `usage: relcap-lab <command> [flags]

commands:
  build   build (or reuse) the lab binaries in the cache (--gitea: Gitea only)
  up      start a lab: builds if needed, then etcd, redis, registry, image
          webhook, git daemon, kube-apiserver, controller-manager, scheduler,
          kwok and Argo CD
          (--argocd 2.14 or 3.6, default $RELCAP_LAB_ARGOCD or 2.14); --gitea adds
          a Gitea serving the environment repository with a protected main,
          which Argo CD then follows and relcap.yaml promotes to through
          reviewed pull requests
  status  show what a lab runs and its Argo CD applications
  down    stop exactly what up started and remove the lab directory
  stop NAME
          stop one component (SIGTERM, SIGKILL after --grace; 0s: a crash)
  start NAME
          start a stopped component again, as up started it
  push-random [--label K=V]... REF...
          push one random image under each reference and print its digest;
          --label puts K=V in its config (io.relcap-lab.readiness=never: the
          lab's node never makes its Pods ready; io.relcap-lab.start=slow:
          it makes them ready after 30s)

run "relcap-lab <command> -h" for its flags`

func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(errOut, usage)
		return usageError{errors.New("no command")}
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("relcap-lab "+cmd, flag.ContinueOnError)
	fs.SetOutput(errOut)
	dir := fs.String("dir", defaultDir(), "lab directory (state, logs, kubeconfig, relcap.yaml)")
	var b Builder
	b.Log = out
	argocd := DefaultVariant.Minor
	if e := os.Getenv(ArgoCDEnv); e != "" {
		argocd = e
	}
	if cmd == "build" || cmd == "up" {
		cache, _ := DefaultCacheDir()
		fs.StringVar(&b.CacheDir, "cache", cache, "binary cache; binaries go into <cache>/bin/<versions>")
		fs.StringVar(&b.Src, "src", defaultSrc(), "the repository's lab/ directory (the build modules)")
		fs.StringVar(&argocd, "argocd", argocd, "Argo CD minor to build and run: "+variantMinors()+" (default from $"+ArgoCDEnv+")")
	}
	withGitea := false
	if cmd == "build" {
		fs.BoolVar(&withGitea, "gitea", false, "build (or reuse) only the lab's Gitea "+GiteaVersion)
	}
	insecure := false
	if cmd == "up" {
		fs.BoolVar(&withGitea, "gitea", false, "also run Gitea "+GiteaVersion+" with the environment repository (built on first use)")
		fs.BoolVar(&insecure, "argocd-insecure", false, "serve Argo CD in plaintext (no TLS) as before, for a relcap without argocd.ca_file")
	}
	timeout := fs.Duration("timeout", 3*time.Minute, "how long each component may take to become ready")
	waitApps := fs.Bool("wait-apps", true, "wait for the seeded Applications to be Synced and Healthy")
	grace := fs.Duration("grace", 10*time.Second, "how long down waits after SIGTERM before SIGKILL")
	listen := fs.String("listen", "127.0.0.1:0", "registry: address to serve on")
	users := fs.String("users", "", "registry: file of user:password lines that basic auth accepts (empty: no auth)")
	var labels imageLabels
	var certFile, keyFile, registryHost, dockerDir string
	switch cmd {
	case "push-random":
		fs.Var(&labels, "label", "K=V label of the image's config (repeatable)")
	case "image-webhook":
		fs.StringVar(&certFile, "cert", "", "image-webhook: serving certificate (PEM)")
		fs.StringVar(&keyFile, "key", "", "image-webhook: its private key (PEM)")
		fs.StringVar(&registryHost, "registry", "", "image-webhook: host:port of the registry whose images it looks up")
		fs.StringVar(&dockerDir, "docker-config", "", "image-webhook: directory of the docker config.json with the registry's credentials")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		// flag has printed the error and the flags already.
		return usageError{errShown}
	}
	oneName := cmd == "stop" || cmd == "start"
	if oneName && fs.NArg() != 1 {
		return usageError{fmt.Errorf("%s wants one component name, got %q", cmd, fs.Args())}
	}
	if fs.NArg() > 0 && cmd != "push-random" && !oneName {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd, fs.Args())}
	}
	if cmd == "build" || cmd == "up" {
		v, err := SelectVariant(argocd)
		if err != nil {
			return usageError{err}
		}
		b.Variant = v
	}
	switch cmd {
	case "build":
		if b.CacheDir == "" {
			return usageError{errors.New("no cache directory: pass --cache")}
		}
		t := time.Now()
		var err error
		if withGitea {
			_, err = b.BuildGitea(ctx)
		} else {
			_, err = b.Build(ctx)
		}
		if err == nil {
			fmt.Fprintf(out, "build finished in %s\n", since(t))
		}
		return err
	case "up":
		if b.CacheDir == "" {
			return usageError{errors.New("no cache directory: pass --cache")}
		}
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find relcap-lab's own executable (it runs the registry): %w", err)
		}
		return Up(ctx, UpOptions{Dir: *dir, Builder: b, Self: self, Timeout: *timeout, WaitApps: *waitApps, ArgoInsecure: insecure, Gitea: withGitea, Out: out})
	case "down":
		return Down(*dir, *grace, out)
	case "status":
		return Status(ctx, *dir, out)
	case "stop":
		return StopComponent(*dir, fs.Arg(0), *grace, out)
	case "start":
		return StartComponent(ctx, *dir, fs.Arg(0), *timeout, out)
	case "registry":
		return serveRegistry(ctx, *listen, *users)
	case "image-webhook":
		kc, err := dockerConfigKeychain(dockerDir, registryHost)
		if err != nil {
			return usageError{err}
		}
		return serveImageWebhook(ctx, *listen, certFile, keyFile, registryHost, kc, errOut)
	case "push-random":
		// A test helper: pushes one random image under each reference
		// and prints its digest (a new "build" for e2e scenarios).
		if fs.NArg() == 0 {
			return usageError{errors.New("push-random wants image references")}
		}
		// Credentials as every other client finds them: $DOCKER_CONFIG,
		// which lab.env points at the lab's docker/config.json.
		d, err := pushRandomLabeled(ctx, authn.DefaultKeychain, labels.m, fs.Args()...)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, d)
		return nil
	case "help", "-h", "--help":
		fmt.Fprintln(out, usage)
		return nil
	}
	fmt.Fprintln(errOut, usage)
	return usageError{fmt.Errorf("unknown command %q", cmd)}
}

// imageLabels is push-random's repeatable --label K=V.
type imageLabels struct{ m map[string]string }

func (l *imageLabels) String() string {
	var kv []string
	for k, v := range l.m {
		kv = append(kv, k+"="+v)
	}
	return strings.Join(kv, ",")
}

func (l *imageLabels) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want K=V, e.g. --label %s=never", ReadinessLabel)
	}
	if l.m == nil {
		l.m = map[string]string{}
	}
	l.m[k] = v
	return nil
}

func variantMinors() string {
	var m []string
	for _, v := range Variants {
		m = append(m, v.Minor)
	}
	return strings.Join(m, " or ")
}

// defaultDir is $XDG_STATE_HOME/relcap/lab, or ~/.local/state/relcap/lab.
func defaultDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "relcap", "lab")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "relcap", "lab")
	}
	return filepath.Join(os.TempDir(), "relcap-lab")
}

// defaultSrc finds the repository's lab/ directory: from the working
// directory upwards, then from the executable's directory upwards (make
// builds it into bin/).
func defaultSrc() string {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, d := range starts {
		for {
			if _, err := os.Stat(filepath.Join(d, "lab", "k8s", "go.mod")); err == nil {
				return filepath.Join(d, "lab")
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return "lab"
}
