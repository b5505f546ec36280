// Package gitlab implements forge.Forge on GitLab (gitlab.com or a
// self-managed instance) with GitLab's own client,
// gitlab.com/gitlab-org/api/client-go/v2: merge requests opened from
// relcap's branch, their approvals as reviews, and merges made only while
// the head is still the approved commit (the merge call carries it as
// sha, so GitLab itself refuses once the head moved). No client-go type
// leaves the package, and the token travels in the PRIVATE-TOKEN header
// only: it is never in a URL, an error or Where.
//
// Approvals are not reviews. GitLab records who approved a merge request
// and when (approved_by[].approved_at), not which commit: Reviews maps
// each approval to the head of the merge request's diff version that was
// current when it was given (the newest version created at or before
// approved_at), so an approval given before a push does not approve the
// pushed commit, whether or not the project resets approvals on push.
// Its limits: an approval recorded in the same instant as a push is
// taken for the pushed head (GitLab would count it too); a GitLab that
// does not report approved_at (older than the field) gets a commit only
// while the merge request has one version, and otherwise an empty
// CommitSHA, which approves no commit. GitLab's "requested changes"
// (reviewer state) is not read: it blocks the merge on GitLab's side,
// where detailed_merge_status says requested_changes.
package gitlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/relcap/relcap/adapters/forge/forgeurl"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/secret"
)

var _ forge.Forge = (*Adapter)(nil)

// ErrTokenRejected: GitLab answered 401 to the token (wrapped with the
// variable it came from and GitLab's message).
var ErrTokenRejected = errors.New("gitlab refused the token")

// Options configure an Adapter.
type Options struct {
	// URL is the project's web address (envrepo.review.url):
	// https://gitlab.example.com/group/sub/project; groups nest, and the
	// API is https://host/api/v4/. Required.
	URL string
	// Token is the API token (personal, project or group access token
	// with the api scope); TokenEnv names the variable it came from
	// (envrepo.review.token_env), for messages. Token is required.
	Token    string
	TokenEnv string
	// CAFile is a PEM file of the authorities the instance's certificate
	// is checked against, beside the system's.
	CAFile string
	// Timeout bounds every API call; default forgeurl.DefaultTimeout.
	Timeout time.Duration
	// HTTPClient replaces the HTTP client (tests); CAFile is then unused.
	HTTPClient *http.Client
}

// Adapter is one project on GitLab. It is safe for concurrent use.
type Adapter struct {
	c        *gl.Client
	project  string // group/sub/project, which client-go escapes
	web      string
	token    string
	tokenEnv string
}

// New validates opts and returns an Adapter; it does not call GitLab.
// Invalid options wrap fault.ErrUsage and name the relcap.yaml key.
func New(opts Options) (*Adapter, error) {
	repo, err := forgeurl.Parse(opts.URL, 2)
	if err != nil {
		return nil, err
	}
	// The project's web pages live under /-/; an address copied from one
	// of them names a page, not the project.
	if strings.Contains("/"+repo.Path+"/", "/-/") {
		return nil, fmt.Errorf("%w: envrepo.review.url %s: that is a page of the project; use the project's address (everything before /-/)", fault.ErrUsage, repo.Web())
	}
	tokenEnv := opts.TokenEnv
	if tokenEnv == "" {
		tokenEnv = "(envrepo.review.token_env)"
	} else {
		tokenEnv = "$" + tokenEnv
	}
	token := strings.TrimSpace(opts.Token)
	if token == "" {
		return nil, fmt.Errorf("%w: gitlab %s: no token: %s is empty or unset; set envrepo.review.token_env to a variable holding an access token with the api scope", fault.ErrUsage, repo.Web(), tokenEnv)
	}
	hc, err := forgeurl.HTTPClient(opts.HTTPClient, opts.CAFile, opts.Timeout)
	if err != nil {
		return nil, err
	}
	c, err := gl.NewClient(token,
		gl.WithBaseURL(repo.Base+"/api/v4"),
		gl.WithHTTPClient(hc),
		gl.WithUserAgent("relcap"),
		// client-go retries 429 and 5xx answers; a POST that may have
		// been applied (opening a merge request) is not repeated.
		gl.WithOnlyIdempotentRetries(),
		gl.WithCustomRetryMax(2),
		// Its URL warnings would go to the default logger, that is the
		// terminal under relcap's screens.
		gl.WithURLWarningLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: gitlab %s: %w", fault.ErrUsage, repo.Web(), err)
	}
	return &Adapter{c: c, project: repo.Path, web: repo.Web(), token: token, tokenEnv: tokenEnv}, nil
}

// Where names the project: its web address.
func (a *Adapter) Where() string { return "gitlab " + a.web }

// OpenPullRequest returns the opened merge request of req.Head into
// req.Base, opening it when there is none. GitLab keeps one open merge
// request per source and target branch and answers 409 to a second: that
// race reads the one the other relcap opened.
func (a *Adapter) OpenPullRequest(ctx context.Context, req forge.OpenPullRequestRequest) (forge.PullRequest, error) {
	if pr, ok, err := a.findOpen(ctx, req.Head, req.Base); err != nil || ok {
		return pr, err
	}
	_, _, err := a.c.MergeRequests.CreateMergeRequest(a.project, &gl.CreateMergeRequestOptions{
		Title: gl.Ptr(req.Title), Description: gl.Ptr(req.Body), SourceBranch: gl.Ptr(req.Head), TargetBranch: gl.Ptr(req.Base),
	}, gl.WithContext(ctx))
	if err != nil && !gl.HasStatusCode(err, http.StatusConflict) {
		return forge.PullRequest{}, a.fail(fmt.Sprintf("opening the merge request of %s into %s", req.Head, req.Base), err)
	}
	// Read it back through the list, like a resumed promotion would: one
	// code path for the created and the found one.
	pr, ok, ferr := a.findOpen(ctx, req.Head, req.Base)
	if ferr != nil {
		return forge.PullRequest{}, ferr
	}
	if !ok {
		if err != nil {
			return forge.PullRequest{}, a.fail(fmt.Sprintf("opening the merge request of %s into %s", req.Head, req.Base), err)
		}
		return forge.PullRequest{}, fmt.Errorf("%s: the merge request of %s into %s was opened but is not listed as opened", a.Where(), req.Head, req.Base)
	}
	return pr, nil
}

// findOpen reads the opened merge request of head into base, if any.
func (a *Adapter) findOpen(ctx context.Context, head, base string) (forge.PullRequest, bool, error) {
	mrs, _, err := a.c.MergeRequests.ListProjectMergeRequests(a.project, &gl.ListProjectMergeRequestsOptions{
		State: gl.Ptr("opened"), SourceBranch: gl.Ptr(head), TargetBranch: gl.Ptr(base),
	}, gl.WithContext(ctx))
	if err != nil {
		return forge.PullRequest{}, false, a.fail(fmt.Sprintf("listing the opened merge requests of %s into %s", head, base), err)
	}
	for _, m := range mrs {
		if m.SourceBranch == head && m.TargetBranch == base {
			pr, err := a.PullRequest(ctx, int(m.IID))
			return pr, err == nil, err
		}
	}
	return forge.PullRequest{}, false, nil
}

// PullRequest reads merge request number (its iid) as it is now.
func (a *Adapter) PullRequest(ctx context.Context, number int) (forge.PullRequest, error) {
	m, _, err := a.c.MergeRequests.GetMergeRequest(a.project, int64(number), nil, gl.WithContext(ctx))
	if err != nil {
		return forge.PullRequest{}, a.fail(fmt.Sprintf("reading merge request !%d", number), err)
	}
	return translate(&m.BasicMergeRequest), nil
}

// Reviews lists the approvals of merge request number as approving
// reviews, oldest first, each on the head of the diff version current
// when it was given (the package comment says why and what it cannot
// tell). GitLab approvals have no id of their own: ID is the approver's
// user id (one approval per user).
func (a *Adapter) Reviews(ctx context.Context, number int) ([]forge.Review, error) {
	ap, _, err := a.c.MergeRequestApprovals.GetConfiguration(a.project, int64(number), gl.WithContext(ctx))
	if err != nil {
		return nil, a.fail(fmt.Sprintf("reading the approvals of merge request !%d", number), err)
	}
	if len(ap.ApprovedBy) == 0 {
		return nil, nil
	}
	versions, err := a.versions(ctx, number)
	if err != nil {
		return nil, err
	}
	out := make([]forge.Review, 0, len(ap.ApprovedBy))
	for _, by := range ap.ApprovedBy {
		if by == nil || by.User == nil {
			continue
		}
		r := forge.Review{ID: by.User.ID, Login: by.User.Username, State: forge.ReviewApproved}
		if by.ApprovedAt != nil {
			r.At = by.ApprovedAt.UTC()
			r.CommitSHA = headAt(versions, *by.ApprovedAt)
		} else if len(versions) == 1 {
			r.CommitSHA = versions[0].head
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(x, y forge.Review) int { return x.At.Compare(y.At) })
	return out, nil
}

// version is one diff version of a merge request: its head and when
// GitLab recorded it (each push makes one).
type version struct {
	head string
	at   time.Time
}

// versions lists merge request number's diff versions, following GitLab's
// X-Next-Page pages.
func (a *Adapter) versions(ctx context.Context, number int) ([]version, error) {
	var out []version
	opt := &gl.GetMergeRequestDiffVersionsOptions{ListOptions: gl.ListOptions{PerPage: 100}}
	for {
		page, resp, err := a.c.MergeRequests.GetMergeRequestDiffVersions(a.project, int64(number), opt, gl.WithContext(ctx))
		if err != nil {
			return nil, a.fail(fmt.Sprintf("listing the versions of merge request !%d", number), err)
		}
		for _, v := range page {
			if v == nil || v.CreatedAt == nil || v.HeadCommitSHA == "" {
				continue
			}
			out = append(out, version{head: v.HeadCommitSHA, at: *v.CreatedAt})
		}
		if resp == nil || resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// headAt is the head of the newest version recorded at or before t, or
// "" when none was (an approval before any version is of no commit).
func headAt(vs []version, t time.Time) string {
	var best version
	for _, v := range vs {
		if !v.at.After(t) && (best.head == "" || v.at.After(best.at)) {
			best = v
		}
	}
	return best.head
}

// Merge accepts merge request number with message as the merge commit's
// message, only while its head is headSHA: the call carries sha, so
// GitLab answers 409 when the head moved in between. It never asks GitLab
// to merge later (auto_merge / merge_when_pipeline_succeeds): relcap
// merges what is mergeable now or reports why not. A 405, 406 or 422
// (not mergeable: approvals, pipeline, conflicts, draft) is ErrBlocked
// with GitLab's message. One already merged returns its merge commit.
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
		return "", fmt.Errorf("%s: %w: merge request !%d was closed without merge", a.Where(), fault.ErrBlocked, number)
	case headSHA == "":
		return "", fmt.Errorf("%s: %w: merging merge request !%d needs the approved commit", a.Where(), fault.ErrUsage, number)
	case pr.HeadSHA != headSHA:
		return "", headMoved(a.Where(), number, headSHA, pr.HeadSHA, "")
	}
	opt := &gl.AcceptMergeRequestOptions{SHA: gl.Ptr(headSHA)}
	if strings.TrimSpace(message) != "" {
		opt.MergeCommitMessage = gl.Ptr(message)
	}
	m, _, err := a.c.MergeRequests.AcceptMergeRequest(a.project, int64(number), opt, gl.WithContext(ctx))
	if err != nil {
		var er *gl.ErrorResponse
		switch code := statusOf(err); {
		case code == http.StatusConflict && errors.As(err, &er):
			now := pr.HeadSHA
			if again, rerr := a.PullRequest(ctx, number); rerr == nil {
				now = again.HeadSHA
			}
			return "", headMoved(a.Where(), number, headSHA, now, errorText(er))
		case (code == http.StatusMethodNotAllowed || code == http.StatusNotAcceptable || code == http.StatusUnprocessableEntity) && errors.As(err, &er):
			// GitLab answers 405 to a merge request merged between the
			// read and this call (a person on the web page) too.
			if again, rerr := a.PullRequest(ctx, number); rerr == nil && again.State == forge.PullRequestMerged {
				return again.MergeCommit, nil
			} else if rerr == nil && again.Blocker != "" {
				return "", fmt.Errorf("%s: %w: gitlab refuses to merge merge request !%d: %s (%s)", a.Where(), fault.ErrBlocked, number, errorText(er), again.Blocker)
			}
			return "", fmt.Errorf("%s: %w: gitlab refuses to merge merge request !%d: %s", a.Where(), fault.ErrBlocked, number, errorText(er))
		}
		return "", a.fail(fmt.Sprintf("merging merge request !%d", number), err)
	}
	done := translate(&m.BasicMergeRequest)
	if done.State != forge.PullRequestMerged {
		// The merge runs in GitLab's background jobs; the answer may
		// still say opened or locked. Read it once more.
		if again, rerr := a.PullRequest(ctx, number); rerr == nil {
			done = again
		}
	}
	if done.State != forge.PullRequestMerged || done.MergeCommit == "" {
		return "", fmt.Errorf("%s: gitlab accepted merge request !%d but has not merged it yet (state %s); resume reads the merge once it lands", a.Where(), number, done.State)
	}
	return done.MergeCommit, nil
}

// headMoved is the refusal to merge a head that is not the approved one;
// forge is GitLab's own message when it refused.
func headMoved(where string, number int, approved, now, forge string) error {
	if forge != "" {
		forge = " (gitlab: " + forge + ")"
	}
	return fmt.Errorf("%s: %w: merge request !%d changed after approval: its head is %s, the approved commit is %s%s; the approval does not approve the new commit",
		where, fault.ErrBlocked, number, now, approved, forge)
}
