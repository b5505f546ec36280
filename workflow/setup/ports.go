// Package setup is relcap init: it finds what a release repository already
// holds (Terraform roots, the environment repository and the files that
// pin the image, the Argo CD applications), proposes a relcap.yaml and a
// first ownership.yaml from it, asks the captain to confirm or correct
// each answer (or takes every proposal with --yes), checks the result with
// the configuration loader, and writes both files without overwriting
// anything it was not allowed to. It records nothing in any ledger.
package setup

import "context"

// TerraformRoot is a directory holding a Terraform root module.
type TerraformRoot struct {
	// Dir is absolute.
	Dir string
	// Backend and Providers say whether its .tf files configure a backend
	// or providers, what makes a directory a root rather than a module.
	Backend, Providers bool
}

// TerraformFinder finds the Terraform root modules under a directory.
type TerraformFinder interface {
	TerraformRoots(ctx context.Context, dir string) ([]TerraformRoot, error)
}

// EnvFile is a file of an environment repository that pins an image.
type EnvFile struct {
	// Path is slash-separated, relative to the repository's root.
	Path string
	// Format is workflow.FormatKustomize, FormatHelmValues or
	// FormatManifest.
	Format string
	// Image is the name relcap pins (envrepo.image): a kustomize images
	// entry's name, or the last element of a container image's repository.
	Image string
	// Repository is the image repository the file names today, when it
	// names one (kustomize newName, a container image, Helm's
	// image.repository), without tag or digest.
	Repository string
	// ValuesPath is the YAML path of the image reference (helm-values).
	ValuesPath string
}

// EnvRepo is an environment repository: a Git repository (bare or
// checked out), or a directory of the release repository, holding files
// that pin images.
type EnvRepo struct {
	// Dir is absolute.
	Dir string
	// Branch is the branch checked out (or the bare repository's HEAD);
	// empty when it is not a Git repository.
	Branch string
	Files  []EnvFile
	// Apps are the Argo CD Application manifests the repository holds.
	Apps []ArgoApp
}

// EnvRepoFinder finds environment repositories beside, in or under a
// release repository.
type EnvRepoFinder interface {
	EnvRepos(ctx context.Context, near string) ([]EnvRepo, error)
}

// ArgoApp is an Argo CD application.
type ArgoApp struct {
	Name string
	// Path is the directory of its source in the repository it follows.
	Path string
	// RepoURL is the repository it follows.
	RepoURL string
}

// AppLister lists the applications of an Argo CD server.
type AppLister interface {
	Applications(ctx context.Context) ([]ArgoApp, error)
	// Server is the host:port listed.
	Server() string
}

// Question is one thing relcap init asks.
type Question struct {
	// Key is the relcap.yaml key the answer goes to, for help.
	Key    string
	Prompt string
	// Default is the proposal, taken by an empty answer (and by --yes).
	Default string
	// Choices, when set, are the answers offered; others are accepted too.
	Choices []string
	// Check says what is wrong with an answer, or returns nil.
	Check func(string) error
}

// Asker asks the captain. Ask returns the answer (the default for an empty
// one); Confirm a yes or no.
type Asker interface {
	Ask(ctx context.Context, q Question) (string, error)
	Confirm(ctx context.Context, prompt string, def bool) (bool, error)
}
