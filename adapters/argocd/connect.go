package argocd

// How the adapter reaches Argo CD: one shared connection, dialled once at a
// time, over native gRPC (TLS or plaintext, through an HTTP(S) proxy of the
// environment) or gRPC-Web through argo-cd's apiclient.

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
	"time"

	"golang.org/x/net/http/httpproxy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/argoproj/argo-cd/v2/pkg/apiclient"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/application"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/version"

	"github.com/relcap/relcap/workflow/fault"
)

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
			return nil, fmt.Errorf("%w: argo cd at %s: CA file: %w", fault.ErrUsage, a.server, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: argo cd at %s: CA file %s holds no PEM certificate", fault.ErrUsage, a.server, a.opts.CAFile)
		}
		cfg.RootCAs = pool
	}
	if a.opts.ClientCertFile != "" {
		cert, err := tls.LoadX509KeyPair(a.opts.ClientCertFile, a.opts.ClientKeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: argo cd at %s: client certificate: %w", fault.ErrUsage, a.server, err)
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
