package workflowtest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
)

// FakeForge is a fake forge.Forge: one repository whose environment
// branch is protected the way teams protect it on Gitea, GitHub or GitLab.
// A pull request is mergeable only with RequiredReviews approving reviews
// of its current head; a merge names the head it expects and is refused
// when the branch moved; merging moves the world's environment branch to
// a new merge commit (which the fake Argo CD then rolls out). Tests act as
// people on the forge through Approve, Push, Close and MergeByHand.
type FakeForge struct {
	W *World
	// Login is the account relcap's token belongs to: the author of the
	// pull requests it opens.
	Login string
	// RequiredReviews is the branch protection's approving-review count.
	RequiredReviews int
	// MergeRefusal, when set, is the forge's reason for refusing a merge
	// (a required check failing at merge time).
	MergeRefusal string
	// ProtectionAtMerge makes it behave as Gitea does: a pull request
	// without conflicts reads as mergeable whatever its reviews, and the
	// branch protection speaks only when asked to merge
	// (fault.ErrForgeNotReady).
	ProtectionAtMerge bool

	mu      sync.Mutex
	prs     []*forge.PullRequest
	reviews map[int][]forge.Review
	// Opens and Merges count the pull requests opened and merged through
	// the API.
	Opens, Merges int
	// Body is the description of the last pull request opened.
	Body  string
	clock workflow.Clock
}

var _ forge.Forge = (*FakeForge)(nil)

// NewFakeForge returns a fake forge over w whose main branch requires
// required approving reviews.
func NewFakeForge(w *World, clock workflow.Clock, required int) *FakeForge {
	return &FakeForge{W: w, Login: "relcap-bot", RequiredReviews: required, reviews: map[int][]forge.Review{}, clock: clock}
}

// OpenPullRequest opens one pull request per head branch.
func (f *FakeForge) OpenPullRequest(ctx context.Context, req forge.OpenPullRequestRequest) (forge.PullRequest, error) {
	if err := f.W.gate(ctx); err != nil {
		return forge.PullRequest{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, pr := range f.prs {
		if pr.Head == req.Head && pr.State == forge.PullRequestOpen {
			return f.view(pr), nil
		}
	}
	f.W.mu.Lock()
	head, ok := f.W.Branches[req.Head]
	f.W.mu.Unlock()
	if !ok {
		return forge.PullRequest{}, fmt.Errorf("%w: no branch %s on the forge", fault.ErrNotFound, req.Head)
	}
	n := len(f.prs) + 1
	pr := &forge.PullRequest{Number: n, URL: fmt.Sprintf("https://forge.test/team/env/pulls/%d", n), State: forge.PullRequestOpen,
		Title: req.Title, Author: f.Login, Head: req.Head, HeadSHA: head, Base: req.Base}
	f.prs = append(f.prs, pr)
	f.Opens++
	f.Body = req.Body
	return f.view(pr), nil
}

// PullRequest reads one as it is now.
func (f *FakeForge) PullRequest(ctx context.Context, number int) (forge.PullRequest, error) {
	if err := f.W.gate(ctx); err != nil {
		return forge.PullRequest{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, err := f.get(number)
	if err != nil {
		return forge.PullRequest{}, err
	}
	return f.view(pr), nil
}

// Reviews lists its reviews, oldest first.
func (f *FakeForge) Reviews(ctx context.Context, number int) ([]forge.Review, error) {
	if err := f.W.gate(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]forge.Review(nil), f.reviews[number]...), nil
}

// Merge merges only an open, mergeable pull request whose head is still
// headSHA, as branch protection and the forges' "expected head" do.
func (f *FakeForge) Merge(ctx context.Context, number int, headSHA, _ string) (string, error) {
	if err := f.W.gate(ctx); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, err := f.get(number)
	if err != nil {
		return "", err
	}
	switch {
	case pr.State == forge.PullRequestMerged:
		return pr.MergeCommit, nil
	case pr.State == forge.PullRequestClosed:
		return "", fmt.Errorf("%w: pull request #%d is closed", fault.ErrBlocked, number)
	case pr.HeadSHA != headSHA:
		return "", fmt.Errorf("%w: the head of #%d is %s, not %s", fault.ErrBlocked, number, pr.HeadSHA, headSHA)
	case f.MergeRefusal != "":
		return "", fmt.Errorf("%w: %s", fault.ErrBlocked, f.MergeRefusal)
	case !f.mergeable(pr) && f.ProtectionAtMerge:
		return "", fmt.Errorf("%w: Does not have enough approvals", fault.ErrForgeNotReady)
	case !f.mergeable(pr):
		return "", fmt.Errorf("%w: branch protection requires %d approving review(s) of %s", fault.ErrBlocked, f.RequiredReviews, pr.HeadSHA)
	}
	f.Merges++
	f.merge(pr, f.Login)
	return pr.MergeCommit, nil
}

// Where names the fake repository.
func (f *FakeForge) Where() string { return "forge.test/team/env" }

// Approve records login's approving review of the pull request's current
// head.
func (f *FakeForge) Approve(number int, login string) {
	f.Review(number, login, forge.ReviewApproved)
}

// Review records login's review of the pull request's current head.
func (f *FakeForge) Review(number int, login string, state forge.ReviewState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, err := f.get(number)
	if err != nil {
		panic(err)
	}
	rs := f.reviews[number]
	f.reviews[number] = append(rs, forge.Review{ID: int64(len(rs) + 1), Login: login, State: state, CommitSHA: pr.HeadSHA, At: f.clock.Now()})
}

// Push moves the pull request's head branch to a new commit, as a person
// pushing to it would.
func (f *FakeForge) Push(number int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, _ := f.get(number)
	sha := hex64(pr.HeadSHA + "+push")[:40]
	pr.HeadSHA = sha
	f.W.mu.Lock()
	f.W.Branches[pr.Head] = sha
	f.W.mu.Unlock()
	return sha
}

// Close closes the pull request without merge; Reopen opens it again.
func (f *FakeForge) Close(number int) { f.setState(number, forge.PullRequestClosed) }

// Reopen reopens a closed pull request.
func (f *FakeForge) Reopen(number int) { f.setState(number, forge.PullRequestOpen) }

// MergeByHand merges it as login on the forge's web page.
func (f *FakeForge) MergeByHand(number int, login string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, _ := f.get(number)
	f.merge(pr, login)
	return pr.MergeCommit
}

// PullRequests are the pull requests opened, as they are now.
func (f *FakeForge) PullRequests() []forge.PullRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []forge.PullRequest
	for _, pr := range f.prs {
		out = append(out, f.view(pr))
	}
	return out
}

func (f *FakeForge) setState(number int, s forge.PullRequestState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, _ := f.get(number)
	pr.State = s
}

func (f *FakeForge) get(number int) (*forge.PullRequest, error) {
	if number < 1 || number > len(f.prs) {
		return nil, fmt.Errorf("%w: no pull request #%d", fault.ErrNotFound, number)
	}
	return f.prs[number-1], nil
}

// merge moves the environment branch to a merge commit; the application
// then starts rolling it out, as Argo CD would.
func (f *FakeForge) merge(pr *forge.PullRequest, by string) {
	pr.State, pr.MergedBy, pr.MergedAt = forge.PullRequestMerged, by, f.clock.Now()
	pr.MergeCommit = hex64("merge " + pr.HeadSHA)[:40]
	env := strings.Split(pr.Head, "/")[1]
	f.W.mu.Lock()
	defer f.W.mu.Unlock()
	if f.W.Landed == nil {
		f.W.Landed = map[string]string{}
	}
	f.W.Landed[env] = pr.MergeCommit
	f.W.App.SyncStatus = appstate.SyncOutOfSync
	f.W.App.Health = appstate.HealthProgressing
}

func (f *FakeForge) mergeable(pr *forge.PullRequest) bool {
	approved := map[string]bool{}
	for _, r := range f.reviews[pr.Number] {
		approved[r.Login] = r.State == forge.ReviewApproved && r.CommitSHA == pr.HeadSHA
	}
	n := 0
	for _, ok := range approved {
		if ok {
			n++
		}
	}
	return pr.State == forge.PullRequestOpen && n >= f.RequiredReviews
}

// view is the pull request as the forge reports it now.
func (f *FakeForge) view(pr *forge.PullRequest) forge.PullRequest {
	v := *pr
	v.Mergeable = f.mergeable(pr) || (f.ProtectionAtMerge && v.State == forge.PullRequestOpen)
	if !v.Mergeable && v.State == forge.PullRequestOpen {
		v.Blocker = fmt.Sprintf("branch protection requires %d approving review(s)", f.RequiredReviews)
	}
	return v
}

// FakeForgeOpener is a fake forge.Opener handing out one fake
// forge and remembering the review settings it was asked for.
type FakeForgeOpener struct {
	Forge  *FakeForge
	mu     sync.Mutex
	Opened []forge.EnvRepoReview
}

// OpenForge returns the fake forge.
func (o *FakeForgeOpener) OpenForge(_ context.Context, r forge.EnvRepoReview) (forge.Forge, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.Opened = append(o.Opened, r)
	return o.Forge, nil
}
