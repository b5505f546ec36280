// Package argosim is an Argo CD API simulator for the relcap sandbox and for
// tests. It is not Argo CD: it serves Argo CD's own gRPC API (application,
// project, version and settings services, from argo-cd's generated code)
// on loopback, so relcap's real argocd adapter and argo-cd's real
// apiclient talk to it unchanged, and it answers from a tiny reconciler
// per application that follows a branch of a local Git repository,
// "syncs" the images the file pins, and turns Healthy after a configured
// time. Projects carry sync windows, which the simulated controller
// honours with argo-cd's own window logic (a deny window stops automated
// sync and self-heal until it closes). Failures (image pull, readiness,
// sync, drift) are injected on purpose.
//
// Every user-visible string it produces says it comes from the simulator.
package argosim

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/argoproj/argo-cd/v2/pkg/apiclient/application"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/project"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/settings"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/version"
	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/improbable-eng/grpc-web/go/grpcweb"
)

// Name is how the simulator names itself in versions, messages and errors.
const Name = "argo cd simulator (relcap sandbox)"

// Config configures a simulator.
type Config struct {
	// Token is the bearer token clients must present. Empty means a
	// random one, read back with Token.
	Token string
	// PollInterval is how often each application's reconciler reads its
	// branch tip and advances time-based transitions; default 150ms.
	PollInterval time.Duration
	// Logf receives one line per notable event; nil discards them.
	Logf func(format string, args ...any)
	// TLS, when set, serves the API over TLS with this configuration (a
	// certificate of a test CA), as argocd-server does without --insecure,
	// and then also answers gRPC-Web, as argocd-server does.
	TLS *tls.Config
	// PathPrefix is the path the API is served under for gRPC-Web
	// (argocd-server's --rootpath), e.g. "/argo-cd"; needs TLS.
	PathPrefix string
	// Listen is the address to listen on; empty means 127.0.0.1 on a
	// free port. (Proxies are never used for loopback, so a test of one
	// listens on another address of the machine.)
	Listen string
}

// Server is a running (or not yet started) Argo CD API simulator. Its
// methods are safe for concurrent use.
type Server struct {
	cfg   Config
	token string

	mu       sync.Mutex
	apps     map[string]*app
	projects map[string]*v1alpha1.AppProject
	version  uint64 // last resourceVersion handed out, shared by all apps like a cluster's
	subs     map[*subscriber]struct{}

	started bool
	stopped bool
	// controllerDown is non-nil while the simulated application
	// controller is stopped (StopController); StartController closes it,
	// which answers the refresh requests waiting for the controller.
	controllerDown chan struct{}
	ctx            context.Context
	cancel         context.CancelFunc
	grpc           *grpc.Server
	http           *http.Server // serving TLS, when Config.TLS is set
	addr           string
	wg             sync.WaitGroup
}

// New validates cfg and returns a simulator that is not yet listening.
func New(cfg Config) (*Server, error) {
	if cfg.PollInterval < 0 {
		return nil, fmt.Errorf("argosim: poll interval %s is negative", cfg.PollInterval)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 150 * time.Millisecond
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	tok := cfg.Token
	if tok == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("argosim: generate token: %w", err)
		}
		tok = "argosim-" + hex.EncodeToString(b)
	}
	return &Server{cfg: cfg, token: tok, apps: map[string]*app{}, subs: map[*subscriber]struct{}{}, version: 1000,
		projects: map[string]*v1alpha1.AppProject{"default": defaultProject(time.Now())}}, nil
}

// Token returns the bearer token clients must present.
func (s *Server) Token() string { return s.token }

// Addr returns the address Start listens on, or "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Start listens on 127.0.0.1 (or Config.Listen; plaintext gRPC unless
// Config.TLS, a free port), starts the
// reconcilers of the applications added so far and returns the address
// for apiclient's ServerAddr. The simulator stops when ctx ends or Stop
// is called.
func (s *Server) Start(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return "", errors.New("argosim: already started")
	}
	var lc net.ListenConfig
	listen := s.cfg.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	lis, err := lc.Listen(ctx, "tcp", listen)
	if err != nil {
		return "", fmt.Errorf("argosim: listen: %w", err)
	}
	s.started = true
	s.addr = lis.Addr().String()
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.grpc = grpc.NewServer(grpc.UnaryInterceptor(s.unaryAuth), grpc.StreamInterceptor(s.streamAuth))
	application.RegisterApplicationServiceServer(s.grpc, &appService{s: s})
	project.RegisterProjectServiceServer(s.grpc, &projectService{s: s})
	version.RegisterVersionServiceServer(s.grpc, &versionService{})
	settings.RegisterSettingsServiceServer(s.grpc, &settingsService{s: s})
	if s.cfg.TLS != nil {
		s.serveTLS(lis)
	} else {
		s.wg.Go(func() {
			if err := s.grpc.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				s.cfg.Logf("argosim: serve: %v", err)
			}
		})
	}
	for _, a := range s.apps {
		s.startReconciler(a)
	}
	// Stop when the caller's context ends, as Stop would.
	context.AfterFunc(s.ctx, func() { s.grpc.Stop() })
	s.cfg.Logf("%s listening on %s", Name, s.addr)
	return s.addr, nil
}

// serveTLS serves native gRPC (HTTP/2) and gRPC-Web (HTTP/1.1, under
// PathPrefix) on one TLS listener, as argocd-server does.
func (s *Server) serveTLS(lis net.Listener) {
	web := grpcweb.WrapServer(s.grpc)
	prefix := strings.TrimRight(s.cfg.PathPrefix, "/")
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if web.IsGrpcWebRequest(r) {
				if prefix != "" {
					if !strings.HasPrefix(r.URL.Path, prefix+"/") {
						http.NotFound(w, r)
						return
					}
					r.URL.Path = strings.TrimPrefix(r.URL.Path, prefix)
				}
				web.ServeHTTP(w, r)
				return
			}
			s.grpc.ServeHTTP(w, r)
		}),
		TLSConfig:         s.cfg.TLS.Clone(),
		ReadHeaderTimeout: 10 * time.Second,
	}
	s.http = srv
	s.wg.Go(func() {
		if err := srv.ServeTLS(lis, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logf("argosim: serve: %v", err)
		}
	})
	context.AfterFunc(s.ctx, func() { _ = srv.Close() })
}

// Stop closes every connection and stream and waits for the reconcilers.
// It is idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	if !s.started || s.stopped {
		s.stopped = true
		s.mu.Unlock()
		return
	}
	s.stopped = true
	s.cancel()
	s.mu.Unlock()
	s.grpc.Stop()
	if s.http != nil {
		_ = s.http.Close()
	}
	s.wg.Wait()
}

// CloseWatches ends every open Watch stream with Unavailable, as a server
// restart or a proxy idle timeout would, so clients must reconnect.
func (s *Server) CloseWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub := range s.subs {
		sub.close()
		delete(s.subs, sub)
	}
	s.cfg.Logf("argosim: closed all watch streams")
}

// OpenWatches returns how many Watch streams are open.
func (s *Server) OpenWatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

// --- watch fan-out ---

// watchBuffer bounds a subscriber's backlog; a client that falls this far
// behind is disconnected (and, being an Argo CD client, reconnects) rather
// than letting the simulator block or drop events silently.
const watchBuffer = 256

type subscriber struct {
	app    string // "" for all applications
	events chan *v1alpha1.ApplicationWatchEvent
	done   chan struct{}
	once   sync.Once
}

func (sub *subscriber) close() { sub.once.Do(func() { close(sub.done) }) }

func (s *Server) subscribe(appName string) *subscriber {
	sub := &subscriber{app: appName, events: make(chan *v1alpha1.ApplicationWatchEvent, watchBuffer), done: make(chan struct{})}
	s.mu.Lock()
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	return sub
}

func (s *Server) unsubscribe(sub *subscriber) {
	s.mu.Lock()
	delete(s.subs, sub)
	s.mu.Unlock()
	sub.close()
}

// broadcast hands a copy of obj to every matching subscriber. s.mu is held,
// which keeps events in resourceVersion order.
func (s *Server) broadcast(obj *v1alpha1.Application) {
	for sub := range s.subs {
		if sub.app != "" && sub.app != obj.Name {
			continue
		}
		select {
		case sub.events <- &v1alpha1.ApplicationWatchEvent{Type: "MODIFIED", Application: *obj.DeepCopy()}:
		default:
			s.cfg.Logf("argosim: watch subscriber fell %d events behind; disconnecting it", watchBuffer)
			sub.close()
			delete(s.subs, sub)
		}
	}
}

// nextVersion hands out the next resourceVersion; s.mu is held.
func (s *Server) nextVersion() string {
	s.version++
	return strconv.FormatUint(s.version, 10)
}

// --- authentication ---

// publicMethods need no token, as on a real Argo CD server: clients probe
// the version before they log in.
var publicMethods = map[string]bool{
	"/version.VersionService/Version": true,
	"/cluster.SettingsService/Get":    true,
}

func (s *Server) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.authorize(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.authorize(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}

// authorize accepts the token where Argo CD's server looks for it (server
// getToken): the "token" metadata apiclient sends, an "authorization:
// Bearer" header, or the argocd.token cookie the web UI sends.
func (s *Server) authorize(ctx context.Context, method string) error {
	if publicMethods[method] {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	tok := tokenFrom(md)
	if tok == "" {
		return status.Error(codes.Unauthenticated, "no session information ("+Name+")")
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		return status.Error(codes.Unauthenticated, "invalid session: the "+Name+" does not accept this token")
	}
	return nil
}

func tokenFrom(md metadata.MD) string {
	if t := md.Get("token"); len(t) > 0 && t[0] != "" {
		return t[0]
	}
	for _, h := range md.Get("authorization") {
		if tok, ok := strings.CutPrefix(h, "Bearer "); ok && tok != "" {
			return tok
		}
	}
	for _, key := range []string{"grpcgateway-cookie", "cookie"} {
		for _, c := range md.Get(key) {
			cookies, err := http.ParseCookie(c)
			if err != nil {
				continue
			}
			for _, ck := range cookies {
				if ck.Name == "argocd.token" && ck.Value != "" {
					return ck.Value
				}
			}
		}
	}
	return ""
}
