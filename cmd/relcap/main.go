// Command relcap is the release captain's cockpit for teams that ship
// infrastructure with Terraform and applications with Argo CD.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Set by the linker (see .goreleaser.yaml and the Makefile).
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, systemIO(), os.Args[1:])
	stop()
	os.Exit(code)
}
