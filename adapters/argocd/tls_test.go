package argocd_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd"
	"github.com/relcap/relcap/adapters/argocd/argosim/argosimtest"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
)

// tlsAdapter is an adapter to a TLS simulator with opts' connection
// settings.
func tlsAdapter(t *testing.T, addr, token string, opts argocd.Options) *argocd.Adapter {
	t.Helper()
	opts.Server, opts.AuthToken, opts.Timeout = addr, token, 5*time.Second
	ad, err := argocd.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })
	return ad
}

// TestATLSServerWithAPrivateCAIsTrustedThroughCAFile: a team's Argo CD is
// served over TLS with its own CA; relcap trusts exactly the CA it is
// given, refuses a server signed by another with what to set, and skips
// verification only when told to.
func TestATLSServerWithAPrivateCAIsTrustedThroughCAFile(t *testing.T) {
	t.Parallel()
	repo, _ := argosimtest.NewRepo(t, "v1")
	ca := argosimtest.NewCA(t, "team-ca")
	sim, addr := argosimtest.StartTLS(t, ca, "", repo.App("web-staging"))
	ref := appstate.AppRef{Env: "staging", Name: "web-staging"}

	st, err := tlsAdapter(t, addr, sim.Token(), argocd.Options{CAFile: ca.CAFile}).Get(t.Context(), ref)
	require.NoError(t, err)
	require.Equal(t, "web-staging", st.Name)

	for name, opts := range map[string]argocd.Options{
		"system roots only": {},
		"another CA":        {CAFile: argosimtest.NewCA(t, "other-ca").CAFile},
	} {
		_, err := tlsAdapter(t, addr, sim.Token(), opts).Get(t.Context(), ref)
		require.ErrorIs(t, err, argocd.ErrUnreachable, name)
		require.ErrorContains(t, err, "x509", name)
		require.ErrorContains(t, err, "set argocd.ca_file to the CA that signed the server's certificate", name)
		require.NotContains(t, err.Error(), sim.Token(), name)
	}

	_, err = tlsAdapter(t, addr, sim.Token(), argocd.Options{Insecure: true}).Get(t.Context(), ref)
	require.NoError(t, err, "insecure skips verification")
}

// TestGRPCWebUnderAPathPrefixReachesTheServer: behind an ingress that does
// not pass HTTP/2, Argo CD is reached with gRPC-Web, under its root path.
func TestGRPCWebUnderAPathPrefixReachesTheServer(t *testing.T) {
	t.Parallel()
	repo, _ := argosimtest.NewRepo(t, "v1")
	ca := argosimtest.NewCA(t, "team-ca")
	sim, addr := argosimtest.StartTLS(t, ca, "/argo-cd", repo.App("web-staging"))
	ref := appstate.AppRef{Env: "staging", Name: "web-staging"}
	ad := tlsAdapter(t, addr, sim.Token(), argocd.Options{CAFile: ca.CAFile, PathPrefix: "/argo-cd"})
	st, err := ad.Get(t.Context(), ref)
	require.NoError(t, err)
	require.Equal(t, "web-staging", st.Name)
	updates, err := ad.Watch(t.Context(), ref, st.Version)
	require.NoError(t, err)
	rev2 := repo.Pin(t, "v2")
	waitState(t, updates, 10*time.Second, func(s appstate.AppState) bool { return s.SyncRevision == rev2 })

	_, err = tlsAdapter(t, addr, sim.Token(), argocd.Options{CAFile: ca.CAFile, GRPCWeb: true}).Get(t.Context(), ref)
	require.Error(t, err, "without the prefix the server is not found")
}

func TestConnectionOptionsAreCheckedBeforeConnecting(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		opts argocd.Options
		want string
	}{
		"a certificate without its key": {argocd.Options{ClientCertFile: "/etc/hosts"}, "needs both its certificate and its key"},
		"plaintext with a CA":           {argocd.Options{PlainText: true, CAFile: "/etc/hosts"}, "plaintext talks without TLS"},
		"a missing CA file":             {argocd.Options{CAFile: "/no/such/ca.pem"}, "/no/such/ca.pem"},
		"a prefix without a slash":      {argocd.Options{PathPrefix: "argo"}, "must start with /"},
	} {
		c.opts.Server, c.opts.AuthToken = "argocd.example.com:443", "t"
		_, err := argocd.New(c.opts)
		require.ErrorIs(t, err, fault.ErrUsage, name)
		require.ErrorContains(t, err, c.want, name)
	}
}

// TestAServerThatAsksForAClientCertificateGetsOne: mutual TLS, with the
// certificate and key files relcap.yaml names.
func TestAServerThatAsksForAClientCertificateGetsOne(t *testing.T) {
	t.Parallel()
	repo, _ := argosimtest.NewRepo(t, "v1")
	ca := argosimtest.NewCA(t, "team-ca")
	sim, addr := argosimtest.StartMutualTLS(t, ca, repo.App("web-staging"))
	ref := appstate.AppRef{Env: "staging", Name: "web-staging"}
	cert, key := ca.ClientCert(t)
	_, err := tlsAdapter(t, addr, sim.Token(), argocd.Options{CAFile: ca.CAFile, ClientCertFile: cert, ClientKeyFile: key}).Get(t.Context(), ref)
	require.NoError(t, err)
	_, err = tlsAdapter(t, addr, sim.Token(), argocd.Options{CAFile: ca.CAFile}).Get(t.Context(), ref)
	require.Error(t, err, "no client certificate, no connection")
}
