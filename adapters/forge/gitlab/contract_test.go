package gitlab

// Contract tests: an httptest.Server answers with JSON bodies recorded
// from GitLab's REST API documentation (testdata/README.md names each
// page). They pin the requests the adapter sends and how it reads the
// documented answers; they are recorded API shapes from the
// documentation, not proof against the real service.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
)

const (
	token    = "glpat-contractTestToken0123456789"
	head     = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
	first    = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
	moved    = "7e1c3a0f0b7d1c2e3f405162738495a6b7c8d9e0"
	merge    = "e5bd3914e2e596debea16f433f57875b5b90bcd6"
	squash   = "c0ffee0ddba11c0ffee0ddba11c0ffee0ddba11c"
	branch   = "relcap/staging/r1"
	tokenEnv = "GITLAB_TOKEN"
	mrs      = "/api/v4/projects/group%2Fsub%2Fenv/merge_requests"
)

// answer is one scripted response: a recorded body (or none) and status.
type answer struct {
	status int
	file   string
	header map[string]string
}

// seen is one request as the server received it.
type seen struct {
	Method, Path, Query, Token, Authorization string
	Body                                      map[string]any
}

// api is the recorded GitLab server: routes are "METHOD /escaped/path?query"
// (the query as sent, sorted by go-querystring), each with the answers
// it gives in turn (the last one repeats).
type api struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	routes map[string][]answer
	seen   []seen
}

func newAPI(t *testing.T, routes map[string][]answer) *api {
	t.Helper()
	a := &api{t: t, routes: routes}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *api) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s := seen{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Token: r.Header.Get("PRIVATE-TOKEN"), Authorization: r.Header.Get("Authorization")}
	if len(body) > 0 {
		_ = json.Unmarshal(body, &s.Body)
	}
	key := r.Method + " " + s.Path
	if s.Query != "" {
		key += "?" + s.Query
	}
	a.mu.Lock()
	a.seen = append(a.seen, s)
	answers, ok := a.routes[key]
	var ans answer
	if ok {
		ans = answers[0]
		if len(answers) > 1 {
			a.routes[key] = answers[1:]
		}
	}
	a.mu.Unlock()
	if !ok {
		a.t.Errorf("unexpected request %s", key)
		http.Error(w, `{"message":"not scripted"}`, http.StatusTeapot)
		return
	}
	for k, v := range ans.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ans.status)
	if ans.file != "" {
		data, err := os.ReadFile("testdata/" + ans.file)
		require.NoError(a.t, err)
		_, _ = w.Write(data)
	}
}

// requests are the requests seen, after checking every one carried the
// token in GitLab's PRIVATE-TOKEN header and none in its URL.
func (a *api) requests() []seen {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.seen {
		require.Equal(a.t, token, s.Token, "%s %s", s.Method, s.Path)
		require.Empty(a.t, s.Authorization)
		require.NotContains(a.t, s.Path+"?"+s.Query, token)
	}
	return append([]seen(nil), a.seen...)
}

func (a *api) adapter() *Adapter {
	a.t.Helper()
	ad, err := New(Options{URL: a.srv.URL + "/group/sub/env", Token: token, TokenEnv: tokenEnv, HTTPClient: a.srv.Client(), Timeout: 5 * time.Second})
	require.NoError(a.t, err)
	return ad
}

func ok(file string) answer { return answer{status: 200, file: file} }

const list = "GET " + mrs + "?source_branch=relcap%2Fstaging%2Fr1&state=opened&target_branch=main"

func TestContractOpenPullRequestFindsTheOpenedMergeRequestBeforeCreating(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		list:                {ok("mrs-list-open.json")},
		"GET " + mrs + "/7": {ok("mr-open-mergeable.json")},
	})
	pr, err := a.adapter().OpenPullRequest(t.Context(), forge.OpenPullRequestRequest{Head: branch, Base: "main", Title: "t", Body: "b"})
	require.NoError(t, err)
	require.Equal(t, forge.PullRequest{
		Number: 7, URL: "https://gitlab.example.com/group/sub/env/-/merge_requests/7", State: forge.PullRequestOpen,
		Title: "relcap: promote web r1 to staging", Author: "relcap-bot",
		Head: branch, HeadSHA: head, Base: "main", Mergeable: true,
	}, pr)
	require.Len(t, a.requests(), 2, "an opened merge request is found, not opened twice")
}

func TestContractOpenPullRequestCreatesWhenNoneIsOpened(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		list:                {ok("mrs-list-empty.json"), ok("mrs-list-open.json")},
		"POST " + mrs:       {{status: 201, file: "mr-created.json"}},
		"GET " + mrs + "/7": {ok("mr-created.json")},
	})
	pr, err := a.adapter().OpenPullRequest(t.Context(), forge.OpenPullRequestRequest{Head: branch, Base: "main", Title: "relcap: promote web r1 to staging", Body: "evidence"})
	require.NoError(t, err)
	require.Equal(t, 7, pr.Number)
	require.False(t, pr.Mergeable)
	require.Equal(t, "gitlab is still preparing the merge request (detailed_merge_status preparing)", pr.Blocker)
	reqs := a.requests()
	require.Equal(t, "POST", reqs[1].Method)
	require.Equal(t, map[string]any{"title": "relcap: promote web r1 to staging", "description": "evidence", "source_branch": branch, "target_branch": "main"}, reqs[1].Body)
}

func TestContractOpenPullRequestReadsTheOneARaceOpened(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		list:                {ok("mrs-list-empty.json"), ok("mrs-list-open.json")},
		"POST " + mrs:       {{status: 409, file: "create-409.json"}},
		"GET " + mrs + "/7": {ok("mr-open-mergeable.json")},
	})
	pr, err := a.adapter().OpenPullRequest(t.Context(), forge.OpenPullRequestRequest{Head: branch, Base: "main"})
	require.NoError(t, err)
	require.Equal(t, 7, pr.Number)
}

func TestContractPullRequestStates(t *testing.T) {
	t.Parallel()
	mergedAt := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	for file, want := range map[string]forge.PullRequest{
		"mr-closed.json":                     {State: forge.PullRequestClosed},
		"mr-merged.json":                     {State: forge.PullRequestMerged, MergeCommit: merge, MergedBy: "carol", MergedAt: mergedAt},
		"mr-merged-fast-forward-squash.json": {State: forge.PullRequestMerged, MergeCommit: squash, MergedBy: "carol", MergedAt: mergedAt},
		"mr-locked.json":                     {State: forge.PullRequestOpen, Blocker: "gitlab is merging it (state locked)"},
		"mr-open-mergeable.json":             {State: forge.PullRequestOpen, Mergeable: true},
		"mr-open-not-approved.json":          {State: forge.PullRequestOpen, Blocker: "the approvals the project requires are missing (detailed_merge_status not_approved)"},
		"mr-open-ci-must-pass.json":          {State: forge.PullRequestOpen, Blocker: "the pipeline must succeed first (detailed_merge_status ci_must_pass)"},
		"mr-open-conflict.json":              {State: forge.PullRequestOpen, Blocker: "the source branch conflicts with the target branch (detailed_merge_status conflict)"},
	} {
		a := newAPI(t, map[string][]answer{"GET " + mrs + "/7": {ok(file)}})
		pr, err := a.adapter().PullRequest(t.Context(), 7)
		require.NoError(t, err, file)
		got := forge.PullRequest{State: pr.State, Mergeable: pr.Mergeable, Blocker: pr.Blocker, MergeCommit: pr.MergeCommit, MergedBy: pr.MergedBy, MergedAt: pr.MergedAt}
		require.Equal(t, want, got, file)
		require.Equal(t, head, pr.HeadSHA, file)
	}
}

func TestContractUnknownNumberIsNotFound(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{"GET " + mrs + "/99": {{status: 404, file: "error-404.json"}}})
	_, err := a.adapter().PullRequest(t.Context(), 99)
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.Contains(t, err.Error(), "merge request !99")
}

func TestContractRefusedTokenNamesItsVariableNotItsValue(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{"GET " + mrs + "/7": {{status: 401, file: "error-401.json"}}})
	_, err := a.adapter().PullRequest(t.Context(), 7)
	require.ErrorIs(t, err, ErrTokenRejected)
	require.Contains(t, err.Error(), "$GITLAB_TOKEN")
	require.Contains(t, err.Error(), "401 Unauthorized")
	require.NotContains(t, err.Error(), token)
	a.requests()
}

// TestContractApprovalsAreReviewsOfTheHeadCurrentWhenGiven: dave approved
// the first version and carol the pushed one; only carol's approval is of
// the head (the versions' pages follow X-Next-Page).
func TestContractApprovalsAreReviewsOfTheHeadCurrentWhenGiven(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		"GET " + mrs + "/7/approvals":                    {ok("approvals.json")},
		"GET " + mrs + "/7/versions?per_page=100":        {{status: 200, file: "versions-page1.json", header: map[string]string{"X-Next-Page": "2", "X-Page": "1", "X-Total-Pages": "2"}}},
		"GET " + mrs + "/7/versions?page=2&per_page=100": {{status: 200, file: "versions-page2.json", header: map[string]string{"X-Page": "2", "X-Total-Pages": "2"}}},
	})
	got, err := a.adapter().Reviews(t.Context(), 7)
	require.NoError(t, err)
	require.Equal(t, []forge.Review{
		{ID: 11, Login: "dave", State: forge.ReviewApproved, CommitSHA: first, At: time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)},
		{ID: 4, Login: "carol", State: forge.ReviewApproved, CommitSHA: head, At: time.Date(2026, 12, 1, 10, 25, 0, 0, time.UTC)},
	}, got)
	require.Len(t, a.requests(), 3)
}

// TestContractApprovalsWithoutApprovedAt: an older GitLab says who
// approved but not when; the approval is of the head only while the
// merge request has a single version.
func TestContractApprovalsWithoutApprovedAt(t *testing.T) {
	t.Parallel()
	for versions, want := range map[string]string{"versions-one.json": head, "versions-page2.json": first} {
		a := newAPI(t, map[string][]answer{
			"GET " + mrs + "/7/approvals":             {ok("approvals-no-approved-at.json")},
			"GET " + mrs + "/7/versions?per_page=100": {ok(versions)},
		})
		got, err := a.adapter().Reviews(t.Context(), 7)
		require.NoError(t, err)
		require.Equal(t, []forge.Review{{ID: 4, Login: "carol", State: forge.ReviewApproved, CommitSHA: want}}, got)
	}
	a := newAPI(t, map[string][]answer{
		"GET " + mrs + "/7/approvals":                    {ok("approvals-no-approved-at.json")},
		"GET " + mrs + "/7/versions?per_page=100":        {{status: 200, file: "versions-page1.json", header: map[string]string{"X-Next-Page": "2"}}},
		"GET " + mrs + "/7/versions?page=2&per_page=100": {ok("versions-page2.json")},
	})
	got, err := a.adapter().Reviews(t.Context(), 7)
	require.NoError(t, err)
	require.Equal(t, "", got[0].CommitSHA, "two versions and no approved_at: the approval is of no known commit")
}

func TestContractMergeSendsTheApprovedHead(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		"GET " + mrs + "/7":       {ok("mr-open-mergeable.json")},
		"PUT " + mrs + "/7/merge": {ok("accept-ok.json")},
	})
	sha, err := a.adapter().Merge(t.Context(), 7, head, "relcap: promote web r1 to staging")
	require.NoError(t, err)
	require.Equal(t, merge, sha)
	reqs := a.requests()
	require.Equal(t, map[string]any{"sha": head, "merge_commit_message": "relcap: promote web r1 to staging"}, reqs[1].Body,
		"never auto_merge or merge_when_pipeline_succeeds")
}

func TestContractMergeOfAMergedMergeRequestReturnsItsMergeCommit(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{"GET " + mrs + "/7": {ok("mr-merged.json")}})
	sha, err := a.adapter().Merge(t.Context(), 7, head, "m")
	require.NoError(t, err)
	require.Equal(t, merge, sha)
	require.Len(t, a.requests(), 1)
}

func TestContractMergeRefusesAClosedOrMovedMergeRequestWithoutCallingMerge(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{"GET " + mrs + "/7": {ok("mr-closed.json"), ok("mr-open-moved.json")}})
	_, err := a.adapter().Merge(t.Context(), 7, head, "m")
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "closed without merge")
	_, err = a.adapter().Merge(t.Context(), 7, head, "m")
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), head)
	require.Contains(t, err.Error(), moved)
	require.Len(t, a.requests(), 2)
}

func TestContractMergeHeadMovedInBetweenIsBlockedWithBothCommits(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		"GET " + mrs + "/7":       {ok("mr-open-mergeable.json"), ok("mr-open-moved.json")},
		"PUT " + mrs + "/7/merge": {{status: 409, file: "accept-409.json"}},
	})
	_, err := a.adapter().Merge(t.Context(), 7, head, "m")
	require.ErrorIs(t, err, fault.ErrBlocked)
	for _, want := range []string{head, moved, "SHA does not match HEAD of source branch"} {
		require.Contains(t, err.Error(), want)
	}
}

func TestContractMergeNotMergeableIsBlockedWithGitLabsReason(t *testing.T) {
	t.Parallel()
	for file, status := range map[string]int{"accept-405.json": 405, "accept-406.json": 406, "accept-422.json": 422} {
		a := newAPI(t, map[string][]answer{
			"GET " + mrs + "/7":       {ok("mr-open-mergeable.json"), ok("mr-open-not-approved.json")},
			"PUT " + mrs + "/7/merge": {{status: status, file: file}},
		})
		_, err := a.adapter().Merge(t.Context(), 7, head, "m")
		require.ErrorIs(t, err, fault.ErrBlocked, file)
		require.Contains(t, err.Error(), "gitlab refuses to merge merge request !7", file)
		require.Contains(t, err.Error(), "detailed_merge_status not_approved", file)
		require.NotContains(t, err.Error(), token)
	}
}

func TestNewNamesTheConfigurationKeys(t *testing.T) {
	t.Parallel()
	_, err := New(Options{URL: "https://gitlab.example.com/group/sub/env", TokenEnv: tokenEnv})
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), "$GITLAB_TOKEN")
	require.Contains(t, err.Error(), "envrepo.review.token_env")
	_, err = New(Options{URL: "https://gitlab.example.com/group/env/-/merge_requests", Token: token})
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), "envrepo.review.url")
}

func TestNewTalksToTheInstancesAPIv4(t *testing.T) {
	t.Parallel()
	a, err := New(Options{URL: "https://gitlab.example.com/group/sub/env.git", Token: token})
	require.NoError(t, err)
	require.Equal(t, "https://gitlab.example.com/api/v4/", a.c.BaseURL().String())
	require.Equal(t, "group/sub/env", a.project)
	require.Equal(t, "gitlab https://gitlab.example.com/group/sub/env", a.Where())
}

// TestContractMergeMadeByAPersonMeanwhileIsTaken: a person merged on the
// web page between relcap's read and its merge call; GitLab answers 405
// and the merge commit is read instead.
func TestContractMergeMadeByAPersonMeanwhileIsTaken(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		"GET " + mrs + "/7":       {ok("mr-open-mergeable.json"), ok("mr-merged.json")},
		"PUT " + mrs + "/7/merge": {{status: 405, file: "accept-405.json"}},
	})
	sha, err := a.adapter().Merge(t.Context(), 7, head, "m")
	require.NoError(t, err)
	require.Equal(t, merge, sha)
}
