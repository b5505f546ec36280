package secret_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/secret"
)

var errWrapped = errors.New("not found")

func TestScrubKeepsTheChainAndHidesTheSecret(t *testing.T) {
	t.Parallel()
	set := secret.NewSet("ghp_abcdef")
	err := set.ScrubError(fmt.Errorf("proxy said: Bearer ghp_abcdef: %w", errWrapped))
	require.ErrorIs(t, err, errWrapped)
	require.False(t, strings.Contains(err.Error(), "ghp_abcdef"), err.Error())
	plain := errors.New("nothing to hide")
	require.Same(t, plain, set.ScrubError(plain))
	require.NoError(t, set.ScrubError(nil))
}

func TestLearnCommandLineTakesThePasswordOfEveryURL(t *testing.T) {
	t.Parallel()
	set := secret.NewSet()
	set.LearnCommandLine("postgres://u:fromtheenv@db/relcap", []string{"plan", "--ledger=postgres://u:flagvalue1@db/x", "postgres://u:positional@db/y"})
	for _, pw := range []string{"fromtheenv", "flagvalue1", "positional"} {
		require.True(t, set.Contains("x "+pw+" y"), pw)
	}
}

func TestLearnCredentialsReadsTheNamedVariablesAndURLs(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TOKEN": "  tok-en-value\n", "EMPTY": ""}
	set := secret.NewSet()
	set.LearnCredentials(secret.Credentials{Env: []string{"TOKEN", "EMPTY", "UNSET"}, URLs: []string{"https://u:urlpassword@git.example/env.git"}},
		func(k string) string { return env[k] })
	require.True(t, set.Contains("tok-en-value"))
	require.True(t, set.Contains("urlpassword"))
}
