// Package serve is the helper side of relcap's Argo CD process boundary:
// it serves adapters/argocd's Pool (and relcap init's application list)
// over net/rpc with the JSON codec on a pipe, to adapters/argocd/remote in
// the relcap binary, which links none of argo-cd, gRPC or Kubernetes.
// docs/ARCHITECTURE.md says why the boundary is there.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
	"sync"
	"time"

	"github.com/relcap/relcap/adapters/argocd"
	"github.com/relcap/relcap/adapters/argocd/remote"
	"github.com/relcap/relcap/adapters/render/helm"
	"github.com/relcap/relcap/workflow"
)

// Serve answers calls read from r, writing replies to w, until r ends
// (relcap closed the pipe or exited) or ctx does; then it ends every
// watch and closes the connections it opened. getenv reads the tokens
// (os.Getenv: they come in the helper's environment, never on the pipe).
func Serve(ctx context.Context, r io.Reader, w io.Writer, build remote.Build, getenv func(string) string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	svc := &Service{base: ctx, build: build, getenv: getenv, calls: map[uint64]context.CancelFunc{}, streams: map[uint64]*stream{}}
	defer svc.close()
	srv := rpc.NewServer()
	if err := srv.RegisterName(remote.Service, svc); err != nil {
		return err
	}
	conn := pipe{Reader: r, Writer: w}
	done := make(chan struct{})
	go func() {
		srv.ServeCodec(jsonrpc.NewServerCodec(conn))
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// pipe is the helper's stdin and stdout as one connection.
type pipe struct {
	io.Reader
	io.Writer
}

func (pipe) Close() error { return nil }

// Service is the receiver net/rpc serves: one exported method per call of
// the protocol (remote's Args and Reply types).
type Service struct {
	base   context.Context
	build  remote.Build
	getenv func(string) string

	mu      sync.Mutex
	pool    *argocd.Pool
	calls   map[uint64]context.CancelFunc
	streams map[uint64]*stream
	nextID  uint64
}

type stream struct {
	updates <-chan workflow.AppUpdate
	stop    context.CancelFunc
}

// Hello answers the helper's build and takes the environments to serve.
func (s *Service) Hello(args remote.HelloArgs, reply *remote.HelloReply) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pool == nil {
		p := &workflow.Project{}
		for _, e := range args.Envs {
			p.Environments = append(p.Environments, workflow.Environment{Name: e.Env, ArgoCD: e.Target})
		}
		s.pool = argocd.NewPool(p, s.getenv)
	}
	reply.Build = s.build
	return nil
}

// context is the context of one call: the caller's deadline, cancelled by
// Cancel with the call's ID.
func (s *Service) context(c remote.Call) (context.Context, func()) {
	ctx, cancel := s.base, context.CancelFunc(func() {})
	if !c.Deadline.IsZero() {
		ctx, cancel = context.WithDeadline(ctx, c.Deadline)
	}
	ctx, cancelCall := context.WithCancel(ctx)
	s.mu.Lock()
	s.calls[c.ID] = cancelCall
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.calls, c.ID)
		s.mu.Unlock()
		cancelCall()
		cancel()
	}
}

func (s *Service) poolOrFault() (*argocd.Pool, *remote.Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pool == nil {
		return nil, remote.FaultOf(errors.New("relcap-argocd: a call before Hello"))
	}
	return s.pool, nil
}

// on runs f with the pool and the call's context, and returns its fault.
func (s *Service) on(c remote.Call, f func(context.Context, *argocd.Pool) error) *remote.Fault {
	pool, flt := s.poolOrFault()
	if flt != nil {
		return flt
	}
	ctx, done := s.context(c)
	defer done()
	return remote.FaultOf(f(ctx, pool))
}

// Cancel ends a call in flight (the caller's context ended).
func (s *Service) Cancel(args remote.CancelArgs, reply *remote.Empty) error {
	s.mu.Lock()
	cancel := s.calls[args.ID]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// Get is Pool.Get.
func (s *Service) Get(args remote.AppArgs, reply *remote.GetReply) error {
	reply.Fault = s.on(args.Call, func(ctx context.Context, p *argocd.Pool) (err error) {
		reply.State, err = p.Get(ctx, args.App)
		return err
	})
	return nil
}

// Watch starts Pool.Watch; Next reads it and Stop ends it. The stream
// lives until Stop, its end, or the caller's deadline.
func (s *Service) Watch(args remote.WatchArgs, reply *remote.WatchReply) error {
	pool, flt := s.poolOrFault()
	if flt != nil {
		reply.Fault = flt
		return nil
	}
	ctx, cancel := s.base, context.CancelFunc(func() {})
	if !args.Deadline.IsZero() {
		ctx, cancel = context.WithDeadline(ctx, args.Deadline)
	}
	ctx, stop := context.WithCancel(ctx)
	updates, err := pool.Watch(ctx, args.App, args.Since)
	if err != nil {
		stop()
		cancel()
		reply.Fault = remote.FaultOf(err)
		return nil
	}
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.streams[id] = &stream{updates: updates, stop: func() { stop(); cancel() }}
	s.mu.Unlock()
	reply.Stream = id
	return nil
}

// maxBatch bounds the updates one Next returns.
const maxBatch = 64

// Next waits up to args.Wait for the stream's next update, then returns
// it with whatever else is already there.
func (s *Service) Next(args remote.NextArgs, reply *remote.NextReply) error {
	s.mu.Lock()
	st := s.streams[args.Stream]
	s.mu.Unlock()
	if st == nil {
		reply.Done = true
		return nil
	}
	timer := time.NewTimer(args.Wait)
	defer timer.Stop()
	select {
	case u, ok := <-st.updates:
		if !ok {
			s.drop(args.Stream)
			reply.Done = true
			return nil
		}
		reply.Updates = append(reply.Updates, remote.Update{State: u.State, Fault: remote.FaultOf(u.Err)})
	case <-timer.C:
		return nil
	case <-s.base.Done():
		reply.Done = true
		return nil
	}
	for len(reply.Updates) < maxBatch {
		select {
		case u, ok := <-st.updates:
			if !ok {
				s.drop(args.Stream)
				reply.Done = true
				return nil
			}
			reply.Updates = append(reply.Updates, remote.Update{State: u.State, Fault: remote.FaultOf(u.Err)})
		default:
			return nil
		}
	}
	return nil
}

// Stop ends a watch.
func (s *Service) Stop(args remote.StreamArgs, reply *remote.Empty) error {
	s.drop(args.Stream)
	return nil
}

func (s *Service) drop(id uint64) {
	s.mu.Lock()
	st := s.streams[id]
	delete(s.streams, id)
	s.mu.Unlock()
	if st != nil {
		st.stop()
	}
}

// ResourceTree is Pool.ResourceTree.
func (s *Service) ResourceTree(args remote.AppArgs, reply *remote.TreeReply) error {
	reply.Fault = s.on(args.Call, func(ctx context.Context, p *argocd.Pool) (err error) {
		reply.Resources, err = p.ResourceTree(ctx, args.App)
		return err
	})
	return nil
}

// Refresh is Pool.Refresh.
func (s *Service) Refresh(args remote.RefreshArgs, reply *remote.Empty) error {
	reply.Fault = s.on(args.Call, func(ctx context.Context, p *argocd.Pool) error {
		return p.Refresh(ctx, args.App, args.Within)
	})
	return nil
}

// TerminateOperation is Pool.TerminateOperation.
func (s *Service) TerminateOperation(args remote.AppArgs, reply *remote.Empty) error {
	reply.Fault = s.on(args.Call, func(ctx context.Context, p *argocd.Pool) error {
		return p.TerminateOperation(ctx, args.App)
	})
	return nil
}

// SyncPolicy is Pool.SyncPolicy.
func (s *Service) SyncPolicy(args remote.AppArgs, reply *remote.PolicyReply) error {
	reply.Fault = s.on(args.Call, func(ctx context.Context, p *argocd.Pool) (err error) {
		reply.Policy, err = p.SyncPolicy(ctx, args.App)
		return err
	})
	return nil
}

// SetSyncPolicy is Pool.SetSyncPolicy.
func (s *Service) SetSyncPolicy(args remote.PolicyArgs, reply *remote.Empty) error {
	reply.Fault = s.on(args.Call, func(ctx context.Context, p *argocd.Pool) error {
		return p.SetSyncPolicy(ctx, args.App, args.Policy)
	})
	return nil
}

// Drift is Pool.Drift.
func (s *Service) Drift(args remote.AppArgs, reply *remote.DriftReply) error {
	reply.Fault = s.on(args.Call, func(ctx context.Context, p *argocd.Pool) (err error) {
		reply.Drift, err = p.Drift(ctx, args.App)
		return err
	})
	return nil
}

// DenySync is Pool.DenySync.
func (s *Service) DenySync(args remote.WindowArgs, reply *remote.WindowReply) error {
	reply.Fault = s.on(args.Call, func(ctx context.Context, p *argocd.Pool) (err error) {
		reply.Window, err = p.DenySync(ctx, args.App, args.Window)
		return err
	})
	return nil
}

// RemoveWindow is Pool.RemoveWindow.
func (s *Service) RemoveWindow(args remote.WindowArgs, reply *remote.RemovedReply) error {
	reply.Fault = s.on(args.Call, func(ctx context.Context, p *argocd.Pool) (err error) {
		reply.Removed, err = p.RemoveWindow(ctx, args.App, args.Window)
		return err
	})
	return nil
}

// ListWindows is Pool.ListWindows.
func (s *Service) ListWindows(args remote.AppArgs, reply *remote.WindowsReply) error {
	reply.Fault = s.on(args.Call, func(ctx context.Context, p *argocd.Pool) (err error) {
		reply.Windows, err = p.ListWindows(ctx, args.App)
		return err
	})
	return nil
}

// ManagedObjects is Pool.ManagedObjects.
func (s *Service) ManagedObjects(args remote.EnvArgs, reply *remote.ObjectsReply) error {
	reply.Fault = s.on(args.Call, func(ctx context.Context, p *argocd.Pool) (err error) {
		reply.Objects, err = p.ManagedObjects(ctx, workflow.Environment{Name: args.Env.Env, ArgoCD: args.Env.Target})
		return err
	})
	return nil
}

// Applications is Adapter.Applications on the server args name, with the
// token from the helper's environment: what relcap init lists.
func (s *Service) Applications(args remote.ListArgs, reply *remote.ListReply) error {
	ctx, done := s.context(args.Call)
	defer done()
	opts := args.Options
	opts.AuthToken = s.getenv(opts.TokenEnv)
	ad, err := argocd.New(opts)
	if err != nil {
		reply.Fault = remote.FaultOf(err)
		return nil
	}
	defer ad.Close()
	reply.Apps, err = ad.Applications(ctx)
	reply.Fault = remote.FaultOf(err)
	return nil
}

// close ends every watch and closes the pool's connections.
func (s *Service) close() {
	s.mu.Lock()
	streams := s.streams
	s.streams = map[uint64]*stream{}
	pool := s.pool
	s.mu.Unlock()
	for _, st := range streams {
		st.stop()
	}
	if err := pool.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "relcap-argocd:", err)
	}
}

// RenderHelm is adapters/render/helm's Render: no Argo CD needed, only
// Helm's engine, which is linked here and not in relcap.
func (s *Service) RenderHelm(args remote.HelmArgs, reply *remote.HelmReply) error {
	_, done := s.context(args.Call)
	defer done()
	var err error
	reply.Objects, reply.ChartDir, reply.Unrendered, err = helm.Render(args.Files, args.ValuesFile, args.Release)
	reply.Fault = remote.FaultOf(err)
	return nil
}
