// Package sandbox builds the embedded demo environment of `relcap demo`: a
// complete, real release setting in one directory, with nothing to install
// but Terraform and nothing reached over the network but loopback.
//
//   - an OCI registry (go-containerregistry's pkg/registry, in process, on
//     127.0.0.1) holding a multi-platform image with a demo signature and a
//     demo attestation;
//   - a bare environment Git repository with a staging and a prod
//     kustomization, which relcap pins and lands on main;
//   - a Terraform root per environment made of Terraform's built-in
//     terraform_data resources, applied once so that the next plan holds
//     an update and a replacement to review;
//   - the Argo CD API simulator (adapters/argocd/argosim) serving one
//     application per environment that follows the environment repo, run
//     in relcap's Argo CD helper (relcap-argocd simulate), so the relcap
//     binary does not link it;
//   - relcap.yaml and ownership.yaml pointing at all of the above, with one
//     ownership mistake on purpose, which FixOwnership corrects.
//
// Everything it shows the user calls itself a sandbox or a simulator: the
// signature is not cryptographically verifiable and the simulator is not
// Argo CD, and they say so.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/relcap/relcap/adapters/argocd/remote"
)

// Names the sandbox's configuration uses; tests and the demo command refer
// to them rather than repeating strings.
const (
	App           = "web"
	ImageTag      = "1.4.2"
	Approver      = "demo-approver"
	TokenEnv      = "RELCAP_SANDBOX_ARGOCD_TOKEN"
	ConfigFile    = "relcap.yaml"
	OwnerFile     = "ownership.yaml"
	EnvRepoDir    = "env.git"
	LedgerFile    = "ledger.db"
	timeToHealthy = 1500 * time.Millisecond
)

// ErrDirNotEmpty is returned by New for a directory that already holds
// files.
var ErrDirNotEmpty = errors.New("directory is not empty")

// Environments are the sandbox's environments in promotion order.
var Environments = []string{"staging", "prod"}

// Options configure New.
type Options struct {
	// Dir is where the sandbox is written; it must be empty or not exist.
	// Empty means a new directory under the system's temporary directory.
	// The files stay after Close, so the run can be inspected.
	Dir string
	// Terraform is the terraform binary to apply the roots with; empty
	// means "terraform" from PATH. A binary given here is also written
	// into relcap.yaml, so relcap plans with the same one.
	Terraform string
	// Logf receives progress lines while the sandbox is built, and the
	// simulator's event lines; nil discards them.
	Logf func(format string, args ...any)
	// People are the principals the sandbox makes SSH keys for (the
	// captain; Approver is always added), so the demo's approvals are
	// signed with no set-up: their public keys go into the sandbox's people
	// file, the private halves into Dir/people/<name> (mode 0600).
	People []string
	// Helper says how to start relcap-argocd, which runs the simulator.
	Helper remote.Config
}

// Sandbox is a running demo environment. Its servers run until Close or
// until the context given to New ends.
type Sandbox struct {
	// Dir holds every file of the sandbox.
	Dir string
	// Config is Dir/relcap.yaml; OwnershipFile is Dir/ownership.yaml.
	Config        string
	OwnershipFile string
	// EnvRepo is the bare environment repository Argo CD (the simulator)
	// follows.
	EnvRepo string
	// Registry is the loopback registry's host:port.
	Registry string
	// Image is the tag reference of the release, Registry/ci/web:1.4.2;
	// Digest is the digest of its multi-platform index.
	Image  string
	Digest string
	// Platforms are the index's platforms, e.g. linux/amd64.
	Platforms []string
	// SignatureTag is the cosign-style tag of the demo signature.
	SignatureTag string
	// ArgoCD is the simulator's address (plaintext gRPC on loopback).
	ArgoCD string
	// Apps are the simulated Argo CD applications, by environment.
	Apps map[string]string
	// TokenEnv names the environment variable relcap.yaml tells relcap to
	// read the simulator's token from; Token is its value. The caller sets
	// it for relcap; the sandbox never touches the process environment.
	TokenEnv string
	Token    string
	// PeopleFile is the people file (allowed_signers) relcap.yaml names;
	// Keys are each person's private key file, by principal.
	PeopleFile string
	Keys       map[string]string

	sim      *remote.Simulator
	registry *registryServer
	logf     func(string, ...any)

	closeOnce sync.Once
}

// New builds a sandbox in opts.Dir and starts its registry and simulator.
// ctx bounds the setup (Terraform runs) and the servers' lifetime. On error
// everything started so far is stopped; files written stay for inspection.
func New(ctx context.Context, opts Options) (_ *Sandbox, err error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir, err := prepareDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	s := &Sandbox{
		Dir:           dir,
		Config:        filepath.Join(dir, ConfigFile),
		OwnershipFile: filepath.Join(dir, OwnerFile),
		EnvRepo:       filepath.Join(dir, EnvRepoDir),
		TokenEnv:      TokenEnv,
		Apps:          map[string]string{},
		logf:          logf,
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()

	// Terraform is the slow part (init and apply of two roots); it runs
	// while the registry and the repository are built.
	tfDone := make(chan error, 1)
	go func() { tfDone <- s.writeTerraform(ctx, opts.Terraform) }()

	if err := s.startRegistry(ctx); err != nil {
		<-tfDone
		return nil, err
	}
	if err := s.pushRelease(ctx); err != nil {
		<-tfDone
		return nil, err
	}
	logf("sandbox: registry %s holds %s (%s), signed with a demo signature", s.Registry, s.Image, strings.Join(s.Platforms, ", "))
	if err := s.writeEnvRepo(); err != nil {
		<-tfDone
		return nil, err
	}
	logf("sandbox: environment repository %s", s.EnvRepo)
	if err := s.startSimulator(ctx, opts.Helper, logf); err != nil {
		<-tfDone
		return nil, err
	}
	logf("sandbox: argo cd simulator on %s serving %s", s.ArgoCD, strings.Join(s.appNames(), ", "))
	if err := <-tfDone; err != nil {
		return nil, err
	}
	if err := s.writePeople(append([]string{Approver}, opts.People...)); err != nil {
		return nil, err
	}
	if err := s.writeConfig(opts.Terraform); err != nil {
		return nil, err
	}
	logf("sandbox: %s and %s written", s.Config, s.OwnershipFile)
	return s, nil
}

// prepareDir returns the absolute sandbox directory, created if needed. An
// existing directory must be empty: the sandbox writes a configuration, a
// Git repository and Terraform state there, and must not mix them with
// anything else.
func prepareDir(dir string) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "relcap-sandbox-")
		if err != nil {
			return "", fmt.Errorf("sandbox: create a temporary directory: %w", err)
		}
		return d, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox: directory %s: %w", dir, err)
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return "", fmt.Errorf("sandbox: create %s: %w", abs, err)
		}
	case err != nil:
		return "", fmt.Errorf("sandbox: directory %s: %w", abs, err)
	case len(entries) > 0:
		return "", fmt.Errorf("sandbox: %s: %w; give an empty or new directory", abs, ErrDirNotEmpty)
	}
	return abs, nil
}

func (s *Sandbox) appNames() []string {
	var names []string
	for _, env := range Environments {
		names = append(names, s.Apps[env])
	}
	return names
}

// Close stops the simulator and the registry. The files in Dir stay. It is
// idempotent.
func (s *Sandbox) Close() {
	s.closeOnce.Do(func() {
		if s.sim != nil {
			s.sim.Stop()
		}
		if s.registry != nil {
			s.registry.close()
		}
	})
}
