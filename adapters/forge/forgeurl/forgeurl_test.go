package forgeurl

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw       string
		min       int
		base, pth string
	}{
		{"https://github.com/acme/env", 2, "https://github.com", "acme/env"},
		{"https://github.com/acme/env.git/", 2, "https://github.com", "acme/env"},
		{" https://ghe.example.com/acme/env ", 2, "https://ghe.example.com", "acme/env"},
		{"https://gitlab.example.com/group/sub/env", 2, "https://gitlab.example.com", "group/sub/env"},
		{"http://127.0.0.1:3000/acme/env", 2, "http://127.0.0.1:3000", "acme/env"},
	} {
		r, err := Parse(tc.raw, tc.min)
		require.NoError(t, err, tc.raw)
		require.Equal(t, tc.base, r.Base, tc.raw)
		require.Equal(t, tc.pth, r.Path, tc.raw)
		require.Equal(t, tc.base+"/"+tc.pth, r.Web())
	}
}

func TestParseRefusesAddressesThatNameNoRepositoryOrCarryCredentials(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"":                                       "envrepo.review.url is empty",
		"git@github.com:acme/env.git":            "envrepo.review.url",
		"ssh://git@github.com/acme/env":          "scheme must be https://",
		"https://github.com/acme":                "must name the repository",
		"https:///acme/env":                      "no host",
		"https://github.com/acme/env?x=1":        "query",
		"https://github.com/acme/../env":         "relative segment",
		"https://x-access:s3cr3t@github.com/a/b": "must not carry credentials",
	} {
		_, err := Parse(raw, 2)
		require.ErrorIs(t, err, fault.ErrUsage, raw)
		require.Contains(t, err.Error(), want, raw)
		require.NotContains(t, err.Error(), "s3cr3t")
	}
}

func TestHTTPClientRefusesAMissingOrEmptyCAFile(t *testing.T) {
	t.Parallel()
	_, err := HTTPClient(nil, t.TempDir()+"/none.pem", 0)
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), "envrepo.review.ca_file")
}
