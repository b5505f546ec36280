package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sdk "code.gitea.io/sdk/gitea"
)

// The lab's Gitea (issue 18): a real forge holding the environment
// repository with a protected main, so promotions through a pull request
// are proven against the forge's own rules.
const (
	// GiteaCaptain owns the environment repository and opens the pull
	// requests (relcap's account); GiteaApprover reviews them.
	GiteaCaptain  = "captain"
	GiteaApprover = "approver"
	// GiteaEnvRepo is the environment repository's name, under the
	// captain: captain/env.
	GiteaEnvRepo = "env"
	// GiteaBranch is the environment branch Gitea protects.
	GiteaBranch = "main"
)

// giteaTokenScopes are what relcap's and the approver's tokens need:
// repository write (push, pull requests, reviews, merge) and reading the
// token's own account.
var giteaTokenScopes = []sdk.AccessTokenScope{"write:repository", "read:user"}

// GiteaState is the lab's Gitea as the state file records it (0600: it
// holds the accounts' passwords and tokens).
type GiteaState struct {
	Version string `json:"version"`
	// URL is Gitea's root (http://127.0.0.1:port); RepoURL the
	// environment repository's web address (envrepo.review.url) and
	// CloneURL its Git address, which Argo CD clones without credentials
	// (the repository is public).
	URL      string      `json:"url"`
	RepoURL  string      `json:"repo_url"`
	CloneURL string      `json:"clone_url"`
	Dir      string      `json:"dir"`
	Config   string      `json:"config"`
	Users    []GiteaUser `json:"users"`
	// Seeded is main's first commit.
	Seeded string `json:"seeded"`
}

// GiteaUser is one Gitea account of the lab.
type GiteaUser struct {
	Login    string `json:"login"`
	Password string `json:"password"`
	Token    string `json:"token"`
}

// User finds an account by login.
func (g GiteaState) User(login string) (GiteaUser, bool) {
	for _, u := range g.Users {
		if u.Login == login {
			return u, true
		}
	}
	return GiteaUser{}, false
}

// giteaEnv is the environment Gitea and its CLI run with. Gitea refuses to
// run as root; as root (this machine image, CI containers) the lab says it
// means it rather than switching users as pgtest does for PostgreSQL:
// Gitea runs git, which runs Gitea's hooks, which reach back into its
// data, so every path it touches (the lab directory under root's home,
// the cache) would have to be readable and writable by the other account,
// while the process listens on loopback only, in a throw-away directory,
// like the lab's etcd and kube-apiserver, which run as root too.
func giteaEnv(dir string) []string {
	env := []string{"HOME=" + filepath.Join(dir, "home"), "GITEA_WORK_DIR=" + dir, "USER=" + currentUser()}
	if os.Geteuid() == 0 {
		env = append(env, "GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true")
	}
	return env
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if os.Geteuid() == 0 {
		return "root"
	}
	return strconv.Itoa(os.Geteuid())
}

// renderGiteaConfig is Gitea's app.ini for the lab: loopback HTTP only,
// SQLite, no SSH, no mail, no registration, nothing fetched from outside.
func renderGiteaConfig(g GiteaBuild, dir string, port int) string {
	root := fmt.Sprintf("http://127.0.0.1:%d/", port)
	return `APP_NAME = relcap lab
RUN_MODE = prod
WORK_PATH = ` + dir + `

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = ` + strconv.Itoa(port) + `
ROOT_URL = ` + root + `
LOCAL_ROOT_URL = ` + root + `
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
APP_DATA_PATH = ` + filepath.Join(dir, "data") + `
; templates, options and locales come from the copied module source
; (no bindata tag); without it Gitea stops at "translation is missing".
STATIC_ROOT_PATH = ` + g.StaticRoot + `

[database]
DB_TYPE = sqlite3
PATH = ` + filepath.Join(dir, "data", "gitea.db") + `
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = ` + filepath.Join(dir, "repositories") + `
DEFAULT_BRANCH = ` + GiteaBranch + `

[security]
INSTALL_LOCK = true

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false
DEFAULT_ALLOW_CREATE_ORGANIZATION = false

[mailer]
ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false

[cron]
ENABLED = false

[session]
PROVIDER = memory

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = ` + filepath.Join(dir, "log") + `
`
}

// giteaComponent writes Gitea's configuration under dir and returns the
// component that serves it on 127.0.0.1:port.
func giteaComponent(g GiteaBuild, dir string, port int) (Component, string, error) {
	for _, d := range []string{"custom/conf", "data", "repositories", "log", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return Component{}, "", err
		}
	}
	ini := filepath.Join(dir, "custom", "conf", "app.ini")
	// Gitea writes its generated secrets (INTERNAL_TOKEN, ...) back here.
	if err := os.WriteFile(ini, []byte(renderGiteaConfig(g, dir, port)), 0o600); err != nil {
		return Component{}, "", err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	return Component{
		Name: "gitea", Path: g.Binary, Dir: dir, Env: giteaEnv(dir), Ports: []int{port},
		Args:  []string{"web", "--config", ini, "--work-path", dir, "--custom-path", filepath.Join(dir, "custom")},
		Ready: httpProbe(nil, url+"/api/v1/version", "", `"version"`),
	}, ini, nil
}

// StartGitea starts the lab's Gitea in dir with l, waits for its API, and
// sets it up: the captain and approver accounts with a token each, the
// public environment repository captain/env seeded with files (path →
// content) on main, the approver a collaborator with write access, and
// main protected (SetupGitea).
func StartGitea(ctx context.Context, l *launcher, g GiteaBuild, dir string, port int, timeout time.Duration, files map[string]string) (GiteaState, error) {
	c, ini, err := giteaComponent(g, dir, port)
	if err != nil {
		return GiteaState{}, err
	}
	if err := l.launchReady(ctx, timeout, c); err != nil {
		return GiteaState{}, err
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return SetupGitea(sctx, g, dir, ini, fmt.Sprintf("http://127.0.0.1:%d", port), files)
}

// SetupGitea creates the lab's accounts, repository and branch protection
// on the Gitea serving base (its configuration ini, its directory dir).
func SetupGitea(ctx context.Context, g GiteaBuild, dir, ini, base string, files map[string]string) (GiteaState, error) {
	st := GiteaState{Version: g.Version, URL: base, Dir: dir, Config: ini,
		RepoURL: base + "/" + GiteaCaptain + "/" + GiteaEnvRepo, CloneURL: base + "/" + GiteaCaptain + "/" + GiteaEnvRepo + ".git"}
	for _, login := range []string{GiteaCaptain, GiteaApprover} {
		u := GiteaUser{Login: login, Password: randomToken()}
		// Accounts through Gitea's own CLI: registration is off and the
		// API needs an admin to create the first admin.
		args := []string{"--config", ini, "--work-path", dir, "admin", "user", "create", "--username", login, "--password", u.Password,
			"--email", login + "@relcap-lab.localhost", "--must-change-password=false"}
		if login == GiteaCaptain {
			args = append(args, "--admin")
		}
		cmd := exec.CommandContext(ctx, g.Binary, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), giteaEnv(dir)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return st, fmt.Errorf("gitea admin user create %s: %w: %s", login, err, strings.TrimSpace(strings.ReplaceAll(string(out), u.Password, "***")))
		}
		basic, err := giteaClient(ctx, base, sdk.SetBasicAuth(login, u.Password))
		if err != nil {
			return st, err
		}
		tok, _, err := basic.CreateAccessToken(sdk.CreateAccessTokenOption{Name: "relcap-lab", Scopes: giteaTokenScopes})
		if err != nil {
			return st, fmt.Errorf("gitea: token for %s: %w", login, err)
		}
		u.Token = tok.Token
		st.Users = append(st.Users, u)
	}
	captain, _ := st.User(GiteaCaptain)
	// The set-up runs with the captain's password: creating a repository
	// needs a user-write scope the tokens (what relcap holds) do not get.
	c, err := giteaClient(ctx, base, sdk.SetBasicAuth(captain.Login, captain.Password))
	if err != nil {
		return st, err
	}
	if _, _, err := c.CreateRepo(sdk.CreateRepoOption{Name: GiteaEnvRepo, Description: "relcap lab: the environment repository",
		Private: false, AutoInit: false, DefaultBranch: GiteaBranch}); err != nil {
		return st, fmt.Errorf("gitea: create %s/%s: %w", GiteaCaptain, GiteaEnvRepo, err)
	}
	// Seeded by a push, before main is protected: the repository's
	// history starts like the git daemon's.
	rev, err := seedGiteaRepo(ctx, dir, st.CloneURL, captain, files)
	if err != nil {
		return st, err
	}
	st.Seeded = rev
	// Gitea handles a push in the background; until it has, the
	// repository counts as empty and has no pull requests (404).
	for {
		r, _, err := c.GetRepo(GiteaCaptain, GiteaEnvRepo)
		if err != nil {
			return st, fmt.Errorf("gitea: read %s/%s: %w", GiteaCaptain, GiteaEnvRepo, err)
		}
		if !r.Empty && r.DefaultBranch == GiteaBranch {
			break
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("gitea: %s/%s still empty after the seeding push: %w", GiteaCaptain, GiteaEnvRepo, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	write := sdk.AccessModeWrite
	if _, err := c.AddCollaborator(GiteaCaptain, GiteaEnvRepo, GiteaApprover, sdk.AddCollaboratorOption{Permission: &write}); err != nil {
		return st, fmt.Errorf("gitea: add %s as collaborator: %w", GiteaApprover, err)
	}
	if _, _, err := c.CreateBranchProtection(GiteaCaptain, GiteaEnvRepo, GiteaProtection()); err != nil {
		return st, fmt.Errorf("gitea: protect %s: %w", GiteaBranch, err)
	}
	return st, nil
}

// GiteaProtection is main's branch protection: nobody pushes to it (not
// even the owner, an admin), a merge needs one approval by someone with
// write access, a request for changes blocks it, new commits dismiss the
// approvals given before them (a pull request changed after approval is
// not merged), and admins cannot override any of it.
func GiteaProtection() sdk.CreateBranchProtectionOption {
	return sdk.CreateBranchProtectionOption{
		RuleName:                GiteaBranch,
		EnablePush:              false,
		EnableMergeWhitelist:    false,
		RequiredApprovals:       1,
		BlockOnRejectedReviews:  true,
		DismissStaleApprovals:   true,
		BlockOnOutdatedBranch:   false,
		BlockAdminMergeOverride: true,
	}
}

// giteaClient is an SDK client of the Gitea at base, with ctx. It skips
// the SDK's version probe: the lab runs the one Gitea it built.
func giteaClient(ctx context.Context, base string, auth sdk.ClientOption) (*sdk.Client, error) {
	c, err := sdk.NewClient(base, auth, sdk.SetContext(ctx), sdk.SetGiteaVersion(""), sdk.SetHTTPClient(&http.Client{Timeout: 30 * time.Second}))
	if err != nil {
		return nil, fmt.Errorf("gitea at %s: %w", base, err)
	}
	return c, nil
}

// seedGiteaRepo pushes one commit holding files to main of the empty
// repository at cloneURL, as u, and returns it.
func seedGiteaRepo(ctx context.Context, dir, cloneURL string, u GiteaUser, files map[string]string) (string, error) {
	work, err := os.MkdirTemp(dir, ".seed-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if err := writeFiles(work, files); err != nil {
		return "", err
	}
	for _, s := range [][]string{{"init", "-q", "-b", GiteaBranch}, {"add", "."}, {"commit", "-q", "-m", "relcap lab: first release"}} {
		if _, err := git(ctx, work, s...); err != nil {
			return "", err
		}
	}
	if _, err := gitAs(ctx, work, u, "push", "-q", cloneURL, GiteaBranch+":"+GiteaBranch); err != nil {
		return "", err
	}
	return git(ctx, work, "rev-parse", "HEAD")
}

// gitAs runs git as a Gitea account over HTTP. The credentials go in an
// http.extraHeader passed through git's environment (GIT_CONFIG_*), so
// they are in no argument list, remote URL or error message.
func gitAs(ctx context.Context, dir string, u GiteaUser, args ...string) (string, error) {
	header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.Login+":"+u.Token))
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=" + u.Login, "-c", "user.email=" + u.Login + "@relcap-lab.localhost",
		"-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0="+header)
	out, err := cmd.CombinedOutput()
	s := strings.TrimSpace(strings.ReplaceAll(string(out), u.Token, "***"))
	if err != nil {
		return s, fmt.Errorf("git %s in %s as %s: %w: %s", strings.Join(args, " "), dir, u.Login, err, s)
	}
	return s, nil
}
