// Package argocd implements workflow.Convergence over Argo CD's gRPC API
// with argo-cd's own client (github.com/argoproj/argo-cd/v2/pkg/apiclient).
// It also reads the resource tree, managed resources, sync policy and
// deployment history that rollback, break-glass and the ownership check
// need, and keeps break-glass's deny sync windows on the application's
// project (syncwindows.go, edited as wire bytes: raw.go says why). No argo-cd type leaves the package: Applications become
// workflow.AppState, and failures become errors that name the server and
// the environment variable the token came from (never the token).
package argocd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpproxy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/argoproj/argo-cd/v2/pkg/apiclient"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/application"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/version"

	"github.com/relcap/relcap/workflow"
)

var (
	_ workflow.Convergence         = (*Adapter)(nil)
	_ workflow.ResourceTreeReader  = (*Adapter)(nil)
	_ workflow.Refresher           = (*Adapter)(nil)
	_ workflow.OperationTerminator = (*Adapter)(nil)
)

// Environment variables argocd users already set; OptionsFor reads them.
const (
	EnvServer    = "ARGOCD_SERVER"
	EnvAuthToken = "ARGOCD_AUTH_TOKEN"
)

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

// Options configure an Adapter.
type Options struct {
	// Server is Argo CD's host:port as the argocd CLI takes it. A
	// https:// prefix is dropped; http:// is dropped and implies
	// PlainText. Required.
	Server string
	// AuthToken is an Argo CD API token (a project or account token, or a
	// session token). Required.
	AuthToken string
	// TokenEnv names the environment variable AuthToken came from, so
	// errors can say which one to fix; empty means ARGOCD_AUTH_TOKEN.
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
	Clock workflow.Clock
}

// OptionsFor builds Options for an environment's Argo CD target the way
// argocd users expect: the server from relcap.yaml, else $ARGOCD_SERVER;
// the token from the variable the target names (token_env), else
// $ARGOCD_AUTH_TOKEN. getenv is os.Getenv outside tests. A missing value
// is an error wrapping workflow.ErrUsage that names what to set.
func OptionsFor(target workflow.ArgoCDTarget, getenv func(string) string) (Options, error) {
	o := Options{Server: target.Server, PlainText: target.PlainText, Insecure: target.Insecure, GRPCWeb: target.GRPCWeb, TokenEnv: target.TokenEnv,
		CAFile: target.CAFile, ClientCertFile: target.ClientCertFile, ClientKeyFile: target.ClientKeyFile, PathPrefix: target.PathPrefix}
	if o.TokenEnv == "" {
		o.TokenEnv = EnvAuthToken
	}
	app := target.App
	if app == "" {
		app = "(unnamed)"
	}
	if o.Server == "" {
		o.Server = strings.TrimSpace(getenv(EnvServer))
	}
	if o.Server == "" {
		return Options{}, fmt.Errorf("%w: argo cd application %s: no server: set argocd.server in relcap.yaml or $%s", workflow.ErrUsage, app, EnvServer)
	}
	o.AuthToken = strings.TrimSpace(getenv(o.TokenEnv))
	if o.AuthToken == "" {
		return Options{}, fmt.Errorf("%w: argo cd application %s on %s: $%s is empty or unset; set it to an Argo CD API token (argocd account generate-token)", workflow.ErrUsage, app, o.Server, o.TokenEnv)
	}
	return o, nil
}

// Adapter talks to one Argo CD server. It is safe for concurrent use: it
// connects on first use and shares one gRPC connection, which reconnects
// by itself after the server restarts.
type Adapter struct {
	opts   Options
	server string // normalised host:port
	clock  workflow.Clock

	mu      sync.Mutex
	apps    application.ApplicationServiceClient
	raw     rawInvoker // the same connection, for calls made as wire bytes
	conn    io.Closer
	dialing *dial // the connection attempt in progress, if any
}

// New validates opts and returns an Adapter. It does not connect: the
// first call does, bounded by opts.Timeout. Invalid options wrap
// workflow.ErrUsage.
func New(opts Options) (*Adapter, error) {
	server, plain, err := normaliseServer(opts.Server)
	if err != nil {
		return nil, err
	}
	opts.PlainText = opts.PlainText || plain
	switch {
	case (opts.ClientCertFile == "") != (opts.ClientKeyFile == ""):
		return nil, fmt.Errorf("%w: argo cd at %s: a client certificate needs both its certificate and its key file", workflow.ErrUsage, server)
	case opts.PlainText && (opts.CAFile != "" || opts.ClientCertFile != ""):
		return nil, fmt.Errorf("%w: argo cd at %s: plaintext talks without TLS, so a CA file or client certificate would not be used", workflow.ErrUsage, server)
	case opts.PathPrefix != "" && !strings.HasPrefix(opts.PathPrefix, "/"):
		return nil, fmt.Errorf("%w: argo cd at %s: path prefix %q must start with /", workflow.ErrUsage, server, opts.PathPrefix)
	}
	for _, f := range []string{opts.CAFile, opts.ClientCertFile, opts.ClientKeyFile} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("%w: argo cd at %s: %w", workflow.ErrUsage, server, err)
		}
	}
	if opts.TokenEnv == "" {
		opts.TokenEnv = EnvAuthToken
	}
	opts.AuthToken = strings.TrimSpace(opts.AuthToken)
	if opts.AuthToken == "" {
		return nil, fmt.Errorf("%w: argo cd at %s: no token: $%s is empty or unset", workflow.ErrUsage, server, opts.TokenEnv)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 200 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(5*time.Second, opts.MinBackoff)
	}
	clock := opts.Clock
	if clock == nil {
		clock = workflow.SystemClock{}
	}
	return &Adapter{opts: opts, server: server, clock: clock}, nil
}

// normaliseServer turns what users write (host, host:port, https://host/)
// into the host:port apiclient dials; http:// means plaintext.
func normaliseServer(s string) (server string, plainText bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", false, fmt.Errorf("%w: no argo cd server given: set argocd.server in relcap.yaml or $%s", workflow.ErrUsage, EnvServer)
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return "", false, fmt.Errorf("%w: argo cd server %q: want host:port (or an http/https URL)", workflow.ErrUsage, s)
		}
		if strings.Trim(u.Path, "/") != "" {
			return "", false, fmt.Errorf("%w: argo cd server %q: a path is not supported; give the gRPC host:port", workflow.ErrUsage, s)
		}
		return u.Host, u.Scheme == "http", nil
	}
	s = strings.TrimSuffix(s, "/")
	if strings.ContainsAny(s, "/ ") {
		return "", false, fmt.Errorf("%w: argo cd server %q: want host:port", workflow.ErrUsage, s)
	}
	return s, false, nil
}

// Server returns the host:port the adapter talks to.
func (a *Adapter) Server() string { return a.server }

// Close closes the connection, if one was made. Calls after Close
// reconnect.
func (a *Adapter) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn == nil {
		return nil
	}
	err := a.conn.Close()
	a.apps, a.raw, a.conn = nil, nil, nil
	return err
}

// client returns the application service client, connecting first if
// needed. Callers wait for the connection (one attempt at a time, bounded
// by opts.Timeout) or for their ctx, whichever ends first.
func (a *Adapter) client(ctx context.Context) (application.ApplicationServiceClient, error) {
	apps, _, err := a.connection(ctx)
	return apps, err
}

// rawClient is client's connection for calls made as wire bytes.
func (a *Adapter) rawClient(ctx context.Context) (rawInvoker, error) {
	_, raw, err := a.connection(ctx)
	return raw, err
}

func (a *Adapter) connection(ctx context.Context) (application.ApplicationServiceClient, rawInvoker, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("connect to argo cd at %s: %w", a.server, err)
	}
	a.mu.Lock()
	if a.apps != nil {
		defer a.mu.Unlock()
		return a.apps, a.raw, nil
	}
	d := a.dialing
	if d == nil {
		d = &dial{done: make(chan struct{})}
		a.dialing = d
		go a.connect(d)
	}
	a.mu.Unlock()
	select {
	case <-d.done:
		return d.apps, d.raw, d.err
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("connect to argo cd at %s: %w", a.server, ctx.Err())
	}
}

// dial is one connection attempt; its fields are set before done closes.
type dial struct {
	done chan struct{}
	apps application.ApplicationServiceClient
	raw  rawInvoker
	err  error
}

// connect makes one connection attempt, bounded by opts.Timeout.
// apiclient dials with context.Background() (and NewClient first probes
// the version, falling back to gRPC-Web), so it runs in a goroutine that
// is abandoned, and closes what it opened, if it does not answer in time.
func (a *Adapter) connect(d *dial) {
	apps, raw, conn, err := a.connectOnce()
	a.mu.Lock()
	a.dialing = nil
	if err == nil {
		a.apps, a.raw, a.conn = apps, raw, conn
	}
	a.mu.Unlock()
	d.apps, d.raw, d.err = apps, raw, err
	close(d.done)
}

func (a *Adapter) connectOnce() (application.ApplicationServiceClient, rawInvoker, io.Closer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.Timeout)
	defer cancel()
	if err := a.probe(ctx); err != nil {
		return nil, nil, nil, err
	}
	if a.opts.GRPCWeb || a.opts.PathPrefix != "" {
		apps, conn, err := a.connectGRPCWeb(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		raw, err := a.webRaw()
		if err != nil {
			_ = conn.Close()
			return nil, nil, nil, err
		}
		return apps, raw, closers{conn, idleCloser{raw.client}}, nil
	}
	conn, err := a.connectGRPC(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return application.NewApplicationServiceClient(conn), grpcRaw{conn}, conn, nil
}

// webRaw is the gRPC-Web caller for wire-byte calls, with the TLS
// settings and the environment's proxy that apiclient's gRPC-Web client
// uses.
func (a *Adapter) webRaw() (webRaw, error) {
	scheme := "https"
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment}
	if a.opts.PlainText {
		scheme = "http"
	} else {
		cfg, err := a.tlsConfig()
		if err != nil {
			return webRaw{}, err
		}
		tr.TLSClientConfig = cfg
	}
	base := scheme + "://" + a.server + strings.TrimRight(a.opts.PathPrefix, "/")
	return webRaw{base: base, token: a.opts.AuthToken, client: &http.Client{Transport: tr}}, nil
}

// closers closes each in turn.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// idleCloser closes an HTTP client's idle connections.
type idleCloser struct{ c *http.Client }

func (ic idleCloser) Close() error {
	ic.c.CloseIdleConnections()
	return nil
}

// connectGRPC dials Argo CD's gRPC API (HTTP/2) with grpc-go's own
// dialer, which goes through an HTTP(S) proxy of the environment
// ($HTTPS_PROXY, CONNECT, unless $NO_PROXY names the server), and checks
// the connection with one Version call, so a wrong certificate or an
// unreachable server is reported now, within ctx. The service clients are
// argo-cd's own (pkg/apiclient/application); only the connection is made
// here, because apiclient's dialer honours no HTTP proxy.
func (a *Adapter) connectGRPC(ctx context.Context) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if !a.opts.PlainText {
		cfg, err := a.tlsConfig()
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(cfg)
	}
	conn, err := grpc.NewClient(a.server,
		grpc.WithTransportCredentials(creds),
		grpc.WithPerRPCCredentials(tokenCredentials{token: a.opts.AuthToken, tls: !a.opts.PlainText}),
		grpc.WithUserAgent("relcap"),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(apiclient.MaxGRPCMessageSize), grpc.MaxCallSendMsgSize(apiclient.MaxGRPCMessageSize)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, PermitWithoutStream: true}),
	)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %s", ErrUnreachable, a.server, connectHint(err))
	}
	if _, err := version.NewVersionServiceClient(conn).Version(ctx, &emptypb.Empty{}); err != nil {
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w at %s: no answer within %s", ErrUnreachable, a.server, a.opts.Timeout)
		}
		msg := err.Error()
		if st, ok := status.FromError(err); ok {
			msg = st.Message()
		}
		return nil, fmt.Errorf("%w at %s: %s", ErrUnreachable, a.server, connectHint(errors.New(msg)))
	}
	return conn, nil
}

// tlsConfig is the TLS client configuration: the system's roots plus the
// CA file, the client certificate, or no verification when Insecure.
func (a *Adapter) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: a.opts.Insecure} //nolint:gosec // only when argocd.insecure says so
	if a.opts.CAFile != "" {
		pem, err := os.ReadFile(a.opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: argo cd at %s: CA file: %w", workflow.ErrUsage, a.server, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: argo cd at %s: CA file %s holds no PEM certificate", workflow.ErrUsage, a.server, a.opts.CAFile)
		}
		cfg.RootCAs = pool
	}
	if a.opts.ClientCertFile != "" {
		cert, err := tls.LoadX509KeyPair(a.opts.ClientCertFile, a.opts.ClientKeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: argo cd at %s: client certificate: %w", workflow.ErrUsage, a.server, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// tokenCredentials sends the Argo CD token with every call, as argo-cd's
// own client does (metadata key "token").
type tokenCredentials struct {
	token string
	tls   bool
}

func (c tokenCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{apiclient.MetaDataTokenKey: c.token}, nil
}

// RequireTransportSecurity is false over plaintext, which argocd-server
// --insecure is.
func (c tokenCredentials) RequireTransportSecurity() bool { return c.tls }

// connectGRPCWeb connects through argo-cd's apiclient, which tunnels gRPC
// in HTTP/1.1 requests (gRPC-Web) to servers behind ingresses that do not
// pass HTTP/2, under the server's root path. apiclient dials with
// context.Background(), so it runs in a goroutine that is abandoned, and
// closes what it opened, if it does not answer within ctx.
func (a *Adapter) connectGRPCWeb(ctx context.Context) (application.ApplicationServiceClient, io.Closer, error) {
	type result struct {
		apps application.ApplicationServiceClient
		conn io.Closer
		err  error
	}
	done := make(chan result, 1)
	go func() {
		c, err := apiclient.NewClient(&apiclient.ClientOptions{
			ServerAddr:        a.server,
			AuthToken:         a.opts.AuthToken,
			PlainText:         a.opts.PlainText,
			Insecure:          a.opts.Insecure,
			CertFile:          a.opts.CAFile,
			ClientCertFile:    a.opts.ClientCertFile,
			ClientCertKeyFile: a.opts.ClientKeyFile,
			GRPCWeb:           true,
			GRPCWebRootPath:   strings.TrimPrefix(a.opts.PathPrefix, "/"),
			UserAgent:         "relcap",
			// An empty ConfigPath keeps ~/.config/argocd out of it: the
			// server and token are the ones relcap was given.
		})
		if err != nil {
			done <- result{err: err}
			return
		}
		conn, apps, err := c.NewApplicationClient()
		done <- result{apps: apps, conn: conn, err: err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			if r.conn != nil {
				_ = r.conn.Close()
			}
			return nil, nil, fmt.Errorf("%w at %s: %s", ErrUnreachable, a.server, connectHint(r.err))
		}
		return r.apps, r.conn, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
		return nil, nil, fmt.Errorf("%w at %s: no answer within %s", ErrUnreachable, a.server, a.opts.Timeout)
	}
}

// viaHTTPProxy reports whether an HTTP(S) proxy of the environment
// ($HTTPS_PROXY, or $HTTP_PROXY for plaintext, unless $NO_PROXY excludes
// the server) stands between relcap and the server, as the argocd CLI's
// gRPC-Web client would use it.
func (a *Adapter) viaHTTPProxy() bool {
	scheme := "https"
	if a.opts.PlainText {
		scheme = "http"
	}
	u, err := httpproxy.FromEnvironment().ProxyFunc()(&url.URL{Scheme: scheme, Host: a.server})
	return err == nil && u != nil
}

// probe dials the server's TCP port before apiclient does, so the common
// unreachable cases (refused, filtered, unknown host) fail within ctx and
// leave no goroutine behind. It is skipped when a proxy stands between
// relcap and the server: a SOCKS proxy (apiclient's gRPC dialer honours
// $ALL_PROXY) or an HTTP one (then relcap speaks gRPC-Web through it), which
// a direct dial would bypass.
func (a *Adapter) probe(ctx context.Context) error {
	if os.Getenv("ALL_PROXY") != "" || os.Getenv("all_proxy") != "" || a.viaHTTPProxy() {
		return nil
	}
	addr := a.server
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "443") // apiclient's default port
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w at %s: no answer within %s", ErrUnreachable, a.server, a.opts.Timeout)
		}
		return fmt.Errorf("%w at %s: %w", ErrUnreachable, a.server, err)
	}
	return c.Close()
}

// connectHint adds what to change to the TLS errors people meet first.
func connectHint(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return msg + " (the server speaks plaintext: set argocd.plaintext: true)"
	case strings.Contains(msg, "x509:") || strings.Contains(msg, "certificate"):
		return msg + " (set argocd.ca_file to the CA that signed the server's certificate, or argocd.insecure: true to skip verification)"
	}
	return msg
}

// callContext bounds one unary call by opts.Timeout.
func (a *Adapter) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.opts.Timeout)
}

// callError turns a failed call into an error that says what to do. ctx
// is the caller's context: its end is reported as such, so errors.Is(err,
// context.Canceled) holds.
func (a *Adapter) callError(ctx context.Context, op, app string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("argo cd %s %s: %w", op, app, ctxErr)
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("argo cd %s %s at %s: %w", op, app, a.server, err)
	}
	switch st.Code() {
	case codes.Unauthenticated:
		return fmt.Errorf("%w from $%s: %s", ErrTokenRejected, a.opts.TokenEnv, st.Message())
	case codes.PermissionDenied:
		// Argo CD also answers PermissionDenied for an application that
		// does not exist, so as not to reveal which ones do.
		return fmt.Errorf("%w from $%s for application %s (the token's account may not read it, or no application has that name): %s",
			ErrTokenRejected, a.opts.TokenEnv, app, st.Message())
	case codes.NotFound:
		return fmt.Errorf("argo cd application %s on %s: %w: %s", app, a.server, workflow.ErrNotFound, st.Message())
	case codes.Unavailable:
		return fmt.Errorf("%w at %s: %s", ErrUnreachable, a.server, st.Message())
	case codes.DeadlineExceeded:
		return fmt.Errorf("%w at %s: no answer to %s within %s", ErrUnreachable, a.server, op, a.opts.Timeout)
	}
	return fmt.Errorf("argo cd %s %s at %s: %s: %s", op, app, a.server, st.Code(), st.Message())
}

// appQuery names the application: "name", or "namespace/name" for an
// application outside Argo CD's own namespace. It refuses an AppRef for
// another server, which a per-server Adapter cannot answer for.
func (a *Adapter) appQuery(ref workflow.AppRef) (name string, ns *string, err error) {
	if ref.Name == "" {
		return "", nil, fmt.Errorf("%w: no argo cd application named", workflow.ErrUsage)
	}
	if ref.Server != "" {
		s, _, err := normaliseServer(ref.Server)
		if err != nil {
			return "", nil, err
		}
		if s != a.server {
			return "", nil, fmt.Errorf("%w: application %s is on argo cd %s, but this adapter talks to %s", workflow.ErrUsage, ref.Name, s, a.server)
		}
	}
	if namespace, app, ok := strings.Cut(ref.Name, "/"); ok {
		return app, &namespace, nil
	}
	return ref.Name, nil, nil
}

// call makes one unary request about ref's application: it resolves the
// application's name and namespace, connects, applies the per-call timeout
// and translates the error, so every read says the same things the same
// way.
func call[T any](ctx context.Context, a *Adapter, ref workflow.AppRef, what string,
	req func(ctx context.Context, apps application.ApplicationServiceClient, name string, ns *string) (T, error)) (T, error) {
	var zero T
	name, ns, err := a.appQuery(ref)
	if err != nil {
		return zero, err
	}
	apps, err := a.client(ctx)
	if err != nil {
		return zero, err
	}
	cctx, cancel := a.callContext(ctx)
	defer cancel()
	out, err := req(cctx, apps, name, ns)
	if err != nil {
		return zero, a.callError(ctx, what, ref.Name, err)
	}
	return out, nil
}
