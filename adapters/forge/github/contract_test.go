package github

// Contract tests: an httptest.Server answers with JSON bodies recorded
// from GitHub's REST API documentation (testdata/README.md names each
// page). They pin the requests the adapter sends and how it reads the
// documented answers; they are recorded API shapes from the
// documentation, not proof against the real service.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
)

const (
	token    = "ghp_contractTestToken0123456789abcdef"
	head     = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
	moved    = "7e1c3a0f0b7d1c2e3f405162738495a6b7c8d9e0"
	merge    = "e5bd3914e2e596debea16f433f57875b5b90bcd6"
	branch   = "relcap/staging/r1"
	tokenEnv = "GITHUB_TOKEN"
)

// answer is one scripted response: a recorded body (or none) and status.
type answer struct {
	status int
	file   string
	header map[string]string
}

// seen is one request as the server received it.
type seen struct {
	Method, Path, Query, Auth string
	Body                      map[string]any
}

// api is the recorded GitHub Enterprise server: routes are "METHOD
// /path?query" (the query as sent, sorted by go-querystring), each with
// the answers it gives in turn (the last one repeats).
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
	s := seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization")}
	if len(body) > 0 {
		_ = json.Unmarshal(body, &s.Body)
	}
	a.mu.Lock()
	a.seen = append(a.seen, s)
	key := r.Method + " " + r.URL.Path
	if r.URL.RawQuery != "" {
		key += "?" + r.URL.RawQuery
	}
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
		w.Header().Set(k, strings.ReplaceAll(v, "{base}", a.srv.URL))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(ans.status)
	if ans.file != "" {
		data, err := os.ReadFile("testdata/" + ans.file)
		require.NoError(a.t, err)
		_, _ = w.Write(data)
	}
}

// requests are the requests seen, after checking every one carried the
// token in its Authorization header and none in its URL.
func (a *api) requests() []seen {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.seen {
		require.Equal(a.t, "Bearer "+token, s.Auth, "%s %s", s.Method, s.Path)
		require.NotContains(a.t, s.Path+"?"+s.Query, token)
	}
	return append([]seen(nil), a.seen...)
}

func (a *api) adapter() *Adapter {
	a.t.Helper()
	ad, err := New(Options{URL: a.srv.URL + "/acme/env", Token: token, TokenEnv: tokenEnv, HTTPClient: a.srv.Client(), Timeout: 5 * time.Second})
	require.NoError(a.t, err)
	return ad
}

const pulls = "/api/v3/repos/acme/env/pulls"

func ok(file string) answer { return answer{status: 200, file: file} }

func TestContractOpenPullRequestFindsTheOpenOneBeforeCreating(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		"GET " + pulls + "?base=main&head=acme%3Arelcap%2Fstaging%2Fr1&state=open": {ok("pulls-list-open.json")},
		"GET " + pulls + "/7": {ok("pull-open-clean.json")},
	})
	pr, err := a.adapter().OpenPullRequest(t.Context(), forge.OpenPullRequestRequest{Head: branch, Base: "main", Title: "t", Body: "b"})
	require.NoError(t, err)
	require.Equal(t, forge.PullRequest{
		Number: 7, URL: "https://github.com/acme/env/pull/7", State: forge.PullRequestOpen,
		Title: "relcap: promote web r1 to staging", Author: "relcap-bot",
		Head: branch, HeadSHA: head, Base: "main", Mergeable: true,
	}, pr)
	reqs := a.requests()
	require.Len(t, reqs, 2, "an open pull request is found, not opened twice")
}

func TestContractOpenPullRequestCreatesWhenNoneIsOpen(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		"GET " + pulls + "?base=main&head=acme%3Arelcap%2Fstaging%2Fr1&state=open": {ok("pulls-list-empty.json")},
		"POST " + pulls: {{status: 201, file: "pull-created.json"}},
	})
	pr, err := a.adapter().OpenPullRequest(t.Context(), forge.OpenPullRequestRequest{Head: branch, Base: "main", Title: "relcap: promote web r1 to staging", Body: "evidence"})
	require.NoError(t, err)
	require.Equal(t, 7, pr.Number)
	require.Equal(t, forge.PullRequestOpen, pr.State)
	require.False(t, pr.Mergeable, "mergeable is null right after creation")
	require.Contains(t, pr.Blocker, "still computing")
	reqs := a.requests()
	require.Equal(t, map[string]any{"title": "relcap: promote web r1 to staging", "head": branch, "base": "main", "body": "evidence"}, reqs[1].Body)
}

func TestContractOpenPullRequestReadsTheOneARaceOpened(t *testing.T) {
	t.Parallel()
	list := "GET " + pulls + "?base=main&head=acme%3Arelcap%2Fstaging%2Fr1&state=open"
	a := newAPI(t, map[string][]answer{
		list:                  {ok("pulls-list-empty.json"), ok("pulls-list-open.json")},
		"POST " + pulls:       {{status: 422, file: "create-422.json"}},
		"GET " + pulls + "/7": {ok("pull-open-clean.json")},
	})
	pr, err := a.adapter().OpenPullRequest(t.Context(), forge.OpenPullRequestRequest{Head: branch, Base: "main"})
	require.NoError(t, err)
	require.Equal(t, 7, pr.Number)
}

func TestContractPullRequestStates(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]forge.PullRequest{
		"pull-closed.json": {State: forge.PullRequestClosed},
		"pull-merged.json": {State: forge.PullRequestMerged, MergeCommit: merge, MergedBy: "carol", MergedAt: time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)},
		"pull-open-blocked.json": {State: forge.PullRequestOpen,
			Blocker: "branch protection blocks the merge: required reviews or status checks are missing (mergeable_state blocked)"},
		"pull-open-behind.json": {State: forge.PullRequestOpen,
			Blocker: "the head branch is behind the base branch, and branch protection requires it up to date (mergeable_state behind)"},
		"pull-open-dirty.json": {State: forge.PullRequestOpen, Blocker: "the head branch conflicts with the base branch (mergeable_state dirty)"},
		"pull-open-clean.json": {State: forge.PullRequestOpen, Mergeable: true},
	} {
		a := newAPI(t, map[string][]answer{"GET " + pulls + "/7": {ok(file)}})
		pr, err := a.adapter().PullRequest(t.Context(), 7)
		require.NoError(t, err, file)
		got := forge.PullRequest{State: pr.State, Mergeable: pr.Mergeable, Blocker: pr.Blocker, MergeCommit: pr.MergeCommit, MergedBy: pr.MergedBy, MergedAt: pr.MergedAt}
		require.Equal(t, want, got, file)
		require.Equal(t, head, pr.HeadSHA, file)
	}
}

func TestContractUnknownNumberIsNotFound(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{"GET " + pulls + "/99": {{status: 404, file: "error-404.json"}}})
	_, err := a.adapter().PullRequest(t.Context(), 99)
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.Contains(t, err.Error(), "pull request #99")
}

func TestContractRefusedTokenNamesItsVariableNotItsValue(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{"GET " + pulls + "/7": {{status: 401, file: "error-401.json"}}})
	_, err := a.adapter().PullRequest(t.Context(), 7)
	require.ErrorIs(t, err, ErrTokenRejected)
	require.Contains(t, err.Error(), "$GITHUB_TOKEN")
	require.Contains(t, err.Error(), "Bad credentials")
	require.NotContains(t, err.Error(), token)
	a.requests()
}

func TestContractReviewsFollowTheLinkHeader(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		"GET " + pulls + "/7/reviews?per_page=100": {{status: 200, file: "reviews-page1.json", header: map[string]string{
			"Link": `<{base}/api/v3/repos/acme/env/pulls/7/reviews?page=2&per_page=100>; rel="next", <{base}/api/v3/repos/acme/env/pulls/7/reviews?page=2&per_page=100>; rel="last"`,
		}}},
		"GET " + pulls + "/7/reviews?page=2&per_page=100": {ok("reviews-page2.json")},
	})
	got, err := a.adapter().Reviews(t.Context(), 7)
	require.NoError(t, err)
	at := func(m int) time.Time { return time.Date(2026, 12, 1, 10, m, 0, 0, time.UTC) }
	base := "9049f1265b7d61be4a8904a9a27120d2064dab3b"
	require.Equal(t, []forge.Review{
		{ID: 81, Login: "dave", State: forge.ReviewCommented, CommitSHA: base, At: at(10)},
		{ID: 82, Login: "carol", State: forge.ReviewChangesRequested, CommitSHA: base, At: at(20), Body: "Pin the digest, not the tag.\nDetails in the runbook."},
		{ID: 83, Login: "carol", State: forge.ReviewApproved, CommitSHA: head, At: at(30)},
		{ID: 84, Login: "erin", State: forge.ReviewDismissed, CommitSHA: base, At: at(31)},
		{ID: 85, Login: "frank", State: forge.ReviewPending, CommitSHA: head},
	}, got)
	require.Len(t, a.requests(), 2)
}

func TestContractMergeSendsTheReviewedHead(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		"GET " + pulls + "/7":       {ok("pull-open-clean.json")},
		"PUT " + pulls + "/7/merge": {ok("merge-ok.json")},
	})
	sha, err := a.adapter().Merge(t.Context(), 7, head, "relcap: promote web r1 to staging\n\nrelease r1")
	require.NoError(t, err)
	require.Equal(t, merge, sha)
	reqs := a.requests()
	require.Equal(t, "PUT", reqs[1].Method)
	require.Equal(t, map[string]any{"sha": head, "merge_method": "merge", "commit_title": "relcap: promote web r1 to staging", "commit_message": "release r1"}, reqs[1].Body)
}

func TestContractMergeOfAMergedPullRequestReturnsItsMergeCommit(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{"GET " + pulls + "/7": {ok("pull-merged.json")}})
	sha, err := a.adapter().Merge(t.Context(), 7, head, "m")
	require.NoError(t, err)
	require.Equal(t, merge, sha)
	require.Len(t, a.requests(), 1, "no merge call for one already merged")
}

func TestContractMergeRefusesAClosedOrMovedPullRequestWithoutCallingMerge(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{"GET " + pulls + "/7": {ok("pull-closed.json"), ok("pull-open-moved.json")}})
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
		"GET " + pulls + "/7":       {ok("pull-open-clean.json"), ok("pull-open-moved.json")},
		"PUT " + pulls + "/7/merge": {{status: 409, file: "merge-409.json"}},
	})
	_, err := a.adapter().Merge(t.Context(), 7, head, "m")
	require.ErrorIs(t, err, fault.ErrBlocked)
	for _, want := range []string{head, moved, "Head branch was modified"} {
		require.Contains(t, err.Error(), want)
	}
}

func TestContractMergeNotMergeableIsBlockedWithGitHubsReason(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		"GET " + pulls + "/7":       {ok("pull-open-clean.json")},
		"PUT " + pulls + "/7/merge": {{status: 405, file: "merge-405.json"}},
	})
	_, err := a.adapter().Merge(t.Context(), 7, head, "m")
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.Contains(t, err.Error(), "At least 1 approving review is required")
	require.NotContains(t, err.Error(), token)
}

func TestNewNamesTheConfigurationKeys(t *testing.T) {
	t.Parallel()
	_, err := New(Options{URL: "https://github.com/acme/env", TokenEnv: tokenEnv})
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), "$GITHUB_TOKEN")
	require.Contains(t, err.Error(), "envrepo.review.token_env")
	_, err = New(Options{URL: "https://github.com/acme/env/sub", Token: token})
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), "envrepo.review.url")
}

func TestNewTalksToAPIGitHubComOrTheEnterpriseHost(t *testing.T) {
	t.Parallel()
	for repoURL, api := range map[string]string{
		"https://github.com/acme/env":      "https://api.github.com/",
		"https://ghe.example.com/acme/env": "https://ghe.example.com/api/v3/",
	} {
		a, err := New(Options{URL: repoURL, Token: token})
		require.NoError(t, err)
		require.Equal(t, api, a.c.BaseURL(), repoURL)
		require.Equal(t, "github "+repoURL, a.Where())
	}
}

// TestContractMergeMadeByAPersonMeanwhileIsTaken: a person merged on the
// web page between relcap's read and its merge call; GitHub answers 405
// and the merge commit is read instead.
func TestContractMergeMadeByAPersonMeanwhileIsTaken(t *testing.T) {
	t.Parallel()
	a := newAPI(t, map[string][]answer{
		"GET " + pulls + "/7":       {ok("pull-open-clean.json"), ok("pull-merged.json")},
		"PUT " + pulls + "/7/merge": {{status: 405, file: "merge-405.json"}},
	})
	sha, err := a.adapter().Merge(t.Context(), 7, head, "m")
	require.NoError(t, err)
	require.Equal(t, merge, sha)
}
