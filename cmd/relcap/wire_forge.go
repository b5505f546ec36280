package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/relcap/relcap/adapters/forge/gitea"
	"github.com/relcap/relcap/adapters/forge/github"
	"github.com/relcap/relcap/adapters/forge/gitlab"
	"github.com/relcap/relcap/adapters/gitcred"
	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/secret"
)

// forgeOptions is what a forge adapter is built from: the environment's
// review settings (the repository's URL, the CA file) and the API token,
// already masked in the process's secret set.
type forgeOptions struct {
	Review  forge.EnvRepoReview
	Token   string
	Secrets *secret.Set
}

// forgeConstructor builds one kind of forge adapter.
type forgeConstructor func(forgeOptions) (forge.Forge, error)

// forgeConstructors are the forge adapters this build has, by kind: the one
// place adapters/forge/{gitea,github,gitlab} are wired in.
var forgeConstructors = map[forge.Kind]forgeConstructor{
	forge.Gitea: func(o forgeOptions) (forge.Forge, error) {
		return gitea.New(gitea.Options{URL: o.Review.URL, Token: o.Token, CAFile: o.Review.CAFile})
	},
	forge.GitHub: func(o forgeOptions) (forge.Forge, error) {
		return github.New(github.Options{URL: o.Review.URL, Token: o.Token, TokenEnv: o.Review.TokenEnv, CAFile: o.Review.CAFile})
	},
	forge.GitLab: func(o forgeOptions) (forge.Forge, error) {
		return gitlab.New(gitlab.Options{URL: o.Review.URL, Token: o.Token, TokenEnv: o.Review.TokenEnv, CAFile: o.Review.CAFile})
	},
}

// forgeOpener is the forge.Opener of this process: it finds the
// token (envrepo.review.token_env, else git's credential helper for the
// URL's host), masks it at once, and builds the adapter of the review's
// kind, once per repository.
type forgeOpener struct {
	constructors map[forge.Kind]forgeConstructor
	getenv       func(string) string
	// credential asks git's credential helper for the password of an
	// address; a field so tests can count the asks.
	credential func(ctx context.Context, u *url.URL) (string, error)
	secrets    *secret.Set

	mu     sync.Mutex
	opened map[string]forge.Forge
}

var _ forge.Opener = (*forgeOpener)(nil)

// forges is this invocation's forge opener.
func (a *app) forges() *forgeOpener {
	return &forgeOpener{constructors: forgeConstructors, getenv: a.io.Getenv, credential: gitcred.Helper{Env: a.io.Env}.Password, secrets: a.secrets}
}

// OpenForge returns the forge adapter of r.
func (o *forgeOpener) OpenForge(ctx context.Context, r forge.EnvRepoReview) (forge.Forge, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	key := string(r.Forge) + " " + r.URL
	if f, ok := o.opened[key]; ok {
		return f, nil
	}
	build, ok := o.constructors[r.Forge]
	if !ok {
		return nil, fmt.Errorf("%w: this relcap has no %s adapter for envrepo.review.forge (it knows %s); use a build with it, or via: push", fault.ErrUsage, r.Forge, o.kinds())
	}
	u, err := url.Parse(r.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%w: envrepo.review.url is not a repository address; want https://HOST/OWNER/REPO", fault.ErrUsage)
	}
	token, err := o.token(ctx, r, u)
	if err != nil {
		return nil, err
	}
	f, err := build(forgeOptions{Review: r, Token: token, Secrets: o.secrets})
	if err != nil {
		return nil, fmt.Errorf("%s forge at %s: %w", r.Forge, u.Host, err)
	}
	if o.opened == nil {
		o.opened = map[string]forge.Forge{}
	}
	o.opened[key] = f
	return f, nil
}

// token reads the forge's API token and adds it to the secret set before
// anything else can print it.
func (o *forgeOpener) token(ctx context.Context, r forge.EnvRepoReview, u *url.URL) (string, error) {
	if r.TokenEnv != "" {
		v := strings.TrimSpace(o.getenv(r.TokenEnv))
		o.secrets.Add(v)
		if v == "" {
			return "", fmt.Errorf("%w: the %s token for %s: $%s (envrepo.review.token_env) is empty or unset; set it to an API token of the account relcap opens pull requests as", fault.ErrUsage, r.Forge, u.Host, r.TokenEnv)
		}
		return v, nil
	}
	v, err := o.credential(ctx, u)
	v = strings.TrimSpace(v)
	o.secrets.Add(v)
	if err != nil || v == "" {
		why := "it has none"
		if err != nil {
			why = err.Error()
		}
		return "", fmt.Errorf("%w: no %s token for %s: git's credential helper was asked (%s); store one there (git credential approve) or name the environment variable holding it with envrepo.review.token_env",
			fault.ErrUsage, r.Forge, u.Host, why)
	}
	return v, nil
}

func (o *forgeOpener) kinds() string {
	var ks []string
	for _, k := range []forge.Kind{forge.Gitea, forge.GitHub, forge.GitLab} {
		if _, ok := o.constructors[k]; ok {
			ks = append(ks, string(k))
		}
	}
	if len(ks) == 0 {
		return "none"
	}
	return strings.Join(ks, ", ")
}

// gitPushCredentials is what the environment repository adapter asks when
// an http(s) origin wants credentials: git's credential helper, the one
// `git push` uses, its password masked the moment it is read.
func (a *app) gitPushCredentials() gitrepo.Credentials {
	helper := gitcred.Helper{Env: a.io.Env}
	return func(ctx context.Context, u *url.URL) (string, string, error) {
		user, password, err := helper.Fill(ctx, u)
		a.secrets.Add(strings.TrimSpace(password))
		return user, password, err
	}
}
