package gitcred

import (
	"net/url"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFillReadsGitsCredentialHelper(t *testing.T) {
	h := Helper{Env: []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=!f() { test \"$1\" = get && echo username=captain && echo password=s3cret; }; f"}}
	user, password, err := h.Fill(t.Context(), &url.URL{Scheme: "https", Host: "git.example.com", Path: "team/env.git"})
	require.NoError(t, err)
	require.Equal(t, "captain", user)
	require.Equal(t, "s3cret", password)
	password, err = h.Password(t.Context(), &url.URL{Scheme: "https", Host: "git.example.com", Path: "ignored"})
	require.NoError(t, err)
	require.Equal(t, "s3cret", password)
}

func TestFillWithoutAHelperHasNoPassword(t *testing.T) {
	h := Helper{Env: []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}}
	_, password, err := h.Fill(t.Context(), &url.URL{Scheme: "https", Host: "git.example.com"})
	if err == nil {
		require.Empty(t, password)
	}
}
