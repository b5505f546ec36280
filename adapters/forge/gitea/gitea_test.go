package gitea

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
)

// The adapter's calls are tested against a real Gitea in the lab's suite
// (cmd/relcap-lab, TestGitea…, make e2e-gitea); these are its pure parts.

func TestParseRepoURL(t *testing.T) {
	for _, c := range []struct {
		in                string
		base, owner, name string
	}{
		{"https://git.example.com/acme/env", "https://git.example.com", "acme", "env"},
		{"http://127.0.0.1:3000/captain/env", "http://127.0.0.1:3000", "captain", "env"},
		{"http://127.0.0.1:3000/captain/env.git", "http://127.0.0.1:3000", "captain", "env"},
		{"https://example.com/gitea/acme/env/", "https://example.com/gitea", "acme", "env"},
		{" https://example.com/acme/env ", "https://example.com", "acme", "env"},
	} {
		r, err := ParseRepoURL(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if r.Base != c.base || r.Owner != c.owner || r.Name != c.name {
			t.Errorf("%q: got %+v, want %s %s/%s", c.in, r, c.base, c.owner, c.name)
		}
		if want := c.base + "/" + c.owner + "/" + c.name; r.Web() != want {
			t.Errorf("%q: Web() = %s, want %s", c.in, r.Web(), want)
		}
	}
}

func TestParseRepoURLErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    "empty",
		"git@example.com:acme/env.git":        "http(s) URL",
		"ssh://example.com/acme/env":          "scheme",
		"https:///acme/env":                   "no host",
		"https://example.com/env":             "owner/repo",
		"https://example.com/":                "owner/repo",
		"https://example.com/acme/env?x=1":    "no query",
		"https://example.com/acme/../env":     "segment",
		"https://u:s3cret@example.com/a/env":  "credentials do not belong",
		"https://example.com/acme/.git":       "no repository name",
		"https://example.com//acme/env":       "segment",
		"https://example.com/acme/env#readme": "no query",
	} {
		_, err := ParseRepoURL(in)
		if err == nil {
			t.Errorf("%q: no error", in)
			continue
		}
		if !errors.Is(err, fault.ErrUsage) || !strings.Contains(err.Error(), "envrepo.review.url") || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want ErrUsage naming envrepo.review.url and %q", in, err, want)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: the error shows the password: %v", in, err)
		}
	}
}

func TestNewOptions(t *testing.T) {
	if _, err := New(Options{URL: "https://example.com/acme/env"}); !errors.Is(err, fault.ErrUsage) || !strings.Contains(err.Error(), "token") {
		t.Errorf("no token: %v", err)
	}
	dir := t.TempDir()
	_, err := New(Options{URL: "https://example.com/acme/env", Token: "tok", CAFile: filepath.Join(dir, "missing.pem")})
	if !errors.Is(err, fault.ErrUsage) || !strings.Contains(err.Error(), "envrepo.review.ca_file") {
		t.Errorf("missing CA file: %v", err)
	}
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{URL: "https://example.com/acme/env", Token: "tok", CAFile: notPEM}); !errors.Is(err, fault.ErrUsage) || !strings.Contains(err.Error(), "no PEM") {
		t.Errorf("CA file without PEM: %v", err)
	}
	a, err := New(Options{URL: "https://example.com/acme/env.git", Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Where() != "https://example.com/acme/env" {
		t.Errorf("Where() = %s", a.Where())
	}
}

func TestPullRequestState(t *testing.T) {
	for _, c := range []struct {
		state  sdk.StateType
		merged bool
		want   forge.PullRequestState
	}{
		{sdk.StateOpen, false, forge.PullRequestOpen},
		{sdk.StateClosed, false, forge.PullRequestClosed},
		{sdk.StateClosed, true, forge.PullRequestMerged},
	} {
		if got := prState(c.state, c.merged); got != c.want {
			t.Errorf("%s merged=%v: %s, want %s", c.state, c.merged, got, c.want)
		}
	}
}

func TestTranslatePR(t *testing.T) {
	a := &Adapter{repo: Repo{Base: "http://h", Owner: "o", Name: "r"}}
	sha := "abc"
	pr := a.translatePR(&sdk.PullRequest{Index: 7, State: sdk.StateClosed, HasMerged: true, Mergeable: true, MergedCommitID: &sha,
		MergedBy: &sdk.User{UserName: "captain"}, Poster: &sdk.User{UserName: "captain"},
		Head: &sdk.PRBranchInfo{Ref: "relcap/staging/r1", Sha: "def"}, Base: &sdk.PRBranchInfo{Ref: "main"}})
	if pr.State != forge.PullRequestMerged || pr.MergeCommit != "abc" || pr.MergedBy != "captain" || pr.Mergeable || pr.Head != "relcap/staging/r1" || pr.HeadSHA != "def" || pr.Base != "main" || pr.Number != 7 {
		t.Errorf("merged: %+v", pr)
	}
	open := a.translatePR(&sdk.PullRequest{Index: 8, State: sdk.StateOpen, Base: &sdk.PRBranchInfo{Ref: "main"}})
	if open.State != forge.PullRequestOpen || open.Mergeable || !strings.Contains(open.Blocker, "main") {
		t.Errorf("open, not mergeable: %+v", open)
	}
}

func TestReviewState(t *testing.T) {
	for _, c := range []struct {
		state            sdk.ReviewStateType
		dismissed, stale bool
		want             forge.ReviewState
	}{
		{sdk.ReviewStateApproved, false, false, forge.ReviewApproved},
		{sdk.ReviewStateApproved, false, true, forge.ReviewDismissed},
		{sdk.ReviewStateApproved, true, false, forge.ReviewDismissed},
		{sdk.ReviewStateRequestChanges, false, false, forge.ReviewChangesRequested},
		{sdk.ReviewStateRequestChanges, false, true, forge.ReviewChangesRequested},
		{sdk.ReviewStateRequestChanges, true, false, forge.ReviewDismissed},
		{sdk.ReviewStateComment, false, false, forge.ReviewCommented},
		{sdk.ReviewStatePending, false, false, forge.ReviewPending},
		{sdk.ReviewStateUnknown, false, false, forge.ReviewPending},
		{"SOMETHING_NEW", false, false, forge.ReviewPending},
	} {
		if got := reviewState(c.state, c.dismissed, c.stale); got != c.want {
			t.Errorf("%s dismissed=%v stale=%v: %s, want %s", c.state, c.dismissed, c.stale, got, c.want)
		}
	}
}

func TestErrorsWithoutToken(t *testing.T) {
	a := &Adapter{repo: Repo{Base: "http://h", Owner: "o", Name: "r"}, token: "s3cr3t-token"}
	for status, wantIs := range map[int]error{404: fault.ErrNotFound, 401: nil, 500: nil, 0: nil} {
		err := a.apiError(status, "echo of s3cr3t-token")
		if strings.Contains(err.Error(), "s3cr3t-token") {
			t.Errorf("%d: the token is in %v", status, err)
		}
		if wantIs != nil && !errors.Is(err, wantIs) {
			t.Errorf("%d: %v is not %v", status, err, wantIs)
		}
	}
	if got := apiMessage("405 Method Not Allowed", []byte(`{"message":"Does not have enough approvals","url":"x"}`)); got != "Does not have enough approvals" {
		t.Errorf("apiMessage: %q", got)
	}
	if got := apiMessage("502 Bad Gateway", nil); got != "502 Bad Gateway" {
		t.Errorf("apiMessage without body: %q", got)
	}
}
