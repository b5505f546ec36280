package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/secret"
)

// translate turns client-go's merge request into relcap's.
func translate(m *gl.BasicMergeRequest) forge.PullRequest {
	pr := forge.PullRequest{
		Number: int(m.IID), URL: m.WebURL, Title: m.Title,
		Head: m.SourceBranch, HeadSHA: m.SHA, Base: m.TargetBranch,
	}
	if m.Author != nil {
		pr.Author = m.Author.Username
	}
	switch m.State {
	case "merged":
		pr.State = forge.PullRequestMerged
		pr.MergeCommit = mergeCommit(m)
		// merge_user (GitLab 14.7 and later) replaces the deprecated
		// merged_by.
		if m.MergeUser != nil {
			pr.MergedBy = m.MergeUser.Username
		}
		if m.MergedAt != nil {
			pr.MergedAt = m.MergedAt.UTC()
		}
	case "closed":
		pr.State = forge.PullRequestClosed
	case "locked":
		// locked is the short state of a merge in progress.
		pr.State = forge.PullRequestOpen
		pr.Blocker = "gitlab is merging it (state locked)"
	default: // opened
		pr.State = forge.PullRequestOpen
		pr.Mergeable, pr.Blocker = mergeability(m)
	}
	return pr
}

// mergeCommit is the commit the target branch points at after the merge:
// the merge commit; with a fast-forward merge method there is none, and
// the branch is at the squash commit when squashed, else at the head.
func mergeCommit(m *gl.BasicMergeRequest) string {
	switch {
	case m.MergeCommitSHA != "":
		return m.MergeCommitSHA
	case m.SquashCommitSHA != "":
		return m.SquashCommitSHA
	default:
		return m.SHA
	}
}

// blockers are GitLab's detailed_merge_status values that say why a
// merge request cannot be merged now, in relcap's words.
var blockers = map[string]string{
	"not_approved":               "the approvals the project requires are missing",
	"ci_must_pass":               "the pipeline must succeed first",
	"ci_still_running":           "the pipeline is still running",
	"conflict":                   "the source branch conflicts with the target branch",
	"need_rebase":                "the source branch must be rebased on the target branch",
	"discussions_not_resolved":   "open discussions must be resolved",
	"draft_status":               "the merge request is a draft",
	"not_open":                   "the merge request is not open",
	"requested_changes":          "a reviewer requested changes",
	"merge_request_blocked":      "another merge request it depends on is not merged",
	"status_checks_must_pass":    "external status checks must pass",
	"jira_association_missing":   "the title or description must name a Jira issue",
	"security_policy_violations": "security policies are violated",
	"merge_time":                 "it may not be merged before its merge-after time",
	"commits_status":             "the source branch has no commits or is missing",
	"locked_paths":               "paths it changes are locked by another user",
	"locked_lfs_files":           "LFS files it changes are locked by another user",
	"title_regex":                "the title does not match the project's required pattern",
	"checking":                   "gitlab is still checking whether it can be merged",
	"unchecked":                  "gitlab has not checked yet whether it can be merged",
	"preparing":                  "gitlab is still preparing the merge request",
	"approvals_syncing":          "gitlab is still syncing its approvals",
}

// mergeability reads GitLab's verdict, detailed_merge_status (GitLab
// 15.6 and later; client-go v2 no longer reads the deprecated
// merge_status, so an older GitLab reads as not mergeable).
func mergeability(m *gl.BasicMergeRequest) (bool, string) {
	s := m.DetailedMergeStatus
	if s == "" {
		return false, "gitlab does not report detailed_merge_status (GitLab 15.6 or later is needed)"
	}
	if s == "mergeable" {
		return true, ""
	}
	if why, ok := blockers[s]; ok {
		return false, why + " (detailed_merge_status " + s + ")"
	}
	return false, "gitlab does not say it can be merged (detailed_merge_status " + s + ")"
}

// statusOf is the HTTP status of a GitLab error answer, 0 for another
// error.
func statusOf(err error) int {
	var er *gl.ErrorResponse
	if errors.As(err, &er) {
		return er.StatusCode
	}
	return 0
}

// errorText is GitLab's message without the request line client-go puts
// first.
func errorText(er *gl.ErrorResponse) string {
	if er.Message != "" {
		return er.Message
	}
	return http.StatusText(er.StatusCode)
}

// fail turns a client-go error into one that names the project and what
// relcap was doing, maps what the domain reacts to onto its sentinels,
// and holds no token.
func (a *Adapter) fail(doing string, err error) error {
	var er *gl.ErrorResponse
	var out error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		out = fmt.Errorf("%s: %s: %w", a.Where(), doing, err)
	case errors.As(err, &er):
		switch er.StatusCode {
		case http.StatusUnauthorized:
			out = fmt.Errorf("%s: %s: %w: gitlab answered 401 (%s) to the token in %s: set envrepo.review.token_env's variable to a valid access token with the api scope", a.Where(), doing, ErrTokenRejected, errorText(er), a.tokenEnv)
		case http.StatusForbidden:
			out = fmt.Errorf("%s: %s: gitlab answered 403 (%s): the token in %s may not do this; it needs the api scope and at least the Developer role on the project", a.Where(), doing, errorText(er), a.tokenEnv)
		case http.StatusNotFound:
			out = fmt.Errorf("%s: %s: %w: gitlab answered 404 (%s); a private project reads as missing when the token in %s cannot see it", a.Where(), doing, fault.ErrNotFound, errorText(er), a.tokenEnv)
		case http.StatusTooManyRequests:
			out = fmt.Errorf("%s: %s: gitlab's rate limit for the token in %s is spent: %s", a.Where(), doing, a.tokenEnv, errorText(er))
		default:
			out = fmt.Errorf("%s: %s: gitlab answered %d: %s", a.Where(), doing, er.StatusCode, errorText(er))
		}
	default:
		out = fmt.Errorf("%s: %s: %w", a.Where(), doing, err)
	}
	return secret.NewSet(a.token).ScrubError(out)
}
