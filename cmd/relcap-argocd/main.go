// Command relcap-argocd is relcap's Argo CD helper: relcap starts it for
// the commands that talk to Argo CD and calls it over a pipe, so that the
// relcap binary links none of argo-cd's client, kubectl or Kubernetes'
// API machinery (docs/ARCHITECTURE.md, "Process boundary"). It is not
// meant to be run by hand.
//
//	relcap-argocd serve      answer relcap's calls on stdin/stdout
//	relcap-argocd simulate   run relcap demo's Argo CD API simulator
//	relcap-argocd version    print the build
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/relcap/relcap/adapters/argocd/remote"
	"github.com/relcap/relcap/adapters/argocd/serve"
)

// Set by the linker in release builds, as relcap's are.
var (
	version = "dev"
	commit  = "none"
)

func main() {
	// A Ctrl-C at the terminal reaches relcap's whole process group, this
	// helper included; relcap decides what an interrupt ends (it may still
	// call Argo CD to clean up), and the helper ends with its stdin.
	signal.Ignore(os.Interrupt)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	build := remote.ResolveBuild(version, commit)
	cmd := ""
	if len(os.Args) == 2 {
		cmd = os.Args[1]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve.Serve(ctx, os.Stdin, os.Stdout, build, os.Getenv)
	case "simulate":
		err = serve.Simulate(ctx, os.Stdin, os.Stdout, os.Stderr)
	case "version":
		fmt.Println("relcap-argocd", build)
	default:
		fmt.Fprintln(os.Stderr, "relcap-argocd is relcap's Argo CD helper, started by relcap; usage: relcap-argocd serve|simulate|version")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "relcap-argocd:", err)
		os.Exit(1)
	}
}
