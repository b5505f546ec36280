package argocd_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

func TestOptionsForReadsWhatArgoCDUsersSet(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	cases := []struct {
		name    string
		target  workflow.ArgoCDTarget
		env     map[string]string
		want    argocd.Options
		wantErr string
	}{
		{
			name:   "server from relcap.yaml, token from the default variable",
			target: workflow.ArgoCDTarget{Server: "argocd.example.com:443", App: "web-staging", Insecure: true},
			env:    map[string]string{"ARGOCD_SERVER": "ignored:443", "ARGOCD_AUTH_TOKEN": " tok \n"},
			want:   argocd.Options{Server: "argocd.example.com:443", AuthToken: "tok", TokenEnv: "ARGOCD_AUTH_TOKEN", Insecure: true},
		},
		{
			name:   "server from ARGOCD_SERVER, token from the named variable",
			target: workflow.ArgoCDTarget{App: "web-prod", TokenEnv: "PROD_ARGOCD_TOKEN", PlainText: true, GRPCWeb: true},
			env:    map[string]string{"ARGOCD_SERVER": "localhost:8080", "PROD_ARGOCD_TOKEN": "p", "ARGOCD_AUTH_TOKEN": "not this one"},
			want:   argocd.Options{Server: "localhost:8080", AuthToken: "p", TokenEnv: "PROD_ARGOCD_TOKEN", PlainText: true, GRPCWeb: true},
		},
		{
			name:    "no server anywhere",
			target:  workflow.ArgoCDTarget{App: "web-staging"},
			env:     map[string]string{"ARGOCD_AUTH_TOKEN": "t"},
			wantErr: "set argocd.server in relcap.yaml or $ARGOCD_SERVER",
		},
		{
			name:    "named token variable unset",
			target:  workflow.ArgoCDTarget{Server: "a:443", App: "web-prod", TokenEnv: "PROD_ARGOCD_TOKEN"},
			env:     map[string]string{"ARGOCD_AUTH_TOKEN": "t"},
			wantErr: "$PROD_ARGOCD_TOKEN is empty or unset",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := argocd.OptionsFor(tc.target, env(tc.env))
			if tc.wantErr != "" {
				require.ErrorIs(t, err, fault.ErrUsage)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestNewValidatesEarly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts    argocd.Options
		server  string
		wantErr string
	}{
		{opts: argocd.Options{Server: "argocd.example.com", AuthToken: "t"}, server: "argocd.example.com"},
		{opts: argocd.Options{Server: "https://argocd.example.com/", AuthToken: "t"}, server: "argocd.example.com"},
		{opts: argocd.Options{Server: "http://127.0.0.1:8080", AuthToken: "t"}, server: "127.0.0.1:8080"},
		{opts: argocd.Options{Server: "", AuthToken: "t"}, wantErr: "no argo cd server"},
		{opts: argocd.Options{Server: "https://argocd.example.com/argocd", AuthToken: "t"}, wantErr: "a path is not supported"},
		{opts: argocd.Options{Server: "ftp://x", AuthToken: "t"}, wantErr: "want host:port"},
		{opts: argocd.Options{Server: "a:443", TokenEnv: "MY_TOKEN"}, wantErr: "$MY_TOKEN is empty or unset"},
	} {
		a, err := argocd.New(tc.opts)
		if tc.wantErr != "" {
			require.ErrorIs(t, err, fault.ErrUsage, tc.opts.Server)
			require.ErrorContains(t, err, tc.wantErr)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.server, a.Server())
	}
}
