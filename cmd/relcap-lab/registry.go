package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// serveRegistry runs an in-memory OCI registry (go-containerregistry's
// pkg/registry, a real distribution API) on addr until ctx ends. `up` runs
// it as a process of its own (relcap-lab registry), so it lives as long as
// the lab, like every other component.
func serveRegistry(ctx context.Context, addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	srv := &http.Server{
		Handler:           registry.New(registry.Logger(log.New(os.Stderr, "registry ", log.LstdFlags))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(os.Stderr, "registry: serving on %s\n", l.Addr())
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

// pushRandomImage pushes one small random image under every reference and
// returns its digest: the lab's first release, already in every
// environment's repository so the seeded Applications run a pinned digest.
func pushRandomImage(ctx context.Context, refs ...string) (v1.Hash, error) {
	img, err := random.Image(1024, 1)
	if err != nil {
		return v1.Hash{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	for _, r := range refs {
		ref, err := name.ParseReference(r)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("image reference %s: %w", r, err)
		}
		if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
			return v1.Hash{}, fmt.Errorf("push %s: %w", r, err)
		}
	}
	return d, nil
}
