package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
)

// withReview is minimalConfig with review as staging's envrepo.review.
func withReview(t *testing.T, review string) string {
	return edit(t, minimalConfig, "format: kustomize}", "format: kustomize,\n              review: "+review+"}")
}

func TestParseReviewDefaultsAndKeys(t *testing.T) {
	t.Parallel()
	p, err := Parse("/repo/relcap.yaml", []byte(minimalConfig))
	require.NoError(t, err)
	require.Equal(t, forge.EnvRepoReview{Via: forge.ReviewByPush}, p.Environments[0].EnvRepo.Review, "via push unless said otherwise")

	p, err = Parse("/repo/relcap.yaml", []byte(withReview(t, "{via: pull_request, forge: github, url: https://github.example.com/team/env/}")))
	require.NoError(t, err)
	require.Equal(t, forge.EnvRepoReview{Via: forge.ReviewByPullRequest, Forge: forge.GitHub, URL: "https://github.example.com/team/env",
		Merge: forge.MergeByRelcap, Approvals: forge.ApprovalsFromForge}, p.Environments[0].EnvRepo.Review)

	p, err = Parse("/repo/relcap.yaml", []byte(withReview(t, `{via: pull_request, forge: gitlab, url: https://gitlab.example.com/group/sub/env,
                token_env: GITLAB_TOKEN, ca_file: certs/ca.pem, merge: person, approvals: both, users: {bob-gl: bob, "carol.x": carol}}`)))
	require.NoError(t, err)
	require.Equal(t, forge.EnvRepoReview{Via: forge.ReviewByPullRequest, Forge: forge.GitLab, URL: "https://gitlab.example.com/group/sub/env",
		TokenEnv: "GITLAB_TOKEN", CAFile: filepath.Join("/repo", "certs", "ca.pem"), Merge: forge.MergeByPerson, Approvals: forge.ApprovalsFromBoth,
		Users: []forge.User{{Login: "bob-gl", Principal: "bob"}, {Login: "carol.x", Principal: "carol"}}}, p.Environments[0].EnvRepo.Review)
}

func TestParseReviewProblems(t *testing.T) {
	t.Parallel()
	const field = "environments[0].envrepo.review"
	tests := []struct {
		name, review string
		want         []string
	}{
		{"token in clear", "{via: pull_request, forge: gitea, url: https://git.example.com/team/env, token: s3cr3t-value}",
			[]string{field + ".token: a forge token is never written in relcap.yaml: remove it (and revoke it if this file was shared) and name the environment variable holding it with token_env"}},
		{"unknown via", "{via: pr}", []string{field + `.via: want push or pull_request, got "pr"`}},
		{"misspelt forge", "{via: pull_request, forge: gittea, url: https://git.example.com/team/env}", []string{field + `.forge: want gitea or github or gitlab, got "gittea" (did you mean "gitea"?)`}},
		{"forge and url required", "{via: pull_request}", []string{`missing required key "forge" (gitea, github or gitlab)`, `missing required key "url" (the repository's web address`}},
		{"url without repository", "{via: pull_request, forge: gitea, url: https://git.example.com}", []string{field + ".url: names no repository; want the repository's web address, https://HOST/OWNER/REPO"}},
		{"url with credentials", "{via: pull_request, forge: gitea, url: 'https://bot:hunter2@git.example.com/team/env'}", []string{field + ".url: must not carry credentials: name the environment variable holding the token with token_env"}},
		{"url without scheme", "{via: pull_request, forge: gitea, url: git.example.com/team/env}", []string{field + ".url: want an http or https address"}},
		{"token_env not a name", "{via: pull_request, forge: gitea, url: https://git.example.com/team/env, token_env: glpat-abc}", []string{field + `.token_env: want the name of the environment variable holding the forge's token, like GITEA_TOKEN, got "glpat-abc"`}},
		{"merge", "{via: pull_request, forge: gitea, url: https://git.example.com/team/env, merge: auto}", []string{field + `.merge: want relcap or person, got "auto"`}},
		{"approvals", "{via: pull_request, forge: gitea, url: https://git.example.com/team/env, approvals: relcap}", []string{field + `.approvals: want forge or both, got "relcap"`}},
		{"users not a mapping", "{via: pull_request, forge: gitea, url: https://git.example.com/team/env, users: [bob]}", []string{field + ".users: want a mapping of forge accounts to principals, e.g. users: {bob-gh: bob}, got a list"}},
		{"user without principal", "{via: pull_request, forge: gitea, url: https://git.example.com/team/env, users: {bob-gh: ''}}", []string{field + ".users.bob-gh: want the principal of the people file this account is"}},
		{"forge keys with via push", "{forge: gitea, users: {a: b}}", []string{field + ".forge: is only used with via: pull_request; remove it, or set via: pull_request", field + ".users: is only used with via: pull_request"}},
		{"missing ca_file", "{via: pull_request, forge: gitea, url: https://git.example.com/team/env, ca_file: missing.pem}", []string{field + ".ca_file: file /repo/missing.pem does not exist; create it or fix the path (relative to relcap.yaml)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("/repo/relcap.yaml", []byte(withReview(t, tt.review)), WithStat(fakeStat))
			require.ErrorIs(t, err, fault.ErrUsage)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
			require.NotContains(t, err.Error(), "s3cr3t-value", "a token is never repeated")
			require.NotContains(t, err.Error(), "hunter2", "a password is never repeated")
		})
	}
}

func TestLoadChecksForgeUsersAgainstThePeopleFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := strings.Replace(withReview(t, "{via: pull_request, forge: gitea, url: https://git.example.com/team/env, users: {bob-git: bob, eve-git: eve, ops-git: ops@example.com}}"),
		"environments:", "people: allowed_signers\nenvironments:", 1)
	cfg = strings.Replace(cfg, "path: ../env", "path: env", 1)
	writeTree(t, dir, map[string]string{
		"relcap.yaml":     cfg,
		"ownership.yaml":  "version: 1\nrules:\n  - match: {kind: Namespace}\n    owner: terraform\n",
		"allowed_signers": "# the team\nalice,bob ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA\n\"*@example.com\" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB\n",
		"infra/":          "",
		"env/":            "",
	})
	_, err := Load(filepath.Join(dir, "relcap.yaml"))
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), `environments[0].envrepo.review.users.eve-git: principal "eve" is not in the people file `+filepath.Join(dir, "allowed_signers")+`; add them there or fix the name`)
	require.NotContains(t, err.Error(), "bob-git")
	require.NotContains(t, err.Error(), "ops-git", "a wildcard principal of the people file matches")
}
