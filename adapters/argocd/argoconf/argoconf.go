// Package argoconf is what both sides of relcap's Argo CD process boundary
// share: how an environment's Argo CD target and the environment become
// connection options, and the errors a caller may react to. It imports
// nothing of argo-cd, gRPC or Kubernetes, so the relcap binary can check
// a configuration (precheck, relcap init) without linking them; the
// helper executable relcap-argocd (adapters/argocd) connects with the
// options.
package argoconf

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// EnvServer is the variable argocd users already set for the server;
// OptionsFor reads it. The token's default variable is the domain's
// (workflow.DefaultArgoCDTokenEnv), which the secret policy also masks.
const EnvServer = "ARGOCD_SERVER"

// Errors callers may react to. Both are wrapped with the server address
// and the server's own message.
var (
	// ErrTokenRejected: Argo CD answered Unauthenticated or
	// PermissionDenied.
	ErrTokenRejected = errors.New("argo cd rejected the token")
	// ErrUnreachable: no gRPC connection to the server, or no answer in
	// time.
	ErrUnreachable = errors.New("cannot reach argo cd")
)

// Options configure a connection to one Argo CD server.
type Options struct {
	// Server is Argo CD's host:port as the argocd CLI takes it. A
	// https:// prefix is dropped; http:// is dropped and implies
	// PlainText. Required.
	Server string
	// AuthToken is an Argo CD API token (a project or account token, or a
	// session token). Required.
	AuthToken string `json:"-"`
	// TokenEnv names the environment variable AuthToken came from, so
	// errors can say which one to fix; empty means
	// workflow.DefaultArgoCDTokenEnv.
	TokenEnv string
	// PlainText talks gRPC without TLS (an argocd-server run with
	// --insecure, or a port-forward).
	PlainText bool
	// Insecure skips verification of the server's TLS certificate.
	Insecure bool
	// CAFile is a PEM file of certificate authorities trusted for the
	// server's certificate, beside the system's (a private CA).
	CAFile string
	// ClientCertFile and ClientKeyFile are a client certificate and its
	// key, for a server that asks for one.
	ClientCertFile, ClientKeyFile string
	// GRPCWeb tunnels gRPC through HTTP/1.1 for ingresses that do not
	// pass HTTP/2 (through argo-cd's apiclient, which goes through an
	// HTTP proxy only for plaintext servers). Native gRPC goes through an
	// HTTP(S) proxy of the environment ($HTTPS_PROXY, $NO_PROXY).
	GRPCWeb bool
	// PathPrefix is the path Argo CD is served under (--rootpath); it
	// implies gRPC-Web.
	PathPrefix string
	// Timeout bounds connecting and every unary call; default 10s. Watch
	// streams are bounded only by their context.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the delay before re-opening a
	// dropped watch stream; defaults 200ms and 5s.
	MinBackoff, MaxBackoff time.Duration
	// Clock stamps AppState.ObservedAt; nil means the wall clock.
	Clock workflow.Clock `json:"-"`
}

// OptionsFor builds Options for an environment's Argo CD target the way
// argocd users expect: the server from relcap.yaml, else $ARGOCD_SERVER;
// the token from the variable the target names (token_env), else
// $ARGOCD_AUTH_TOKEN. getenv is os.Getenv outside tests. A missing value
// is an error wrapping fault.ErrUsage that names what to set.
func OptionsFor(target workflow.ArgoCDTarget, getenv func(string) string) (Options, error) {
	o := Options{Server: target.Server, PlainText: target.PlainText, Insecure: target.Insecure, GRPCWeb: target.GRPCWeb, TokenEnv: target.TokenEnv,
		CAFile: target.CAFile, ClientCertFile: target.ClientCertFile, ClientKeyFile: target.ClientKeyFile, PathPrefix: target.PathPrefix}
	if o.TokenEnv == "" {
		o.TokenEnv = workflow.DefaultArgoCDTokenEnv
	}
	app := target.App
	if app == "" {
		app = "(unnamed)"
	}
	if o.Server == "" {
		o.Server = strings.TrimSpace(getenv(EnvServer))
	}
	if o.Server == "" {
		return Options{}, fmt.Errorf("%w: argo cd application %s: no server: set argocd.server in relcap.yaml or $%s", fault.ErrUsage, app, EnvServer)
	}
	o.AuthToken = strings.TrimSpace(getenv(o.TokenEnv))
	if o.AuthToken == "" {
		return Options{}, fmt.Errorf("%w: argo cd application %s on %s: $%s is empty or unset; set it to an Argo CD API token (argocd account generate-token)", fault.ErrUsage, app, o.Server, o.TokenEnv)
	}
	return o, nil
}

// NormaliseServer turns what users write (host, host:port, https://host/)
// into the host:port apiclient dials; http:// means plaintext.
func NormaliseServer(s string) (server string, plainText bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", false, fmt.Errorf("%w: no argo cd server given: set argocd.server in relcap.yaml or $%s", fault.ErrUsage, EnvServer)
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return "", false, fmt.Errorf("%w: argo cd server %q: want host:port (or an http/https URL)", fault.ErrUsage, s)
		}
		if strings.Trim(u.Path, "/") != "" {
			return "", false, fmt.Errorf("%w: argo cd server %q: a path is not supported; give the gRPC host:port", fault.ErrUsage, s)
		}
		return u.Host, u.Scheme == "http", nil
	}
	s = strings.TrimSuffix(s, "/")
	if strings.ContainsAny(s, "/ ") {
		return "", false, fmt.Errorf("%w: argo cd server %q: want host:port", fault.ErrUsage, s)
	}
	return s, false, nil
}
