package landing

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/forge"
)

// RequiredForgeReviews is how many approving forge reviews a promotion
// needs: approvals.promotion, and at least one in production, where a
// pull request nobody reviewed must not land on relcap's word.
func RequiredForgeReviews(env workflow.Environment) int {
	n := env.Approvals.Promotion
	if env.Production && n < 1 {
		n = 1
	}
	return n
}

// CountForgeReviews judges each forge account's latest review of a pull
// request: it counts when it approves head (a review of an older commit
// approves what the branch was, not what it is), by someone other than the
// pull request's author and the captain where the environment wants
// approvals distinct from the author, and by one of approvers.promotion
// when that is set. Forge accounts are people through review.PrincipalOf.
func CountForgeReviews(env workflow.Environment, captain string, pr forge.PullRequest, reviews []forge.Review) []forge.ReviewVerdict {
	review := env.EnvRepo.Review
	rule := env.Approvals.Rule(approval.Promotion)
	latest := map[string]int{}
	var out []forge.ReviewVerdict
	for _, r := range reviews {
		// A comment leaves an earlier verdict standing; a later approval,
		// request for changes or dismissal replaces it.
		if r.State == forge.ReviewCommented || r.State == forge.ReviewPending {
			if _, seen := latest[r.Login]; seen {
				continue
			}
		}
		v := forge.ReviewVerdict{Login: r.Login, Principal: review.PrincipalOf(r.Login), State: r.State, Commit: r.CommitSHA, Comment: reviewComment(r.Body)}
		if i, seen := latest[r.Login]; seen {
			out[i] = v
			continue
		}
		latest[r.Login] = len(out)
		out = append(out, v)
	}
	for i := range out {
		v := &out[i]
		switch {
		case v.State != forge.ReviewApproved:
			v.Why = "did not approve (" + string(v.State) + ")"
		case v.Commit != pr.HeadSHA:
			v.Why = fmt.Sprintf("approved commit %s, but the pull request is now at %s: approvals must be renewed on the new commit", workflow.ShortHash(v.Commit), workflow.ShortHash(pr.HeadSHA))
		case rule.DistinctFromAuthor && (v.Login == pr.Author || v.Principal == captain):
			v.Why = fmt.Sprintf("%s opened or captains this promotion and %s requires approval by someone else (approvals.distinct_from_author)", v.Principal, env.Name)
		case len(rule.Approvers) > 0 && !slices.Contains(rule.Approvers, v.Principal):
			v.Why = fmt.Sprintf("%s is not in approvers.promotion (%s)", v.Principal, strings.Join(rule.Approvers, ", "))
		default:
			v.Counted = true
		}
	}
	return out
}

// reviewComment is a review body as a ReviewVerdict keeps it: its first
// non-empty line, control characters dropped (it is the forge user's
// text, shown in a terminal), at most 160 characters.
func reviewComment(body string) string {
	for _, l := range strings.Split(body, "\n") {
		l = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return -1
			}
			return r
		}, strings.TrimSpace(l))
		if l == "" {
			continue
		}
		if r := []rune(l); len(r) > 160 {
			l = string(r[:159]) + "…"
		}
		return l
	}
	return ""
}

// Counted are the verdicts that count.
func counted(vs []forge.ReviewVerdict) []forge.ReviewVerdict {
	var out []forge.ReviewVerdict
	for _, v := range vs {
		if v.Counted {
			out = append(out, v)
		}
	}
	return out
}

// reviewers names counted reviews as login → principal.
func reviewers(vs []forge.ReviewVerdict) []string {
	var out []string
	for _, v := range counted(vs) {
		out = append(out, reviewerName(v))
	}
	return out
}

func reviewerName(v forge.ReviewVerdict) string {
	if v.Principal == v.Login {
		return v.Login
	}
	return v.Login + " → " + v.Principal
}

// verdictNote lists the reviews that did not count, for a message.
func verdictNote(vs []forge.ReviewVerdict) string {
	var parts []string
	for _, v := range vs {
		if !v.Counted {
			parts = append(parts, reviewerName(v)+": "+v.Why)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (not counted: " + strings.Join(parts, "; ") + ")"
}

// hasApprovalOf reports whether someone approved commit.
func hasApprovalOf(vs []forge.ReviewVerdict, commit string) bool {
	for _, v := range vs {
		if v.State == forge.ReviewApproved && v.Commit == commit {
			return true
		}
	}
	return false
}
