package gitrepo

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Credentials finds the user name and password (a token, most often) for
// an http(s) address, as git's credential helper does for git push. It
// returns empty strings when it knows none.
type Credentials func(ctx context.Context, u *url.URL) (user, password string, err error)

// authOf is what l's fetches and pushes authenticate with before anyone
// asked: Options.Auth, or the credentials found for l earlier in this
// process, or nothing (go-git then uses the URL's own userinfo or an SSH
// agent).
func (a *Adapter) authOf(l location) transport.AuthMethod {
	if a.auth != nil {
		return a.auth
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.found[l.key()]
}

// remote runs one fetch or push of l. When origin asks for credentials
// that relcap was not given (an http(s) URL without userinfo, no
// Options.Auth), it asks Options.Credentials for the URL's host once and
// runs it again with them: the way git itself asks its credential helper
// only when the server wants one, so a public repository is fetched
// without any.
func (a *Adapter) remote(ctx context.Context, l location, op func(transport.AuthMethod) error) error {
	auth := a.authOf(l)
	err := op(auth)
	if auth != nil || !errors.Is(err, transport.ErrAuthenticationRequired) || !a.mayAsk(l) {
		return err
	}
	u, perr := url.Parse(l.url)
	if perr != nil {
		return err
	}
	user, password, cerr := a.credentials(ctx, &url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimPrefix(u.Path, "/")})
	if cerr != nil || password == "" {
		return err
	}
	if user == "" {
		// Forges take a token as the password of any user name.
		user = "relcap"
	}
	found := &githttp.BasicAuth{Username: user, Password: password}
	a.mu.Lock()
	a.found[l.key()] = found
	a.mu.Unlock()
	return op(found)
}

// mayAsk reports whether l's credentials may come from Options.Credentials:
// an http(s) URL that carries none itself.
func (a *Adapter) mayAsk(l location) bool {
	if a.credentials == nil || l.url == "" || l.secret != "" {
		return false
	}
	scheme, _, _ := strings.Cut(l.url, "://")
	return scheme == "http" || scheme == "https"
}
