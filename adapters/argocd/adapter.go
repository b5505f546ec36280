// Package argocd implements workflow.Convergence over Argo CD's gRPC API
// with argo-cd's own client (github.com/argoproj/argo-cd/v2/pkg/apiclient).
// It also reads the resource tree, managed resources, sync policy and
// deployment history that rollback, break-glass and the ownership check
// need, and keeps break-glass's deny sync windows on the application's
// project (syncwindows.go, edited as wire bytes: raw.go says why); connect.go
// says how it reaches the server. No argo-cd type leaves the package:
// Applications become appstate.AppState, and failures become errors that
// name the server and the environment variable the token came from (never
// the token).
package argocd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/argoproj/argo-cd/v2/pkg/apiclient/application"

	"github.com/relcap/relcap/adapters/argocd/argoconf"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"

	// Before argo-cd's types initialise kubectl's command packages: keeps
	// kubectl's help-text catalogue from loading (the package says why).
	_ "github.com/relcap/relcap/adapters/argocd/internal/kubectltext"
)

var (
	_ workflow.Convergence         = (*Adapter)(nil)
	_ workflow.ResourceTreeReader  = (*Adapter)(nil)
	_ workflow.Refresher           = (*Adapter)(nil)
	_ workflow.OperationTerminator = (*Adapter)(nil)
)

// EnvServer, ErrTokenRejected, ErrUnreachable, Options and OptionsFor
// live in argoconf, which the relcap binary links without this package
// (it talks to Argo CD through the relcap-argocd helper); they are
// re-exported here for the helper's side.
const EnvServer = argoconf.EnvServer

var (
	ErrTokenRejected = argoconf.ErrTokenRejected
	ErrUnreachable   = argoconf.ErrUnreachable
)

// Options configure an Adapter (argoconf.Options).
type Options = argoconf.Options

// OptionsFor is argoconf.OptionsFor.
func OptionsFor(target workflow.ArgoCDTarget, getenv func(string) string) (Options, error) {
	return argoconf.OptionsFor(target, getenv)
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
// fault.ErrUsage.
func New(opts Options) (*Adapter, error) {
	server, plain, err := normaliseServer(opts.Server)
	if err != nil {
		return nil, err
	}
	opts.PlainText = opts.PlainText || plain
	switch {
	case (opts.ClientCertFile == "") != (opts.ClientKeyFile == ""):
		return nil, fmt.Errorf("%w: argo cd at %s: a client certificate needs both its certificate and its key file", fault.ErrUsage, server)
	case opts.PlainText && (opts.CAFile != "" || opts.ClientCertFile != ""):
		return nil, fmt.Errorf("%w: argo cd at %s: plaintext talks without TLS, so a CA file or client certificate would not be used", fault.ErrUsage, server)
	case opts.PathPrefix != "" && !strings.HasPrefix(opts.PathPrefix, "/"):
		return nil, fmt.Errorf("%w: argo cd at %s: path prefix %q must start with /", fault.ErrUsage, server, opts.PathPrefix)
	}
	for _, f := range []string{opts.CAFile, opts.ClientCertFile, opts.ClientKeyFile} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("%w: argo cd at %s: %w", fault.ErrUsage, server, err)
		}
	}
	if opts.TokenEnv == "" {
		opts.TokenEnv = workflow.DefaultArgoCDTokenEnv
	}
	opts.AuthToken = strings.TrimSpace(opts.AuthToken)
	if opts.AuthToken == "" {
		return nil, fmt.Errorf("%w: argo cd at %s: no token: $%s is empty or unset", fault.ErrUsage, server, opts.TokenEnv)
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

// normaliseServer is argoconf.NormaliseServer.
func normaliseServer(s string) (server string, plainText bool, err error) {
	return argoconf.NormaliseServer(s)
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
		return fmt.Errorf("argo cd application %s on %s: %w: %s", app, a.server, fault.ErrNotFound, st.Message())
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
func (a *Adapter) appQuery(ref appstate.AppRef) (name string, ns *string, err error) {
	if ref.Name == "" {
		return "", nil, fmt.Errorf("%w: no argo cd application named", fault.ErrUsage)
	}
	if ref.Server != "" {
		s, _, err := normaliseServer(ref.Server)
		if err != nil {
			return "", nil, err
		}
		if s != a.server {
			return "", nil, fmt.Errorf("%w: application %s is on argo cd %s, but this adapter talks to %s", fault.ErrUsage, ref.Name, s, a.server)
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
func call[T any](ctx context.Context, a *Adapter, ref appstate.AppRef, what string,
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
