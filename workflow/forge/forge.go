// Package forge holds what relcap knows of a team's forge (GitHub, GitLab,
// Gitea): how an environment's changes are reviewed (envrepo.review), a
// pull request and its reviews as values, what a release keeps of its
// pull request, and the Forge port its adapters implement. It is a leaf,
// apart from the release core, because the core, the landing feature, the
// configuration and the forge adapters all speak these values and none of
// them should need the others (or the core's release machinery) for it.
package forge

import (
	"context"
	"time"
)

// Promotion through the team's forge: where the environment repository's
// main branch is protected, relcap pushes its relcap/<env>/<release>
// branch, opens a pull request carrying the release's evidence, counts the
// forge's reviews, merges through the forge's API when the policy and the
// forge allow it (never force), and converges on the merge commit.

// ReviewVia is how an environment-repository change is reviewed and
// landed (envrepo.review.via).
type ReviewVia string

const (
	// ReviewByPush: relcap lands the change itself, pushing to the
	// environment branch once its own approvals are in (repositories
	// without a forge). The default.
	ReviewByPush ReviewVia = "push"
	// ReviewByPullRequest: the change goes through a pull request on the
	// forge (envrepo.review.forge).
	ReviewByPullRequest ReviewVia = "pull_request"
)

// Kind names a forge relcap has an adapter for.
type Kind string

// The forges relcap speaks to.
const (
	Gitea  Kind = "gitea"
	GitHub Kind = "github"
	GitLab Kind = "gitlab"
)

// MergePolicy says who merges an approved pull request
// (envrepo.review.merge).
type MergePolicy string

const (
	// MergeByRelcap: relcap merges through the forge's API once the
	// approvals are in and the forge says it is mergeable. The default.
	MergeByRelcap MergePolicy = "relcap"
	// MergeByPerson: relcap waits for a person to merge it on the forge.
	MergeByPerson MergePolicy = "person"
)

// ReviewApprovals says which approvals count for a promotion reviewed
// through a pull request (envrepo.review.approvals).
type ReviewApprovals string

const (
	// ApprovalsFromForge: the forge's approving reviews of the reviewed
	// commit, by people mapped to relcap's people, count as the promotion
	// approvals (the forge authenticated them). The default.
	ApprovalsFromForge ReviewApprovals = "forge"
	// ApprovalsFromBoth: approvals.promotion signed relcap approvals and
	// as many approving forge reviews are both required.
	ApprovalsFromBoth ReviewApprovals = "both"
)

// EnvRepoReview is how an environment's repository changes are reviewed
// (envrepo.review in relcap.yaml).
type EnvRepoReview struct {
	Via ReviewVia
	// Forge, URL and TokenEnv, for ReviewByPullRequest: the forge's kind,
	// the repository's web address (https://host/owner/repo; GitLab
	// groups nest), and the environment variable holding the API token
	// (never the token itself; when empty, git's credential helper is
	// asked for the URL's host).
	Forge    Kind
	URL      string
	TokenEnv string
	// CAFile is a PEM file of the authorities the forge's certificate is
	// checked against (a private CA); absolute; empty means the system's.
	CAFile    string
	Merge     MergePolicy
	Approvals ReviewApprovals
	// Users maps forge accounts to principals of the people file; a forge
	// account not listed is the principal of the same name.
	Users []User
}

// User is one forge account and the person it is.
type User struct {
	Login     string // the forge's user name
	Principal string // the people file's principal
}

// PullRequests reports whether changes go through the forge's pull
// requests.
func (r EnvRepoReview) PullRequests() bool { return r.Via == ReviewByPullRequest }

// PrincipalOf is the person a forge account is.
func (r EnvRepoReview) PrincipalOf(login string) string {
	for _, u := range r.Users {
		if u.Login == login {
			return u.Principal
		}
	}
	return login
}

// PullRequestState is where a pull request stands.
type PullRequestState string

const (
	PullRequestOpen   PullRequestState = "open"
	PullRequestClosed PullRequestState = "closed" // closed without merge
	PullRequestMerged PullRequestState = "merged"
)

// PullRequest is a forge's pull (or merge) request, as relcap needs it.
type PullRequest struct {
	Number int              `json:"number"`
	URL    string           `json:"url"` // the web page people open
	State  PullRequestState `json:"state"`
	Title  string           `json:"title"`
	Author string           `json:"author"`
	// Head is the relcap branch and HeadSHA its commit as the forge sees
	// it now; Base is the environment branch.
	Head    string `json:"head"`
	HeadSHA string `json:"head_sha"`
	Base    string `json:"base"`
	// Mergeable is the forge's own verdict (conflicts, required checks,
	// branch protection), and Blocker says why not when it is false and
	// the forge says (empty when it does not).
	Mergeable bool   `json:"mergeable"`
	Blocker   string `json:"blocker,omitempty"`
	// MergeCommit and MergedBy, once merged: the commit the environment
	// branch points at, which Argo CD must sync.
	MergeCommit string    `json:"merge_commit,omitempty"`
	MergedBy    string    `json:"merged_by,omitempty"`
	MergedAt    time.Time `json:"merged_at,omitzero"`
}

// PollInterval is how often the cockpit re-reads a pull request that
// waits for review or merge on the forge (Service.ForgeMoved), re-running
// the promotion step when it moved.
const PollInterval = 5 * time.Second

// PullRequestRecord is what a release keeps of its pull request.
type PullRequestRecord struct {
	Forge  Kind   `json:"forge"`
	Number int    `json:"number"`
	URL    string `json:"url"`
	Head   string `json:"head"` // the relcap branch
	Base   string `json:"base"` // the environment branch
	// HeadSHA is the head commit as last read; Reviews the reviews as last
	// counted against it.
	HeadSHA string           `json:"head_sha,omitempty"`
	State   PullRequestState `json:"state,omitempty"`
	Reviews []ReviewVerdict  `json:"reviews,omitempty"`
	// MergeCommit, MergedBy and ByRelcap, once merged.
	MergeCommit string `json:"merge_commit,omitempty"`
	MergedBy    string `json:"merged_by,omitempty"`
	ByRelcap    bool   `json:"by_relcap,omitempty"`
	// NotReady is the forge's last reason for not merging (ErrForgeNotReady)
	// and NotReadyAt when it said so: the Lander's Moved asks again after a
	// while, as a required check may pass without anything relcap reads
	// changing.
	NotReady   string    `json:"not_ready,omitempty"`
	NotReadyAt time.Time `json:"not_ready_at,omitzero"`
}

// ReviewVerdict is one forge account's latest review and whether it
// counts as a promotion approval, and why not.
type ReviewVerdict struct {
	Login     string      `json:"login"`
	Principal string      `json:"principal"`
	State     ReviewState `json:"state"`
	Commit    string      `json:"commit"`
	Counted   bool        `json:"counted"`
	Why       string      `json:"why,omitempty"`
	// Comment is the first line of what the reviewer wrote, clipped: the
	// captain sees why changes were requested without leaving relcap.
	Comment string `json:"comment,omitempty"`
}

// ReviewState is a forge review's verdict.
type ReviewState string

const (
	ReviewApproved         ReviewState = "approved"
	ReviewChangesRequested ReviewState = "changes_requested"
	ReviewCommented        ReviewState = "commented"
	ReviewDismissed        ReviewState = "dismissed"
	ReviewPending          ReviewState = "pending"
)

// Review is one review of a pull request.
type Review struct {
	ID    int64       `json:"id"`
	Login string      `json:"login"` // the reviewer's forge account
	State ReviewState `json:"state"`
	// CommitSHA is the commit the review was given on: a review of an
	// older commit does not approve a branch that moved since.
	CommitSHA string    `json:"commit_sha"`
	At        time.Time `json:"at"`
	// Body is what the reviewer wrote with it (a request for changes says
	// why); untrusted text from the forge, shown as such.
	Body string `json:"body,omitempty"`
}

// OpenPullRequestRequest opens a pull request of Head into Base.
type OpenPullRequestRequest struct {
	Head, Base  string
	Title, Body string
}

// Forge is one repository on a team's forge. Adapters translate the
// forge's client types; tokens never appear in errors or Where.
type Forge interface {
	// OpenPullRequest opens the pull request of req.Head into req.Base,
	// or returns the open one there is already (idempotent per head
	// branch, so a resumed promotion does not open a second).
	OpenPullRequest(ctx context.Context, req OpenPullRequestRequest) (PullRequest, error)
	// PullRequest reads one as it is now; an unknown number is
	// ErrNotFound.
	PullRequest(ctx context.Context, number int) (PullRequest, error)
	// Reviews lists its reviews, oldest first.
	Reviews(ctx context.Context, number int) ([]Review, error)
	// Merge merges it through the forge's API, never forcing: only while
	// its head is still headSHA (the reviewed commit; otherwise
	// ErrBlocked naming both commits) and the forge accepts it (branch
	// protection, required checks: a refusal is ErrBlocked with the
	// forge's reason). It returns the merge commit. Merging one already
	// merged returns its merge commit.
	Merge(ctx context.Context, number int, headSHA, message string) (string, error)
	// Where names the repository in messages, without credentials.
	Where() string
}

// Opener gives the Forge of an environment's review settings (the
// wiring builds the adapter of r.Forge with the token of r.TokenEnv).
type Opener interface {
	OpenForge(ctx context.Context, r EnvRepoReview) (Forge, error)
}
