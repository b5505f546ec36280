package config

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow/forge"
	"gopkg.in/yaml.v3"
)

// envrepo.review: how an environment repository's changes are reviewed
// and landed. With via: pull_request, relcap opens a pull request on the
// forge and lands through it; the token for the forge's API is read from
// the environment (token_env) or git's credential helper, never from this
// file.

var (
	vias      = []string{string(forge.ReviewByPush), string(forge.ReviewByPullRequest)}
	forges    = []string{string(forge.Gitea), string(forge.GitHub), string(forge.GitLab)}
	merges    = []string{string(forge.MergeByRelcap), string(forge.MergeByPerson)}
	approvals = []string{string(forge.ApprovalsFromForge), string(forge.ApprovalsFromBoth)}
)

func (m *mapNode) review(o options) forge.EnvRepoReview {
	r := forge.EnvRepoReview{Via: forge.ReviewByPush}
	if e, present := m.entries["token"]; present {
		// The value is never repeated: it is a secret.
		m.p.add(e.key, join(m.path, "token"), "a forge token is never written in relcap.yaml: remove it (and revoke it if this file was shared) and name the environment variable holding it with token_env, e.g. token_env: FORGE_TOKEN, or leave token_env out to use git's credential helper")
	}
	if v, ok := m.oneOf("via", vias); ok {
		r.Via = forge.ReviewVia(v)
	}
	if r.Via != forge.ReviewByPullRequest {
		for _, k := range []string{"forge", "url", "token_env", "ca_file", "merge", "approvals", "users"} {
			if e, present := m.entries[k]; present {
				m.p.add(e.key, join(m.path, k), "is only used with via: pull_request; remove it, or set via: pull_request")
			}
		}
		return r
	}
	r.Merge, r.Approvals = forge.MergeByRelcap, forge.ApprovalsFromForge
	if _, ok := m.require("forge", "gitea, github or gitlab"); ok {
		if v, ok := m.oneOf("forge", forges); ok {
			r.Forge = forge.Kind(v)
		}
	}
	if u, n := m.reqStr("url", "the repository's web address, e.g. url: https://git.example.com/team/env"); n != nil {
		if why := forgeURLProblem(u); why != "" {
			m.p.add(n, join(m.path, "url"), "%s", why)
		} else {
			r.URL = strings.TrimRight(u, "/")
		}
	}
	if te, n := m.str("token_env"); n != nil {
		if !envVarName.MatchString(te) {
			m.p.add(n, join(m.path, "token_env"), "want the name of the environment variable holding the forge's token, like GITEA_TOKEN, got %s", quote(te))
		} else {
			r.TokenEnv = te
		}
	}
	if v, n := m.str("ca_file"); n != nil {
		r.CAFile = resolvePath(o.dir, v)
		m.p.checkPath(o, n, join(m.path, "ca_file"), r.CAFile, false, "create it or fix the path (relative to relcap.yaml)")
	}
	if v, ok := m.oneOf("merge", merges); ok {
		r.Merge = forge.MergePolicy(v)
	}
	if v, ok := m.oneOf("approvals", approvals); ok {
		r.Approvals = forge.ReviewApprovals(v)
	}
	r.Users = m.forgeUsers(o)
	return r
}

// oneOf reads an optional string that must be one of want.
func (m *mapNode) oneOf(key string, want []string) (string, bool) {
	v, n := m.str(key)
	if n == nil {
		return "", false
	}
	if slices.Contains(want, v) {
		return v, true
	}
	hint := ""
	if s := suggest(v, want); s != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", s)
	}
	m.p.add(n, join(m.path, key), "want %s, got %s%s", strings.Join(want, " or "), quote(v), hint)
	return "", false
}

// forgeURLProblem says what is wrong with a forge repository address, or
// "" when nothing is. It never repeats the address: it may hold a password.
func forgeURLProblem(s string) string {
	const want = "want the repository's web address, https://HOST/OWNER/REPO (GitLab groups nest)"
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "is not a URL; " + want
	case u.Scheme != "https" && u.Scheme != "http":
		return "want an http or https address; " + want
	case u.User != nil:
		return "must not carry credentials: name the environment variable holding the token with token_env (or leave it out to use git's credential helper)"
	case u.Host == "":
		return "names no host; " + want
	case strings.Count(strings.Trim(u.Path, "/"), "/") < 1 || u.RawQuery != "" || u.Fragment != "":
		return "names no repository; " + want
	}
	return ""
}

// forgeUsers reads users: a mapping of forge accounts to the people
// file's principals, in the order written.
func (m *mapNode) forgeUsers(o options) []forge.User {
	known, haveKnown := m.p.principals(o)
	var users []forge.User
	seen := map[string]int{}
	m.stringPairs("users", "a mapping of forge accounts to principals, e.g. users: {bob-gh: bob}", "a forge account name",
		func(login string, kn, v *yaml.Node, at string) {
			if first, dup := seen[login]; dup {
				m.p.add(kn, at, "duplicate forge account (first at line %d)", first)
				return
			}
			seen[login] = kn.Line
			if v.Kind != yaml.ScalarNode || isNull(v) || v.Value == "" {
				m.p.add(v, at, "want the principal of the people file this account is, got %s", describe(v))
				return
			}
			if haveKnown && !matchesPrincipal(known, v.Value) {
				m.p.add(v, at, "principal %s is not in the people file %s; add them there or fix the name", quote(v.Value), o.people)
				return
			}
			users = append(users, forge.User{Login: login, Principal: v.Value})
		})
	return users
}

// principals are the principal patterns of the people file, read once;
// ok is false when they cannot be read here (Parse, or a missing file,
// which is reported at people).
func (p *parser) principals(o options) ([]string, bool) {
	if o.people == "" || o.readFile == nil {
		return nil, false
	}
	if p.people == nil {
		data, err := o.readFile(o.people)
		if err != nil {
			p.people = &[]string{}
			p.peopleErr = true
		} else {
			list := allowedSignerPrincipals(data)
			p.people = &list
		}
	}
	return *p.people, !p.peopleErr
}

// allowedSignerPrincipals lists the principal patterns of git's
// allowed-signers file: the first field of each line, comma-separated,
// possibly quoted.
func allowedSignerPrincipals(data []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var field string
		if strings.HasPrefix(line, `"`) {
			field, _, _ = strings.Cut(line[1:], `"`)
		} else {
			field, _, _ = strings.Cut(line, " ")
			field, _, _ = strings.Cut(field, "\t")
		}
		for _, pr := range strings.Split(field, ",") {
			if pr = strings.TrimSpace(pr); pr != "" && !strings.HasPrefix(pr, "!") {
				out = append(out, pr)
			}
		}
	}
	return out
}

// matchesPrincipal reports whether one of the people file's principal
// patterns (* and ? wildcards, as ssh's) matches principal.
func matchesPrincipal(patterns []string, principal string) bool {
	for _, pat := range patterns {
		if ok, err := path.Match(pat, principal); (err == nil && ok) || pat == principal {
			return true
		}
	}
	return false
}
