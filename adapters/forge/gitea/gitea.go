// Package gitea is relcap's Forge on a Gitea server: pull requests of the
// environment repository, their reviews, and merges through Gitea's API
// that Gitea's branch protection decides on. It speaks through the Gitea
// SDK; no SDK type leaves the package.
package gitea

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/relcap/relcap/adapters/forge/forgeurl"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/secret"
)

// DefaultTimeout bounds one API request when Options.Timeout is zero.
const DefaultTimeout = forgeurl.DefaultTimeout

// Options configure the adapter.
type Options struct {
	// URL is the repository's web address, http(s)://host[:port][/path]/owner/repo
	// (a Gitea served under a sub-path keeps it before owner/repo).
	URL string
	// Token is the API token of the account relcap acts as.
	Token string
	// CAFile is a PEM file of the authorities Gitea's certificate is
	// checked against, besides the system's; empty: the system's only.
	CAFile string
	// Timeout bounds each HTTP request; zero is DefaultTimeout.
	Timeout time.Duration
}

// Repo is a repository URL taken apart.
type Repo struct {
	// Base is Gitea's root URL (scheme, host, port, sub-path), without
	// a trailing slash; the API is Base/api/v1.
	Base        string
	Owner, Name string
}

// Web is the repository's web page.
func (r Repo) Web() string { return r.Base + "/" + r.Owner + "/" + r.Name }

// ParseRepoURL takes a repository's web address apart, as the other
// forges do (forgeurl.Parse): a Gitea served under a sub-path keeps it in
// Base, before owner/repo. Errors wrap fault.ErrUsage and name
// envrepo.review.url.
func ParseRepoURL(raw string) (Repo, error) {
	r, err := forgeurl.Parse(raw, 2)
	if err != nil {
		return Repo{}, err
	}
	segs := strings.Split(r.Path, "/")
	n := len(segs)
	base := r.Base
	if n > 2 {
		base += "/" + strings.Join(segs[:n-2], "/")
	}
	return Repo{Base: base, Owner: segs[n-2], Name: segs[n-1]}, nil
}

// Adapter is one Gitea repository.
type Adapter struct {
	repo  Repo
	token string
	http  *http.Client

	// mu serializes the SDK calls: the SDK takes its context as a
	// setting of the client, not per call.
	mu     sync.Mutex
	client *sdk.Client
}

var _ forge.Forge = (*Adapter)(nil)

// New makes the adapter. It does no I/O beyond reading the CA file: an
// unreachable Gitea is reported by the first call.
func New(o Options) (*Adapter, error) {
	repo, err := ParseRepoURL(o.URL)
	if err != nil {
		return nil, err
	}
	if o.Token == "" {
		return nil, fmt.Errorf("%w: gitea %s: no API token (set the environment variable envrepo.review.token_env names)", fault.ErrUsage, repo.Web())
	}
	hc, err := forgeurl.HTTPClient(nil, o.CAFile, o.Timeout)
	if err != nil {
		return nil, fmt.Errorf("gitea %s: %w", repo.Web(), err)
	}
	// SetGiteaVersion(""): no version probe at construction (no I/O in
	// New); the calls used here exist in every Gitea this targets.
	client, err := sdk.NewClient(repo.Base, sdk.SetHTTPClient(hc), sdk.SetToken(o.Token), sdk.SetGiteaVersion(""), sdk.SetUserAgent("relcap"))
	if err != nil {
		return nil, fmt.Errorf("gitea %s: %w", repo.Web(), err)
	}
	return &Adapter{repo: repo, token: o.Token, http: hc, client: client}, nil
}

// Where is the repository's web address (never with credentials).
func (a *Adapter) Where() string { return a.repo.Web() }

// call runs one SDK call with ctx.
func (a *Adapter) call(ctx context.Context, f func(c *sdk.Client) (*sdk.Response, error)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.client.SetContext(ctx)
	resp, err := f(a.client)
	a.client.SetContext(context.Background())
	if err == nil {
		return nil
	}
	status := 0
	if resp != nil && resp.Response != nil {
		status = resp.StatusCode
	}
	return a.apiError(status, err.Error())
}

// apiError turns a failed request into relcap's error, without the token.
func (a *Adapter) apiError(status int, msg string) error {
	msg = a.redact(strings.TrimSpace(msg))
	switch status {
	case http.StatusNotFound:
		if msg == "" || strings.EqualFold(msg, "not found") || strings.HasPrefix(msg, "404") {
			return fmt.Errorf("gitea %s: %w", a.Where(), fault.ErrNotFound)
		}
		return fmt.Errorf("gitea %s: %w: %s", a.Where(), fault.ErrNotFound, msg)
	case http.StatusUnauthorized:
		return fmt.Errorf("gitea %s: the API token was refused (%s): check the environment variable envrepo.review.token_env names", a.Where(), msg)
	case 0:
		return fmt.Errorf("gitea %s: %s", a.Where(), msg)
	}
	return fmt.Errorf("gitea %s: HTTP %d: %s", a.Where(), status, msg)
}

// redact removes the token from a message, should an error ever carry it.
func (a *Adapter) redact(s string) string {
	return secret.NewSet(a.token).Scrub(s)
}

// OpenPullRequest returns the open pull request of req.Head into
// req.Base, opening it when there is none.
func (a *Adapter) OpenPullRequest(ctx context.Context, req forge.OpenPullRequestRequest) (forge.PullRequest, error) {
	if req.Head == "" || req.Base == "" {
		return forge.PullRequest{}, fmt.Errorf("%w: gitea %s: a pull request needs a head and a base branch", fault.ErrUsage, a.Where())
	}
	if pr, ok, err := a.openPR(ctx, req.Head, req.Base); err != nil || ok {
		return pr, err
	}
	var created *sdk.PullRequest
	err := a.call(ctx, func(c *sdk.Client) (r *sdk.Response, err error) {
		created, r, err = c.CreatePullRequest(a.repo.Owner, a.repo.Name, sdk.CreatePullRequestOption{Head: req.Head, Base: req.Base, Title: req.Title, Body: req.Body})
		return r, err
	})
	if err != nil {
		// Another relcap opened it between the look and the open (Gitea
		// refuses a second open pull request of the same branches).
		if pr, ok, lerr := a.openPR(ctx, req.Head, req.Base); lerr == nil && ok {
			return pr, nil
		}
		return forge.PullRequest{}, fmt.Errorf("open pull request %s → %s: %w", req.Head, req.Base, err)
	}
	return a.translatePR(created), nil
}

// openPR finds the open pull request of head into base.
func (a *Adapter) openPR(ctx context.Context, head, base string) (forge.PullRequest, bool, error) {
	const pageSize = 50
	for page := 1; ; page++ {
		var prs []*sdk.PullRequest
		err := a.call(ctx, func(c *sdk.Client) (r *sdk.Response, err error) {
			prs, r, err = c.ListRepoPullRequests(a.repo.Owner, a.repo.Name, sdk.ListPullRequestsOptions{
				ListOptions: sdk.ListOptions{Page: page, PageSize: pageSize}, State: sdk.StateOpen})
			return r, err
		})
		if err != nil {
			return forge.PullRequest{}, false, fmt.Errorf("list open pull requests: %w", err)
		}
		for _, pr := range prs {
			if pr.Head != nil && pr.Base != nil && pr.Head.Ref == head && pr.Base.Ref == base && !pr.HasMerged {
				return a.translatePR(pr), true, nil
			}
		}
		if len(prs) < pageSize {
			return forge.PullRequest{}, false, nil
		}
	}
}

// PullRequest reads pull request number as it is now.
func (a *Adapter) PullRequest(ctx context.Context, number int) (forge.PullRequest, error) {
	var pr *sdk.PullRequest
	err := a.call(ctx, func(c *sdk.Client) (r *sdk.Response, err error) {
		pr, r, err = c.GetPullRequest(a.repo.Owner, a.repo.Name, int64(number))
		return r, err
	})
	if err != nil {
		return forge.PullRequest{}, fmt.Errorf("pull request #%d: %w", number, err)
	}
	return a.translatePR(pr), nil
}

// translatePR is the domain's view of a Gitea pull request.
func (a *Adapter) translatePR(pr *sdk.PullRequest) forge.PullRequest {
	out := forge.PullRequest{
		Number: int(pr.Index), URL: pr.HTMLURL, Title: pr.Title,
		State: prState(pr.State, pr.HasMerged), Mergeable: pr.Mergeable,
	}
	if pr.Poster != nil {
		out.Author = pr.Poster.UserName
	}
	if pr.Head != nil {
		out.Head, out.HeadSHA = pr.Head.Ref, pr.Head.Sha
	}
	if pr.Base != nil {
		out.Base = pr.Base.Ref
	}
	if out.State == forge.PullRequestOpen && !out.Mergeable {
		// Gitea's mergeable is its conflict check (false too while it
		// is still checking); branch protection answers at Merge.
		out.Blocker = "Gitea reports the branch does not merge cleanly into " + out.Base + " (a conflict, or its check is not done yet)"
	}
	if out.State != forge.PullRequestOpen {
		out.Mergeable = false
	}
	if pr.HasMerged {
		if pr.MergedCommitID != nil {
			out.MergeCommit = *pr.MergedCommitID
		}
		if pr.MergedBy != nil {
			out.MergedBy = pr.MergedBy.UserName
		}
		if pr.Merged != nil {
			out.MergedAt = *pr.Merged
		}
	}
	return out
}

// prState maps Gitea's state: Gitea reports a merged pull request as
// closed with merged set.
func prState(state sdk.StateType, merged bool) forge.PullRequestState {
	switch {
	case merged:
		return forge.PullRequestMerged
	case state == sdk.StateClosed:
		return forge.PullRequestClosed
	default:
		return forge.PullRequestOpen
	}
}

// Reviews lists the reviews of pull request number, oldest first.
func (a *Adapter) Reviews(ctx context.Context, number int) ([]forge.Review, error) {
	const pageSize = 50
	var out []forge.Review
	for page := 1; ; page++ {
		var rs []*sdk.PullReview
		err := a.call(ctx, func(c *sdk.Client) (r *sdk.Response, err error) {
			rs, r, err = c.ListPullReviews(a.repo.Owner, a.repo.Name, int64(number), sdk.ListPullReviewsOptions{ListOptions: sdk.ListOptions{Page: page, PageSize: pageSize}})
			return r, err
		})
		if err != nil {
			return nil, fmt.Errorf("reviews of pull request #%d: %w", number, err)
		}
		for _, r := range rs {
			if r.State == sdk.ReviewStateRequestReview {
				continue // a request for a review, not a review
			}
			fr := forge.Review{ID: r.ID, State: reviewState(r.State, r.Dismissed, r.Stale), CommitSHA: r.CommitID, At: r.Submitted, Body: r.Body}
			if r.Reviewer != nil {
				fr.Login = r.Reviewer.UserName
			}
			out = append(out, fr)
		}
		if len(rs) < pageSize {
			break
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// reviewState maps a Gitea review to its verdict. A dismissed review, and
// an approval gone stale (the branch moved since), approve nothing; a
// stale request for changes still stands until its author withdraws it.
// An unknown state counts for nothing (pending).
func reviewState(s sdk.ReviewStateType, dismissed, stale bool) forge.ReviewState {
	if dismissed {
		return forge.ReviewDismissed
	}
	switch s {
	case sdk.ReviewStateApproved:
		if stale {
			return forge.ReviewDismissed
		}
		return forge.ReviewApproved
	case sdk.ReviewStateRequestChanges:
		return forge.ReviewChangesRequested
	case sdk.ReviewStateComment:
		return forge.ReviewCommented
	default:
		return forge.ReviewPending
	}
}

// Merge merges pull request number while its head is headSHA, as a merge
// commit, never forcing: Gitea's branch protection (approvals, rejected
// reviews, stale approvals) has the last word.
func (a *Adapter) Merge(ctx context.Context, number int, headSHA, message string) (string, error) {
	pr, err := a.PullRequest(ctx, number)
	if err != nil {
		return "", err
	}
	switch pr.State {
	case forge.PullRequestMerged:
		return pr.MergeCommit, nil
	case forge.PullRequestClosed:
		return "", fmt.Errorf("%w: gitea %s: pull request #%d was closed without merge", fault.ErrBlocked, a.Where(), number)
	}
	if headSHA == "" || pr.HeadSHA != headSHA {
		return "", fmt.Errorf("%w: gitea %s: pull request #%d's head is %s, not the reviewed commit %s: not merged", fault.ErrBlocked, a.Where(), number, short(pr.HeadSHA), short(headSHA))
	}
	title, body, _ := strings.Cut(strings.TrimSpace(message), "\n")
	// The SDK's MergePullRequest keeps only the status code of a
	// refusal, and Gitea's reason is what the captain must see, so this
	// one request is made here. head_commit_id makes Gitea itself refuse
	// when the branch moved after the check above.
	opt := sdk.MergePullRequestOption{Style: sdk.MergeStyleMerge, Title: strings.TrimSpace(title), Message: strings.TrimSpace(body), HeadCommitId: headSHA}
	path := fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", url.PathEscape(a.repo.Owner), url.PathEscape(a.repo.Name), number)
	var status int
	var msg string
	for attempt := 0; ; attempt++ {
		status, msg, err = a.post(ctx, path, opt)
		if err != nil {
			return "", fmt.Errorf("merge pull request #%d: %w", number, err)
		}
		// Gitea answers this while it is still checking whether the
		// pull request merges (after a push to either branch): not a
		// verdict yet, so it is asked again for a while.
		if status != http.StatusMethodNotAllowed || msg != giteaStillChecking || attempt >= mergeRetries {
			break
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("merge pull request #%d: gitea %s is still checking it: %w", number, a.Where(), ctx.Err())
		case <-time.After(mergeRetryWait):
		}
	}
	switch {
	case status/100 == 2:
	case status == http.StatusMethodNotAllowed && waitsOnAPerson(msg):
		return "", fmt.Errorf("%w: %s", fault.ErrForgeNotReady, a.redact(msg))
	case status == http.StatusMethodNotAllowed || status == http.StatusConflict || status == http.StatusUnprocessableEntity || status == http.StatusForbidden:
		return "", fmt.Errorf("%w: gitea %s refused to merge pull request #%d: %s", fault.ErrBlocked, a.Where(), number, a.redact(msg))
	default:
		return "", fmt.Errorf("merge pull request #%d: %w", number, a.apiError(status, msg))
	}
	merged, err := a.PullRequest(ctx, number)
	if err != nil {
		return "", fmt.Errorf("merged pull request #%d, then: %w", number, err)
	}
	if merged.State != forge.PullRequestMerged || merged.MergeCommit == "" {
		return "", fmt.Errorf("gitea %s accepted the merge of pull request #%d but reports it %s without a merge commit", a.Where(), number, merged.State)
	}
	return merged.MergeCommit, nil
}

// giteaNotReady are Gitea's reasons (pull_service.ErrNotReadyToMerge) for
// refusing a merge that reviews or checks still to come can lift. The
// others (an outdated head branch, changed protected files, a closed pull
// request) need someone to act on the branch: they block.
var giteaNotReady = []string{
	"Does not have enough approvals",
	"Not all required status checks successful",
	"There are requested changes",
	"There are official review requests",
}

func waitsOnAPerson(msg string) bool {
	for _, r := range giteaNotReady {
		if strings.HasPrefix(msg, r) {
			return true
		}
	}
	return false
}

// giteaStillChecking is Gitea's answer to a merge while its mergeability
// check runs (pull_service.ErrNotMergeableState).
const giteaStillChecking = "Please try again later"

// How long Merge waits for that check: 30 × 500 ms.
const (
	mergeRetries   = 30
	mergeRetryWait = 500 * time.Millisecond
)

// post sends one JSON request to the API and returns the status and, for
// a failure, Gitea's message.
func (a *Adapter) post(ctx context.Context, path string, body any) (int, string, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.repo.Base+"/api/v1"+path, bytes.NewReader(b))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "token "+a.token)
	req.Header.Set("User-Agent", "relcap")
	resp, err := a.http.Do(req)
	if err != nil {
		// url.Error names the URL, which holds no credentials.
		return 0, "", fmt.Errorf("gitea %s: %s", a.Where(), a.redact(err.Error()))
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, "", nil
	}
	return resp.StatusCode, apiMessage(resp.Status, data), nil
}

// apiMessage is the message of a Gitea error answer ({"message": ...}),
// else its status and body.
func apiMessage(status string, data []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &e) == nil && strings.TrimSpace(e.Message) != "" {
		return strings.TrimSpace(e.Message)
	}
	if s := strings.TrimSpace(string(data)); s != "" {
		if len(s) > 300 {
			s = s[:300] + "…"
		}
		return status + ": " + s
	}
	return status
}

func short(sha string) string {
	if sha == "" {
		return "(none)"
	}
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
