// Package remote is relcap's side of its Argo CD process boundary: Pool
// and Lister implement the same ports as adapters/argocd's Pool and
// Adapter by calling the helper executable relcap-argocd, which links
// argo-cd's client (and through it kubectl, Kubernetes' API machinery and
// gRPC); this package links none of them, so commands that never talk to
// Argo CD do not pay for their package initialisation at every start.
// docs/ARCHITECTURE.md says more. The helper is started on the first call,
// one per Pool, and ends when the Pool is closed or relcap exits (its
// stdin ends).
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HelperName is the helper executable's name.
const HelperName = "relcap-argocd"

// EnvHelper names the helper executable, overriding the search beside
// relcap and on PATH.
const EnvHelper = "RELCAP_ARGOCD_HELPER"

// ErrHelperMissing: no relcap-argocd was found.
var ErrHelperMissing = errors.New("relcap-argocd, the helper relcap talks to Argo CD through, is not installed")

// Config says how to start the helper.
type Config struct {
	// Build is relcap's own build; the helper's must match it.
	Build Build
	// Env is the helper's environment, tokens included (they never go on
	// its command line or through the pipe); nil means this process's.
	Env []string
}

func (c Config) getenv(key string) string {
	if c.Env == nil {
		return os.Getenv(key)
	}
	v := ""
	for _, kv := range c.Env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// FindHelper returns the helper's path: $RELCAP_ARGOCD_HELPER when set,
// else relcap-argocd beside the running executable (as a release archive
// and `make build` put it), else on PATH.
func FindHelper(getenv func(string) string, build Build) (string, error) {
	if p := getenv(EnvHelper); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%w: $%s names %s, which is not an executable file", ErrHelperMissing, EnvHelper, p)
		}
		return p, nil
	}
	var beside string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		beside = filepath.Dir(exe)
		p := filepath.Join(beside, HelperName)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(HelperName); err == nil {
		return p, nil
	}
	return "", MissingError(beside, build)
}

// MissingError is the error for a helper found nowhere: where relcap
// looked and how to install it.
func MissingError(beside string, build Build) error {
	version := "latest"
	if strings.HasPrefix(build.Version, "v") {
		version = build.Version
	}
	return fmt.Errorf("%w: it is neither beside relcap (in %s) nor on PATH; install it from the same release archive as relcap, "+
		"or with go install github.com/relcap/relcap/cmd/relcap-argocd@%s, or name it in $%s", ErrHelperMissing, beside, version, EnvHelper)
}

// helloTimeout bounds the handshake: the helper answers it as soon as
// its packages are initialised (a fraction of a second), so a program that
// does not answer is not the helper.
var helloTimeout = 30 * time.Second

// helper is one running relcap-argocd serving calls, started on the first.
type helper struct {
	cfg   Config
	hello HelloArgs

	mu      sync.Mutex
	started bool
	err     error // why it could not start
	path    string
	cmd     *exec.Cmd
	client  *rpc.Client
	stderr  *tail
	exited  chan struct{} // closed when the process has ended
	waitErr error
	closed  bool
	ids     atomic.Uint64
}

// conn is the helper's connection, starting it on first use.
func (h *helper) conn(ctx context.Context) (*rpc.Client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("argo cd: the connection to relcap-argocd is closed")
	}
	if !h.started {
		h.started = true
		h.err = h.start(ctx)
		if h.err != nil && ctx.Err() != nil {
			h.started = false // the caller gave up; the next call tries again
		}
	}
	return h.client, h.err
}

// start runs the helper and shakes hands: its build must be relcap's.
func (h *helper) start(ctx context.Context) error {
	path, err := FindHelper(h.cfg.getenv, h.cfg.Build)
	if err != nil {
		return err
	}
	h.path = path
	cmd := exec.Command(path, "serve")
	cmd.Env = h.cfg.Env
	h.stderr = &tail{}
	cmd.Stderr = h.stderr
	// Pipes of our own rather than cmd.StdinPipe/StdoutPipe: Wait closes
	// those as soon as the process ends, racing a call still writing
	// ("file already closed") where the helper's death should be named.
	// Ours stay open until stop, so a dead helper reads as EOF and EPIPE.
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return err
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		_ = childIn.Close()
		_ = stdin.Close()
		return err
	}
	cmd.Stdin, cmd.Stdout = childIn, childOut
	err = cmd.Start()
	_ = childIn.Close() // the child holds its own copies now
	_ = childOut.Close()
	if err != nil {
		_ = stdin.Close()
		_ = stdout.Close()
		return fmt.Errorf("argo cd: start %s: %w", path, err)
	}
	h.cmd, h.exited = cmd, make(chan struct{})
	go func() {
		h.waitErr = cmd.Wait()
		close(h.exited)
	}()
	h.client = jsonrpc.NewClient(pipe{ReadCloser: stdout, WriteCloser: stdin})
	var reply HelloReply
	hctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	if err := h.invoke(hctx, "Hello", "start", 0, h.hello, &reply); err != nil {
		h.stop()
		if ctx.Err() == nil && hctx.Err() != nil {
			return fmt.Errorf("%s did not answer relcap within %s: is it relcap's Argo CD helper?", path, helloTimeout)
		}
		return err
	}
	if !reply.Build.matches(h.cfg.Build) {
		h.stop()
		return fmt.Errorf("%s is version %s, relcap is %s: install both from the same release", path, reply.Build, h.cfg.Build)
	}
	return nil
}

// pipe is the helper's stdout and stdin as one connection.
type pipe struct {
	io.ReadCloser
	io.WriteCloser
}

func (p pipe) Close() error {
	return errors.Join(p.WriteCloser.Close(), p.ReadCloser.Close())
}

// newCall numbers a call and carries ctx's deadline.
func (h *helper) newCall(ctx context.Context) Call {
	c := Call{ID: h.ids.Add(1)}
	if d, ok := ctx.Deadline(); ok {
		c.Deadline = d
	}
	return c
}

// call makes one call; op names it in errors.
func (h *helper) call(ctx context.Context, method, op string, id uint64, args, reply any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("argo cd %s: %w", op, err)
	}
	if _, err := h.conn(ctx); err != nil {
		return err
	}
	return h.invoke(ctx, method, op, id, args, reply)
}

// invoke sends one request and waits for its reply, the end of ctx (then
// the helper is told to cancel call id) or the end of the helper.
func (h *helper) invoke(ctx context.Context, method, op string, id uint64, args, reply any) error {
	c := h.client.Go(Service+"."+method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-c.Done:
		if c.Error != nil {
			return h.broken(op, c.Error)
		}
		return nil
	case <-ctx.Done():
		if id != 0 {
			h.client.Go(Service+".Cancel", CancelArgs{ID: id}, &Empty{}, make(chan *rpc.Call, 1))
		}
		return fmt.Errorf("argo cd %s: %w", op, ctx.Err())
	}
}

// broken says why a call got no reply: the helper ended (how, and its last
// words), or the pipe failed.
func (h *helper) broken(op string, err error) error {
	var answered rpc.ServerError
	if errors.As(err, &answered) {
		return fmt.Errorf("argo cd %s: relcap-argocd: %w", op, err)
	}
	// Any other error is the pipe's (EOF, EPIPE, a closed client): the
	// helper is ending or has ended; give it a moment to be reaped.
	select {
	case <-h.exited:
	case <-time.After(2 * time.Second):
	}
	select {
	case <-h.exited:
	default:
		if !errors.Is(err, rpc.ErrShutdown) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return fmt.Errorf("argo cd %s: relcap-argocd: %w", op, err)
		}
	}
	how := "stopped"
	select {
	case <-h.exited:
		if h.waitErr != nil {
			how = "stopped (" + h.waitErr.Error() + ")"
		} else {
			how = "exited"
		}
	default:
	}
	msg := fmt.Sprintf("argo cd %s: %s %s before it answered", op, h.path, how)
	if last := h.stderr.lastLine(); last != "" {
		msg += ": " + last
	}
	return fmt.Errorf("%w: %s", ErrHelperStopped, msg)
}

// ErrHelperStopped: the helper ended while relcap waited for it.
var ErrHelperStopped = errors.New("relcap-argocd stopped")

// stop ends the helper: its stdin closes and the process is killed.
func (h *helper) stop() {
	if h.client != nil {
		_ = h.client.Close()
	}
	if h.cmd != nil && h.cmd.Process != nil {
		_ = h.cmd.Process.Kill()
		<-h.exited
	}
}

// close stops the helper if it was started; calls after it fail.
func (h *helper) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	if h.started && h.err == nil {
		h.stop()
	}
	return nil
}

// tail keeps the end of what the helper wrote to stderr.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4096

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = t.buf[len(t.buf)-tailSize:]
	}
	return len(p), nil
}

func (t *tail) lastLine() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
