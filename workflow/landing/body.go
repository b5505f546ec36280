package landing

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/image"
)

// PullRequestTitle is the title of a promotion's pull request.
func PullRequestTitle(s PromotionSummary) string {
	if s.Kind == workflow.KindRollback {
		return fmt.Sprintf("relcap: roll back %s to release %s in %s (%s, release %s)", s.App, s.RollbackOf, s.Env, s.Digest.Short(), s.ReleaseID)
	}
	return fmt.Sprintf("relcap: promote %s %s to %s (release %s)", s.App, s.Digest.Short(), s.Env, s.ReleaseID)
}

// PromotionSummary is the release's evidence a pull request carries, so
// reviewers on the forge see what relcap vouches for.
type PromotionSummary struct {
	App, Env, ReleaseID string
	Kind                workflow.ReleaseKind
	RollbackOf          string
	Captain             string

	Digest     image.Digest
	Reference  string // the image reference as given
	Repository string // the environment's repository, where it was copied
	Platforms  evidence.Platforms
	Signed     bool
	// Carried are the referrers' kinds on the target (signature,
	// attestation, sbom…).
	Carried evidence.ReferrerKinds

	// Upstream is the previous environment's convergence of the digest;
	// nil for the first environment (UpstreamEnv empty) or when forced
	// past it (ForceUnverified).
	UpstreamEnv     string
	Upstream        *workflow.ConvergenceRecord
	ForceUnverified string

	// Plan is the release's applied plan (empty when it had none).
	Plan PlanEvidence
	// Ownership is the ownership check's result, nil when skipped.
	Ownership *evidence.OwnershipChecked

	Branch, Base, Commit string
	Diff                 string
}

// PlanEvidence is the applied plan a promotion carries.
type PlanEvidence struct {
	Fingerprint string
	Applied     workflow.Applied
}

// PullRequestBody is the Markdown description of a promotion's pull
// request: the digest and its provenance, the upstream convergence, the
// applied plan, the ownership result and the diff, ending with the
// relcap-release footer that ties the pull request to the ledger.
func PullRequestBody(s PromotionSummary) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	if s.Kind == workflow.KindRollback {
		w("relcap rolls **%s** in **%s** back to release `%s`, captained by %s.\n\n", s.App, s.Env, s.RollbackOf, s.Captain)
	} else {
		w("relcap promotes **%s** to **%s**, captained by %s.\n\n", s.App, s.Env, s.Captain)
	}
	w("### Digest\n\n")
	w("- digest: `%s`\n", s.Digest)
	if s.Reference != "" {
		w("- reference: `%s`\n", s.Reference)
	}
	w("- repository: `%s`\n", s.Repository)
	platforms := "none declared by the image"
	if len(s.Platforms) > 0 {
		platforms = strings.Join(s.Platforms, ", ")
	}
	w("- platforms: %s\n", platforms)
	carried := "none"
	if len(s.Carried) > 0 {
		carried = strings.Join(s.Carried, ", ")
	}
	signed := "unsigned"
	if s.Signed {
		signed = "signed"
	}
	w("- provenance: %s; carried: %s\n\n", signed, carried)

	w("### Upstream convergence\n\n")
	switch {
	case s.UpstreamEnv == "":
		w("%s is the first environment: nothing upstream.\n\n", s.Env)
	case s.Upstream != nil:
		w("Converged in %s in release `%s` at %s, revision `%s`.\n\n", s.UpstreamEnv, s.Upstream.ReleaseID, s.Upstream.At.UTC().Format(time.RFC3339), workflow.ShortHash(s.Upstream.Revision))
	case s.ForceUnverified != "":
		w("**Not converged in %s**: promoted with --force-unverified: %s\n\n", s.UpstreamEnv, s.ForceUnverified)
	default:
		w("No convergence in %s on record.\n\n", s.UpstreamEnv)
	}

	w("### Plan\n\n")
	switch {
	case s.Plan.Fingerprint == "":
		w("No Terraform plan in this release.\n\n")
	case s.Plan.Applied.NoChanges:
		w("Plan `%s` reviewed: no changes to apply.\n\n", s.Plan.Fingerprint)
	case s.Plan.Applied.Done:
		w("Plan `%s` applied (state serial %d).\n\n", s.Plan.Fingerprint, s.Plan.Applied.StateSerial)
	default:
		w("Plan `%s` reviewed, not applied.\n\n", s.Plan.Fingerprint)
	}

	w("### Ownership\n\n")
	if s.Ownership == nil {
		w("Not checked in this release.\n\n")
	} else {
		w("%d managed object(s) checked, %d finding(s).\n\n", s.Ownership.Objects, s.Ownership.Findings)
	}

	w("### Change\n\n")
	w("`%s` at `%s` into `%s`:\n\n", s.Branch, workflow.ShortHash(s.Commit), s.Base)
	fence := "```"
	for strings.Contains(s.Diff, fence) {
		fence += "`"
	}
	w("%sdiff\n%s\n%s\n\n", fence, strings.TrimRight(s.Diff, "\n"), fence)
	w("---\nrelcap-release: %s\n", s.ReleaseID)
	return b.String()
}

// promotionSummary gathers the release's evidence for its pull request.
func promotionSummary(ctx context.Context, l *workflow.Landing) (PromotionSummary, error) {
	r, env := l.Release(), l.Env()
	c := r.Checkpoints
	s := PromotionSummary{App: r.App, Env: r.Env, ReleaseID: r.ID, Kind: r.Kind, RollbackOf: r.RollbackOf, Captain: r.Captain,
		Digest: c.Digest, Reference: r.Image, Repository: env.Registry.Repository, ForceUnverified: c.ForceUnverified,
		Branch: c.EnvBranch, Base: env.EnvRepo.Branch, Commit: c.EnvPinned, Diff: c.EnvDiff,
		Plan: PlanEvidence{Fingerprint: c.Fingerprint, Applied: c.Applied}}
	ev := r.Step(workflow.StepPromotion).Evidence
	if d, _, ok := evidence.Of[evidence.DigestResolved](ev); ok {
		s.Platforms, s.Signed = d.Platforms, d.Signed
	}
	if d, _, ok := evidence.Of[evidence.DigestVerified](ev); ok {
		s.Signed, s.Carried = d.Signed, d.Carried
	}
	if d, _, ok := evidence.Of[evidence.OwnershipChecked](r.Step(workflow.StepOwnership).Evidence); ok {
		s.Ownership = &d
	}
	var err error
	s.UpstreamEnv, s.Upstream, err = l.Upstream(ctx)
	return s, err
}
