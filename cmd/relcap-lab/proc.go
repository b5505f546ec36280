package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Component is one long-running process of the lab.
type Component struct {
	Name  string
	Path  string
	Args  []string
	Env   []string // added to the lab's environment
	Dir   string   // working directory; the lab directory when empty
	Ports []int    // ports it listens on, checked free after `down`
	Ready Probe
}

// Probe reports nil once a component is ready to serve.
type Probe func(ctx context.Context) error

// running is a started component. exited is closed when the process ends,
// with err holding how, while the lab program that started it still runs.
type running struct {
	Process
	exited chan struct{}
	err    error
}

// start runs c in its own session, with stdout and stderr appended to
// logs/<name>.log, and returns at once. The process outlives the lab
// program: `down` stops it by the pid recorded in the state file.
func start(dir string, c Component) (*running, error) {
	logPath := filepath.Join(dir, "logs", c.Name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir = c.Dir
	if cmd.Dir == "" {
		cmd.Dir = dir
	}
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = logf, logf
	// A new session: its own process group (killed as one by `down`, which
	// also gets git daemon's and redis's children) and no controlling
	// terminal, so ^C in the shell that ran `up` does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", c.Name, c.Path, err)
	}
	r := &running{
		Process: Process{Name: c.Name, PID: cmd.Process.Pid, Args: append([]string{c.Path}, c.Args...), Env: c.Env, WorkDir: cmd.Dir, Log: logPath, Ports: c.Ports},
		exited:  make(chan struct{}),
	}
	r.StartTicks, _ = startTicks(r.PID)
	go func() {
		r.err = cmd.Wait()
		close(r.exited)
	}()
	return r, nil
}

// waitReady polls probe until it passes, the process exits, or ctx ends.
// Failures carry the tail of the component's log: a component that dies is
// reported, never hidden behind a timeout.
func (r *running) waitReady(ctx context.Context, probe Probe) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = probe(pctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-r.exited:
			return fmt.Errorf("%s exited during start-up (%v); last lines of %s:\n%s", r.Name, r.err, r.Log, logTail(r.Log, 25))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v (%w); last lines of %s:\n%s", r.Name, last, ctx.Err(), r.Log, logTail(r.Log, 25))
		case <-t.C:
		}
	}
}

// logTail returns the last n lines of a log file.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	const max = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(fi.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return indent(tail(string(b), n), "    ")
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// startTicks reads the start time of pid from /proc/PID/stat (field 22, in
// clock ticks since boot). Together with the pid it names one process for
// good: a pid reused later has a different start time.
func startTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses; the
	// fields after it start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22; f[0] is field 3
}

// alive reports whether p still names the process `up` started (and not
// a zombie).
func alive(p Process) bool {
	t, err := startTicks(p.PID)
	if err != nil || t != p.StartTicks {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// groupMembers lists the pids whose process group is pgid (a lab process's
// children, e.g. git daemon's per-connection workers).
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// stop ends p's process group: SIGTERM, then SIGKILL after grace. It
// signals only while p.PID still names the process `up` started, and the
// group id equals that pid because every component runs in its own
// session.
func stop(p Process, grace time.Duration) error {
	if !alive(p) && len(groupMembers(p.PID)) == 0 {
		return nil
	}
	if alive(p) {
		_ = syscall.Kill(-p.PID, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(p) && len(groupMembers(p.PID)) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	for range 50 {
		if !alive(p) && len(groupMembers(p.PID)) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s (pid %d) survived SIGKILL", p.Name, p.PID)
}

// Probes.

// tcpProbe is ready when 127.0.0.1:port accepts a connection.
func tcpProbe(port int) Probe {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// insecureTLS is for the health endpoints of components that serve a
// self-signed certificate on loopback (kube-controller-manager,
// kube-scheduler); the apiserver is checked against the lab's CA.
var insecureTLS = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health checks only

// httpProbe is ready when GET url answers 200 with a body containing want.
func httpProbe(client *http.Client, url, token, want string) Probe {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		if want != "" && !strings.Contains(string(body), want) {
			return fmt.Errorf("GET %s: answer %q lacks %q", url, strings.TrimSpace(string(body)), want)
		}
		return nil
	}
}

// redisProbe is ready when redis answers PING with PONG.
func redisProbe(port int) Probe {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return err
		}
		defer c.Close()
		if dl, ok := ctx.Deadline(); ok {
			_ = c.SetDeadline(dl)
		}
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		buf := make([]byte, 16)
		n, err := c.Read(buf)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(string(buf[:n]), "+PONG") {
			return errors.New("redis answered " + strings.TrimSpace(string(buf[:n])))
		}
		return nil
	}
}
