// Package forgeurl says where a forge repository is and how to reach it:
// it reads the repository address of envrepo.review.url
// (https://host/owner/repo, GitLab groups nesting), which the forge
// adapters turn into their API's base address and repository name, and
// builds the HTTP client that trusts envrepo.review.ca_file.
package forgeurl

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/secret"
)

// Repo is a forge repository's web address, taken apart.
type Repo struct {
	// Base is scheme://host[:port]. A forge served under a path prefix
	// (https://host/gitlab/group/repo) cannot be told apart from a nested
	// group, so the whole path is the repository's.
	Base string
	// Host is host[:port], for messages.
	Host string
	// Path is the repository's path on the forge without slashes at the
	// ends or a .git suffix: owner/repo, or group/sub/repo on GitLab.
	Path string
}

// Web is the repository's web page.
func (r Repo) Web() string { return r.Base + "/" + r.Path }

// Parse reads raw, the repository's web address (https://host/owner/repo,
// with or without .git, and http:// for a forge without TLS). minSegments
// is the least number of path segments the forge's repositories have (2:
// owner/repo); more are kept in Path (GitLab's nested groups). Errors
// wrap fault.ErrUsage and name envrepo.review.url; user information
// in the address (a token written into it) is refused and never echoed.
func Parse(raw string, minSegments int) (Repo, error) {
	raw = strings.TrimSpace(raw)
	bad := func(why string) (Repo, error) {
		return Repo{}, fmt.Errorf("%w: envrepo.review.url %s: %s", fault.ErrUsage, display(raw), why)
	}
	if raw == "" {
		return Repo{}, fmt.Errorf("%w: envrepo.review.url is empty: set it to the repository's web address (https://host/owner/repo)", fault.ErrUsage)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("not an http(s) URL: write it as https://host/owner/repo")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return bad("the scheme must be https:// (or http:// for a forge without TLS); an ssh address is the git remote, not the forge's web address")
	}
	if u.User != nil {
		return Repo{}, fmt.Errorf("%w: envrepo.review.url must not carry credentials: credentials do not belong in the address; remove the user and password from it and name the token's variable in envrepo.review.token_env", fault.ErrUsage)
	}
	if u.Host == "" || u.Hostname() == "" {
		return bad("no host: write it as https://host/owner/repo")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return bad("no query or fragment: write it as https://host/owner/repo")
	}
	// One slash trimmed at each end: an empty segment (//owner/repo) is
	// refused, not read as another address.
	p := strings.TrimSuffix(strings.TrimPrefix(u.Path, "/"), "/")
	p = strings.TrimSuffix(p, ".git")
	if strings.HasSuffix(p, "/") {
		return bad("no repository name before .git")
	}
	segs := strings.Split(p, "/")
	if p == "" || len(segs) < minSegments {
		return bad(fmt.Sprintf("the path must name the repository (%s)", strings.Repeat("group/", max(minSegments, 2)-2)+"owner/repo"))
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return bad("the path has an empty or relative segment")
		}
	}
	return Repo{Base: u.Scheme + "://" + u.Host, Host: u.Host, Path: strings.Join(segs, "/")}, nil
}

// display shows an address in an error without any user information it
// may carry.
func display(raw string) string {
	return fmt.Sprintf("%q", secret.RedactURL(raw))
}
