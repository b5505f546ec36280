package workflow

import (
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/image"
)

// PinRequest asks the environment repository to pin a digest.
type PinRequest struct {
	Env       string
	ReleaseID string
	Target    EnvRepoTarget
	Image     string // repository the environment pulls from
	Digest    image.Digest
	// Source says where the digest came from, for the commit message.
	Source string
	// Message overrides the commit message (rollback, break-glass).
	Message string
	// RestoreFrom, for a rollback, is the commit whose version of the file
	// is restored before the digest is pinned (it already holds it): the
	// environment as the release it returns to converged, not only its
	// digest, so a bad manifest change is undone with the bad digest.
	RestoreFrom string
	// Reviewed, for landing, is the commit of the release's branch that
	// the approvers reviewed and signed: a branch that moved since is not
	// landed.
	Reviewed string
}

// EnvChange is a change made in the environment repository.
type EnvChange struct {
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	Diff   string `json:"diff"`
	Pushed bool   `json:"pushed"`
	// Existing is true when the change was already there (a resumed release).
	Existing bool `json:"existing,omitempty"`
}

// ShortLen is how many characters of a commit, plan fingerprint or digest
// relcap shows wherever it abbreviates one.
const ShortLen = finding.ShortLen

// ShortHash abbreviates a commit SHA, a plan fingerprint or another hex
// identifier to ShortLen characters. The findings of workflow/ownership
// abbreviate with the same function, which lives in workflow/finding so
// that package need not import this one.
var ShortHash = finding.ShortHash
