package main

import (
	"context"
	"net/url"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/gitcred"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/secret"
)

// stubForge stands for an adapter: the opener's tests are about the token
// and the registry, not about a forge.
type stubForge struct {
	forge.Forge
	opts forgeOptions
}

func (s stubForge) Where() string { return s.opts.Review.URL }

func stubConstructors() map[forge.Kind]forgeConstructor {
	return map[forge.Kind]forgeConstructor{forge.Gitea: func(o forgeOptions) (forge.Forge, error) { return stubForge{opts: o}, nil }}
}

func TestForgeOpenerReadsTheTokenFromTokenEnvAndMasksIt(t *testing.T) {
	t.Parallel()
	io, _, _ := testIO("GITEA_TOKEN=  tok-123456789  ")
	secrets := secret.NewSet()
	o := &forgeOpener{constructors: stubConstructors(), getenv: io.Getenv, secrets: secrets,
		credential: func(context.Context, *url.URL) (string, error) {
			t.Fatal("the credential helper is not asked when token_env is set")
			return "", nil
		}}
	r := forge.EnvRepoReview{Via: forge.ReviewByPullRequest, Forge: forge.Gitea, URL: "https://git.example.com/team/env", TokenEnv: "GITEA_TOKEN"}
	f, err := o.OpenForge(t.Context(), r)
	require.NoError(t, err)
	require.Equal(t, "tok-123456789", f.(stubForge).opts.Token)
	require.Equal(t, "token: "+secret.Mask, secrets.Scrub("token: tok-123456789"))
	again, err := o.OpenForge(t.Context(), r)
	require.NoError(t, err)
	require.Equal(t, f, again, "one adapter per repository")

	_, err = (&forgeOpener{constructors: stubConstructors(), getenv: func(string) string { return "" }, secrets: secret.NewSet()}).OpenForge(t.Context(), r)
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "$GITEA_TOKEN (envrepo.review.token_env) is empty or unset")
}

func TestForgeOpenerAsksGitsCredentialHelper(t *testing.T) {
	t.Parallel()
	// A real `git credential fill`, with a helper configured through
	// git's environment the way a user's ~/.gitconfig would.
	env := []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=!f() { test \"$1\" = get && echo username=bot && echo password=cred-987654321; }; f"}
	secrets := secret.NewSet()
	o := &forgeOpener{constructors: stubConstructors(), getenv: func(string) string { return "" }, credential: gitcred.Helper{Env: env}.Password, secrets: secrets}
	f, err := o.OpenForge(t.Context(), forge.EnvRepoReview{Forge: forge.Gitea, URL: "https://git.example.com/team/env"})
	require.NoError(t, err)
	require.Equal(t, "cred-987654321", f.(stubForge).opts.Token)
	require.True(t, secrets.Contains("x cred-987654321 y"))

	// No helper: a clear error, no prompt.
	bare := &forgeOpener{constructors: stubConstructors(), getenv: func(string) string { return "" }, secrets: secret.NewSet(),
		credential: gitcred.Helper{Env: []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}}.Password}
	_, err = bare.OpenForge(t.Context(), forge.EnvRepoReview{Forge: forge.Gitea, URL: "https://git.example.com/team/env"})
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "no gitea token for git.example.com: git's credential helper was asked")
	require.ErrorContains(t, err, "envrepo.review.token_env")
}

func TestForgeOpenerWithoutAnAdapterForTheKindSaysSo(t *testing.T) {
	t.Parallel()
	o := &forgeOpener{constructors: stubConstructors(), getenv: func(string) string { return "t" }, secrets: secret.NewSet()}
	_, err := o.OpenForge(t.Context(), forge.EnvRepoReview{Forge: forge.GitLab, URL: "https://gitlab.example.com/g/env", TokenEnv: "T"})
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "this relcap has no gitlab adapter for envrepo.review.forge (it knows gitea)")
}

func TestGitPushCredentialsComeFromGitsHelperAndAreMasked(t *testing.T) {
	t.Parallel()
	io, _, _ := testIO("GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(), "PATH="+os.Getenv("PATH"),
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=!f() { test \"$1\" = get && echo username=captain && echo password=push-cred-24680135; }; f")
	a := &app{io: io, secrets: secret.NewSet()}
	user, password, err := a.gitPushCredentials()(t.Context(), &url.URL{Scheme: "https", Host: "git.example.com", Path: "team/env.git"})
	require.NoError(t, err)
	require.Equal(t, "captain", user)
	require.Equal(t, "push-cred-24680135", password)
	require.True(t, a.secrets.Contains("pushed with push-cred-24680135"), "masked as soon as read")
}
