package argocd_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd"
	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/adapters/argocd/argosim/argosimtest"
	"github.com/relcap/relcap/workflow/appstate"
)

// proxyChild is the environment variable that makes this test binary, run
// again by TestAnHTTPSProxyIsHonoured, connect once and report: proxy
// settings are read from the process environment (argo-cd's gRPC-Web
// client caches them on first use), so each case is a process of its own.
const proxyChild = "RELCAP_TEST_PROXY_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(proxyChild); spec != "" {
		os.Exit(proxyChildMain(spec))
	}
	os.Exit(m.Run())
}

// proxyChildMain connects to the simulator named in spec (addr|token|ca)
// and prints the application's name.
func proxyChildMain(spec string) int {
	parts := strings.Split(spec, "|")
	ad, err := argocd.New(argocd.Options{Server: parts[0], AuthToken: parts[1], CAFile: parts[2], Timeout: 10 * time.Second})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	defer ad.Close()
	ctx, cancel := contextWithTimeout(15 * time.Second)
	defer cancel()
	st, err := ad.Get(ctx, appstate.AppRef{Env: "staging", Name: "web-staging"})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("app:", st.Name)
	return 0
}

// connectProxy is an HTTP proxy that tunnels CONNECT requests and counts
// them: what a team's egress proxy does for TLS.
type connectProxy struct {
	addr    string
	tunnels atomic.Int32
	wg      sync.WaitGroup
}

func startConnectProxy(t *testing.T) *connectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &connectProxy{addr: ln.Addr().String()}
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(c) })
		}
	})
	return p
}

func (p *connectProxy) serve(c net.Conn) {
	defer c.Close()
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil || req.Method != http.MethodConnect {
		_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		return
	}
	up, err := net.DialTimeout("tcp", req.Host, 5*time.Second)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	defer up.Close()
	p.tunnels.Add(1)
	_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// machineAddress is a non-loopback IPv4 address of this machine: Go never
// proxies loopback, so the simulator listens there for this test.
func machineAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	require.FailNow(t, "this test needs a non-loopback IPv4 address on the machine, as every CI machine of this project has")
	return ""
}

// TestAnHTTPSProxyIsHonoured: with $HTTPS_PROXY set, relcap reaches Argo CD
// through the proxy (speaking gRPC-Web, the only way argo-cd's client goes
// through an HTTP proxy) and never dials around it; $NO_PROXY naming the
// server goes direct.
func TestAnHTTPSProxyIsHonoured(t *testing.T) {
	t.Parallel()
	host := machineAddress(t)
	repo, _ := argosimtest.NewRepo(t, "v1")
	ca := argosimtest.NewCA(t, "team-ca")
	sim, err := argosim.New(argosim.Config{PollInterval: 50 * time.Millisecond, Logf: t.Logf, TLS: ca.ServerTLSFor(t, host), Listen: host + ":0"})
	require.NoError(t, err)
	require.NoError(t, sim.AddApp(repo.App("web-staging")))
	addr, err := sim.Start(t.Context())
	require.NoError(t, err)
	t.Cleanup(sim.Stop)
	proxy := startConnectProxy(t)

	run := func(env ...string) string {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), append(env, proxyChild+"="+addr+"|"+sim.Token()+"|"+ca.CAFile)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	out := run("HTTPS_PROXY=http://"+proxy.addr, "NO_PROXY=", "https_proxy=", "no_proxy=")
	require.Contains(t, out, "app: web-staging")
	require.Positive(t, proxy.tunnels.Load(), "the connection went through the proxy")

	before := proxy.tunnels.Load()
	out = run("HTTPS_PROXY=http://"+proxy.addr, "NO_PROXY="+host, "https_proxy=", "no_proxy=")
	require.Contains(t, out, "app: web-staging")
	require.Equal(t, before, proxy.tunnels.Load(), "NO_PROXY names the server: direct")
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
