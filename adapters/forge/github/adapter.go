// Package github implements forge.Forge on GitHub and GitHub
// Enterprise Server with GitHub's own client, go-github: pull requests
// opened from relcap's branch, their reviews, and merges made only while
// the head is still the reviewed commit (the merge call carries it as
// sha, so GitHub itself refuses once the head moved). No go-github type
// leaves the package, and the token travels in the Authorization header
// only: it is never in a URL, an error or Where.
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	gh "github.com/google/go-github/v92/github"

	"github.com/relcap/relcap/adapters/forge/forgeurl"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/secret"
)

var _ forge.Forge = (*Adapter)(nil)

// ErrTokenRejected: GitHub answered 401 to the token (wrapped with the
// variable it came from and GitHub's message).
var ErrTokenRejected = errors.New("github refused the token")

// Options configure an Adapter.
type Options struct {
	// URL is the repository's web address (envrepo.review.url):
	// https://github.com/owner/repo, or https://host/owner/repo on GitHub
	// Enterprise Server, whose API is https://host/api/v3/. Required.
	URL string
	// Token is the API token; TokenEnv names the variable it came from
	// (envrepo.review.token_env), for messages. Token is required.
	Token    string
	TokenEnv string
	// CAFile is a PEM file of the authorities GitHub Enterprise's
	// certificate is checked against, beside the system's.
	CAFile string
	// Timeout bounds every API call; default forgeurl.DefaultTimeout.
	Timeout time.Duration
	// HTTPClient replaces the HTTP client (tests); CAFile is then unused.
	HTTPClient *http.Client
}

// Adapter is one repository on GitHub. It is safe for concurrent use.
type Adapter struct {
	c           *gh.Client
	owner, repo string
	web         string
	token       string
	tokenEnv    string
}

// New validates opts and returns an Adapter; it does not call GitHub.
// Invalid options wrap fault.ErrUsage and name the relcap.yaml key.
func New(opts Options) (*Adapter, error) {
	repo, err := forgeurl.Parse(opts.URL, 2)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(repo.Path, "/")
	if len(parts) != 2 {
		return nil, fmt.Errorf("%w: envrepo.review.url %s: a GitHub repository is owner/repo, not %s", fault.ErrUsage, repo.Web(), repo.Path)
	}
	tokenEnv := opts.TokenEnv
	if tokenEnv == "" {
		tokenEnv = "(envrepo.review.token_env)"
	} else {
		tokenEnv = "$" + tokenEnv
	}
	token := strings.TrimSpace(opts.Token)
	if token == "" {
		return nil, fmt.Errorf("%w: github %s: no token: %s is empty or unset; set envrepo.review.token_env to a variable holding a token that may open and merge pull requests", fault.ErrUsage, repo.Web(), tokenEnv)
	}
	hc, err := forgeurl.HTTPClient(opts.HTTPClient, opts.CAFile, opts.Timeout)
	if err != nil {
		return nil, err
	}
	clientOpts := []gh.ClientOptionsFunc{gh.WithHTTPClient(hc), gh.WithAuthToken(token), gh.WithUserAgent("relcap")}
	if opts.HTTPClient == nil {
		clientOpts = append(clientOpts, gh.WithEnvProxy())
	}
	if host := strings.ToLower(repo.Host); host != "github.com" && host != "www.github.com" {
		// GitHub Enterprise Server serves its REST API under /api/v3/
		// of the same host; go-github appends that path itself.
		clientOpts = append(clientOpts, gh.WithEnterpriseURLs(repo.Base+"/", repo.Base+"/"))
	}
	c, err := gh.NewClient(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("%w: github %s: %w", fault.ErrUsage, repo.Web(), err)
	}
	return &Adapter{c: c, owner: parts[0], repo: parts[1], web: repo.Web(), token: token, tokenEnv: tokenEnv}, nil
}

// Where names the repository: its web address.
func (a *Adapter) Where() string { return "github " + a.web }

// OpenPullRequest returns the open pull request of req.Head into
// req.Base, opening it when there is none. GitHub keeps one open pull
// request per head and base, and answers 422 to a second: that race
// (two relcaps resuming at once) reads the one the other opened.
func (a *Adapter) OpenPullRequest(ctx context.Context, req forge.OpenPullRequestRequest) (forge.PullRequest, error) {
	if pr, ok, err := a.findOpen(ctx, req.Head, req.Base); err != nil || ok {
		return pr, err
	}
	created, _, err := a.c.PullRequests.Create(ctx, a.owner, a.repo, gh.CreatePullRequest{
		Title: new(req.Title), Head: req.Head, Base: req.Base, Body: new(req.Body),
	})
	if err != nil {
		if status(err) == http.StatusUnprocessableEntity {
			if pr, ok, ferr := a.findOpen(ctx, req.Head, req.Base); ferr == nil && ok {
				return pr, nil
			}
		}
		return forge.PullRequest{}, a.fail(fmt.Sprintf("opening the pull request of %s into %s", req.Head, req.Base), err)
	}
	// A new pull request's mergeability is computed in the background;
	// the create answer carries it as null, which translates as not
	// mergeable yet.
	return translate(created), nil
}

// findOpen reads the open pull request of head into base, if any. The
// list answer leaves out merged and mergeable, so the one found is read
// again whole.
func (a *Adapter) findOpen(ctx context.Context, head, base string) (forge.PullRequest, bool, error) {
	prs, _, err := a.c.PullRequests.List(ctx, a.owner, a.repo, &gh.PullRequestListOptions{
		State: "open", Head: a.owner + ":" + head, Base: base,
	})
	if err != nil {
		return forge.PullRequest{}, false, a.fail(fmt.Sprintf("listing the open pull requests of %s into %s", head, base), err)
	}
	for _, p := range prs {
		if p.GetHead().GetRef() == head && p.GetBase().GetRef() == base {
			pr, err := a.PullRequest(ctx, p.GetNumber())
			return pr, err == nil, err
		}
	}
	return forge.PullRequest{}, false, nil
}

// PullRequest reads pull request number as it is now.
func (a *Adapter) PullRequest(ctx context.Context, number int) (forge.PullRequest, error) {
	p, _, err := a.c.PullRequests.Get(ctx, a.owner, a.repo, number)
	if err != nil {
		return forge.PullRequest{}, a.fail(fmt.Sprintf("reading pull request #%d", number), err)
	}
	return translate(p), nil
}

// Reviews lists the reviews of pull request number in GitHub's order,
// which is chronological (oldest first), following the Link header's
// pages.
func (a *Adapter) Reviews(ctx context.Context, number int) ([]forge.Review, error) {
	var out []forge.Review
	opts := &gh.ListOptions{PerPage: 100}
	for {
		page, resp, err := a.c.PullRequests.ListReviews(ctx, a.owner, a.repo, number, opts)
		if err != nil {
			return nil, a.fail(fmt.Sprintf("listing the reviews of pull request #%d", number), err)
		}
		for _, r := range page {
			out = append(out, forge.Review{
				ID: r.GetID(), Login: r.GetUser().GetLogin(), State: reviewState(r.GetState()),
				CommitSHA: r.GetCommitID(), At: r.GetSubmittedAt().Time, Body: r.GetBody(),
			})
		}
		if resp == nil || resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// reviewState translates GitHub's review states; one GitHub adds later
// reads as a comment, which approves nothing.
func reviewState(s string) forge.ReviewState {
	switch s {
	case "APPROVED":
		return forge.ReviewApproved
	case "CHANGES_REQUESTED":
		return forge.ReviewChangesRequested
	case "DISMISSED":
		return forge.ReviewDismissed
	case "PENDING":
		return forge.ReviewPending
	default:
		return forge.ReviewCommented
	}
}

// Merge merges pull request number with a merge commit whose message is
// message (its first line the title), only while its head is headSHA:
// the call carries sha, so GitHub answers 409 when the head moved in
// between. It never asks to bypass branch protection: a 405 (not
// mergeable, reviews or checks missing) is ErrBlocked with GitHub's
// reason; so is a repository that allows only squash or rebase merges,
// since a merge commit keeps the reviewed commit itself in the
// environment branch's history. One already merged
// returns its merge commit.
func (a *Adapter) Merge(ctx context.Context, number int, headSHA, message string) (string, error) {
	sha, err := a.merge(ctx, number, headSHA, message)
	return sha, secret.NewSet(a.token).ScrubError(err)
}

func (a *Adapter) merge(ctx context.Context, number int, headSHA, message string) (string, error) {
	pr, err := a.PullRequest(ctx, number)
	if err != nil {
		return "", err
	}
	switch {
	case pr.State == forge.PullRequestMerged:
		return pr.MergeCommit, nil
	case pr.State == forge.PullRequestClosed:
		return "", fmt.Errorf("%s: %w: pull request #%d was closed without merge", a.Where(), fault.ErrBlocked, number)
	case headSHA == "":
		return "", fmt.Errorf("%s: %w: merging pull request #%d needs the reviewed commit", a.Where(), fault.ErrUsage, number)
	case pr.HeadSHA != headSHA:
		return "", headMoved(a.Where(), number, headSHA, pr.HeadSHA, "")
	}
	title, body, _ := strings.Cut(message, "\n")
	res, _, err := a.c.PullRequests.Merge(ctx, a.owner, a.repo, number, strings.TrimSpace(body), &gh.PullRequestOptions{
		CommitTitle: strings.TrimSpace(title), SHA: headSHA, MergeMethod: "merge",
	})
	if err != nil {
		var er *gh.ErrorResponse
		switch code := status(err); {
		case code == http.StatusConflict && errors.As(err, &er):
			now := pr.HeadSHA
			if again, rerr := a.PullRequest(ctx, number); rerr == nil {
				now = again.HeadSHA
			}
			return "", headMoved(a.Where(), number, headSHA, now, errorText(er))
		case code == http.StatusMethodNotAllowed && errors.As(err, &er):
			// A merge that landed between the read and this call (a
			// person on the web page) answers 405 too.
			if again, rerr := a.PullRequest(ctx, number); rerr == nil && again.State == forge.PullRequestMerged {
				return again.MergeCommit, nil
			}
			return "", fmt.Errorf("%s: %w: github refuses to merge pull request #%d: %s", a.Where(), fault.ErrBlocked, number, errorText(er))
		}
		return "", a.fail(fmt.Sprintf("merging pull request #%d", number), err)
	}
	if !res.GetMerged() || res.GetSHA() == "" {
		return "", fmt.Errorf("%s: pull request #%d: github answered without merging it: %s", a.Where(), number, res.GetMessage())
	}
	return res.GetSHA(), nil
}

// headMoved is the refusal to merge a head that is not the reviewed
// one; forge is GitHub's own message when it refused.
func headMoved(where string, number int, reviewed, now, forge string) error {
	if forge != "" {
		forge = " (github: " + forge + ")"
	}
	return fmt.Errorf("%s: %w: pull request #%d changed after review: its head is %s, the reviewed commit is %s%s; the review does not approve the new commit",
		where, fault.ErrBlocked, number, now, reviewed, forge)
}
