package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v92/github"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/secret"
)

// translate turns go-github's pull request into relcap's.
func translate(p *gh.PullRequest) forge.PullRequest {
	pr := forge.PullRequest{
		Number: p.GetNumber(), URL: p.GetHTMLURL(), Title: p.GetTitle(), Author: p.GetUser().GetLogin(),
		Head: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(), Base: p.GetBase().GetRef(),
	}
	// GitHub's state is open or closed; merged is a closed pull request
	// with merged set (only the single-pull-request answer has merged,
	// so merged_at, which every answer has, counts too).
	switch {
	case p.GetMerged() || p.MergedAt != nil:
		pr.State = forge.PullRequestMerged
		// merge_commit_sha of an open pull request is GitHub's test
		// merge, not a commit of the base branch: only a merged one's
		// is taken.
		pr.MergeCommit = p.GetMergeCommitSHA()
		pr.MergedBy = p.GetMergedBy().GetLogin()
		pr.MergedAt = p.GetMergedAt().Time
	case p.GetState() == "open":
		pr.State = forge.PullRequestOpen
		pr.Mergeable, pr.Blocker = mergeability(p)
	default:
		pr.State = forge.PullRequestClosed
	}
	return pr
}

// mergeability reads GitHub's verdict: mergeable (null while GitHub
// computes it) and mergeable_state, which says what branch protection
// thinks of it for the token's user. "unstable" (failing checks that are
// not required) and "has_hooks" still merge; the rest do not.
func mergeability(p *gh.PullRequest) (bool, string) {
	if p.GetDraft() {
		return false, "the pull request is a draft"
	}
	if p.Mergeable == nil {
		return false, "github is still computing whether it can be merged"
	}
	state := p.GetMergeableState()
	switch state {
	case "clean", "unstable", "has_hooks":
		if p.GetMergeable() {
			return true, ""
		}
		return false, "github says it cannot be merged (mergeable_state " + state + ")"
	case "blocked":
		return false, "branch protection blocks the merge: required reviews or status checks are missing (mergeable_state blocked)"
	case "behind":
		return false, "the head branch is behind the base branch, and branch protection requires it up to date (mergeable_state behind)"
	case "dirty":
		return false, "the head branch conflicts with the base branch (mergeable_state dirty)"
	case "draft":
		return false, "the pull request is a draft (mergeable_state draft)"
	case "unknown", "":
		return false, "github is still computing whether it can be merged"
	default:
		return false, "github does not say it can be merged (mergeable_state " + state + ")"
	}
}

// status is the HTTP status of a GitHub error answer, 0 for another
// error.
func status(err error) int {
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// errorText is GitHub's message with the details of its errors list,
// without the request line go-github puts first.
func errorText(er *gh.ErrorResponse) string {
	parts := []string{}
	if er.Message != "" {
		parts = append(parts, er.Message)
	}
	for _, e := range er.Errors {
		if e.Message != "" {
			parts = append(parts, e.Message)
		} else if e.Code != "" {
			parts = append(parts, strings.TrimSpace(e.Resource+" "+e.Field+" "+e.Code))
		}
	}
	if len(parts) == 0 {
		return http.StatusText(status(er))
	}
	return strings.Join(parts, ": ")
}

// fail turns a go-github error into one that names the repository and
// what relcap was doing, maps what the domain reacts to onto its
// sentinels, and holds no token.
func (a *Adapter) fail(doing string, err error) error {
	var (
		er  *gh.ErrorResponse
		rl  *gh.RateLimitError
		arl *gh.AbuseRateLimitError
	)
	var out error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		out = fmt.Errorf("%s: %s: %w", a.Where(), doing, err)
	case errors.As(err, &rl):
		out = fmt.Errorf("%s: %s: github's rate limit for the token in %s is spent until %s", a.Where(), doing, a.tokenEnv, rl.Rate.Reset.UTC().Format("15:04:05 MST"))
	case errors.As(err, &arl):
		out = fmt.Errorf("%s: %s: github's secondary rate limit: %s", a.Where(), doing, arl.Message)
	case errors.As(err, &er):
		switch code := status(err); code {
		case http.StatusUnauthorized:
			out = fmt.Errorf("%s: %s: %w: github answered 401 (%s) to the token in %s: set envrepo.review.token_env's variable to a valid token", a.Where(), doing, ErrTokenRejected, errorText(er), a.tokenEnv)
		case http.StatusForbidden:
			out = fmt.Errorf("%s: %s: github answered 403 (%s): the token in %s may not do this; it needs the pull requests and contents permissions on the repository", a.Where(), doing, errorText(er), a.tokenEnv)
		case http.StatusNotFound:
			out = fmt.Errorf("%s: %s: %w: github answered 404 (%s); a private repository reads as missing when the token in %s cannot see it", a.Where(), doing, fault.ErrNotFound, errorText(er), a.tokenEnv)
		default:
			out = fmt.Errorf("%s: %s: github answered %d: %s", a.Where(), doing, code, errorText(er))
		}
	default:
		out = fmt.Errorf("%s: %s: %w", a.Where(), doing, err)
	}
	return secret.NewSet(a.token).ScrubError(out)
}
