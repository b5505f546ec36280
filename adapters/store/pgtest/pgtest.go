// Package pgtest gives tests a real PostgreSQL: the server RELCAP_TEST_POSTGRES
// names, or else a throw-away cluster of the test binary's own, started on
// first use (initdb into a temporary directory, postgres on a free loopback
// port with its unix socket in that directory) and stopped when the
// package's tests end. Each test gets an empty database of its own.
//
// A test that asks for a database and cannot have one fails, saying why
// and what to do: a suite that skips because PostgreSQL is missing must
// not pass.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable holding the URL of a PostgreSQL
// server to test against instead of a throw-away cluster. Its user needs
// the CREATEDB privilege: every test creates a database and drops it.
const EnvURL = "RELCAP_TEST_POSTGRES"

// BinDirs are where the server's binaries are looked for when initdb is not
// on PATH: Debian's postgresql package installs them there, off PATH.
const BinDirs = "/usr/lib/postgresql/*/bin"

var (
	mu     sync.Mutex
	srv    *server // the server in use, once started
	srvErr error   // why it could not be, once tried
	dbSeq  atomic.Int64
)

// server is a PostgreSQL server the tests may create databases on.
type server struct {
	base    *url.URL  // a superuser's URL, without a database
	maint   string    // the URL of the maintenance database
	admin   *pgx.Conn // to the maintenance database, for CREATE/DROP DATABASE; guarded by mu
	cluster *cluster  // nil when RELCAP_TEST_POSTGRES names the server
}

// Main runs the package's tests and then stops the throw-away cluster, if
// one was started. Call it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if srv != nil {
		_ = srv.admin.Close(context.Background())
		if srv.cluster != nil {
			if err := srv.cluster.stop(); err != nil {
				fmt.Fprintln(os.Stderr, "pgtest:", err)
				if code == 0 {
					code = 1
				}
			}
		}
		srv = nil
	}
	return code
}

// Database creates an empty database for tb and returns its URL, with the
// password of a user that owns it. The database is dropped when tb ends.
// It fails tb when no server can be had, saying why.
func Database(tb testing.TB) string {
	tb.Helper()
	s, err := get()
	if err != nil {
		tb.Fatalf("no PostgreSQL to test against: %v", err)
	}
	name := dbName(tb.Name())
	mu.Lock()
	_, err = s.admin.Exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	mu.Unlock()
	if err != nil {
		tb.Fatalf("create test database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		// FORCE ends the sessions a failed test may have left open.
		if _, err := s.admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Errorf("drop test database %s: %v", name, err)
		}
	})
	u := *s.base
	u.Path = "/" + name
	return u.String()
}

// Server returns the URL of the server's maintenance database, for tests
// that need to reach the server without a database of their own (a wrong
// password, a database that does not exist). It fails tb like Database.
func Server(tb testing.TB) string {
	tb.Helper()
	s, err := get()
	if err != nil {
		tb.Fatalf("no PostgreSQL to test against: %v", err)
	}
	return s.maint
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// dbName is a database name that says which test it is for, unique in
// this process and across processes sharing RELCAP_TEST_POSTGRES.
func dbName(test string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	n := strings.Trim(nonName.ReplaceAllString(strings.ToLower(test), "_"), "_")
	if len(n) > 40 {
		n = n[len(n)-40:]
	}
	return fmt.Sprintf("relcap_%d_%s_%s", dbSeq.Add(1), hex.EncodeToString(b[:]), n)
}

// get returns the server, starting it on first use.
func get() (*server, error) {
	mu.Lock()
	defer mu.Unlock()
	if srv != nil || srvErr != nil {
		return srv, srvErr
	}
	srv, srvErr = start()
	return srv, srvErr
}

func start() (*server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if v := os.Getenv(EnvURL); v != "" {
		base, err := url.Parse(v)
		if err != nil || (base.Scheme != "postgres" && base.Scheme != "postgresql") {
			return nil, fmt.Errorf("%s is not a postgres:// URL; unset it to use a throw-away cluster", EnvURL)
		}
		admin, err := pgx.Connect(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w; fix the URL or unset it to use a throw-away cluster", EnvURL, err)
		}
		nb := *base
		nb.Path = ""
		return &server{base: &nb, maint: v, admin: admin}, nil
	}
	c, err := startCluster(ctx)
	if err != nil {
		return nil, err
	}
	admin, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		_ = c.stop()
		return nil, fmt.Errorf("connect to the throw-away cluster: %w", err)
	}
	base, _ := url.Parse(c.url(""))
	return &server{base: base, maint: c.url("postgres"), admin: admin, cluster: c}, nil
}

// cluster is a throw-away PostgreSQL cluster: its data directory, socket
// directory and log under dir, its postmaster a child of this process.
type cluster struct {
	dir      string
	port     int
	password string
	proc     *exec.Cmd
	exited   chan struct{} // closed when proc has exited
	cred     *syscall.Credential
}

const superuser = "relcap"

// url is the superuser's URL of database db (none when empty), over
// loopback TCP: the unix socket directory is private to the server's user.
func (c *cluster) url(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(superuser, c.password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)), RawQuery: "sslmode=disable"}
	if db != "" {
		u.Path = "/" + db
	}
	return u.String()
}

// startCluster makes a new cluster in a temporary directory and starts it.
//
// initdb and postgres refuse to run as root (a server running as root
// could be made to overwrite any file), and our test runs are root on this
// machine image and in CI containers. As root the cluster therefore runs
// as an unprivileged account: the system's "postgres" user when the
// postgresql package created it, else "nobody". The temporary directory is
// made under os.TempDir (world-searchable /tmp) and handed to that user;
// the processes get its uid and gid through exec's SysProcAttr.Credential,
// which needs no runuser or sudo. As anyone else the cluster runs as the
// current user.
//
// postgres is started directly rather than through pg_ctl start, which
// detaches it: as a child with a parent-death signal it cannot outlive
// a test binary that go test kills at its timeout, and no stale server
// is left holding a port and a directory.
func startCluster(ctx context.Context) (*cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "relcap-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("throw-away cluster: %w", err)
	}
	var pw [16]byte
	_, _ = rand.Read(pw[:])
	c := &cluster{dir: dir, password: hex.EncodeToString(pw[:]), cred: cred}
	fail := func(err error) (*cluster, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(c.password+"\n"), 0o600); err != nil {
		return fail(fmt.Errorf("throw-away cluster: %w", err))
	}
	if err := os.Mkdir(filepath.Join(dir, "socket"), 0o700); err != nil {
		return fail(fmt.Errorf("throw-away cluster: %w", err))
	}
	if cred != nil {
		if p := unsearchable(filepath.Dir(dir), cred); p != "" {
			return fail(fmt.Errorf("throw-away cluster: its user (uid %d) cannot enter %s, above %s: set TMPDIR to a directory every user may enter, such as /tmp", cred.Uid, p, dir))
		}
		for _, p := range []string{dir, pwfile, filepath.Join(dir, "socket")} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return fail(fmt.Errorf("throw-away cluster: hand %s to the server's user: %w", p, err))
			}
		}
	}
	initdb := c.command(ctx, filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"),
		"-U", superuser, "--pwfile="+pwfile, "--auth=scram-sha-256", "-E", "UTF8", "--no-locale",
		"--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb in %s: %w: %s", dir, err, strings.TrimSpace(string(out))))
	}
	// A free port can be taken by someone else before postgres binds it;
	// another one is tried then.
	for attempt := 1; ; attempt++ {
		err := c.startServer(ctx, filepath.Join(bin, "postgres"))
		if err == nil {
			return c, nil
		}
		if attempt == 3 || !strings.Contains(err.Error(), "could not bind") {
			return fail(err)
		}
	}
}

// command runs name as the server's user, in dir, with a plain
// environment (no PG* variables of the caller's leak in).
func (c *cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd
}

// startServer starts postgres on a free loopback port and waits until it
// accepts connections.
func (c *cluster) startServer(ctx context.Context, postgres string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.port = port
	logPath := filepath.Join(c.dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("throw-away cluster: %w", err)
	}
	defer logFile.Close()
	// Durability is of no use to a cluster deleted at the end of the run;
	// without fsync the suite does not wait on the disk.
	cmd := exec.Command(postgres, "-D", filepath.Join(c.dir, "data"), "-p", strconv.Itoa(port),
		"-k", filepath.Join(c.dir, "socket"), "-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB", "-c", "max_connections=300", "-c", "log_min_messages=warning")
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "TZ=UTC"}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// SIGQUIT is PostgreSQL's immediate shutdown: the postmaster ends its
	// backends and exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", postgres, err)
	}
	c.proc, c.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(c.exited) }()

	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, c.url("postgres"))
		cancel()
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		select {
		case <-c.exited:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited at start (log %s): %s", logPath, tail(string(b), 2000))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = c.stop()
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres did not accept connections within a minute: %v; log: %s", err, tail(string(b), 2000))
		}
	}
}

// stop shuts the server down (fast shutdown: sessions are ended) and
// removes the cluster's directory.
func (c *cluster) stop() error {
	if c.proc != nil && c.proc.Process != nil {
		_ = c.proc.Process.Signal(syscall.SIGINT)
		select {
		case <-c.exited:
		case <-time.After(15 * time.Second):
			_ = c.proc.Process.Kill()
			<-c.exited
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remove the throw-away cluster %s: %w", c.dir, err)
	}
	return nil
}

// binDir finds the directory of initdb and postgres: initdb's on PATH,
// else the newest of BinDirs.
func binDir() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	found, _ := filepath.Glob(BinDirs)
	slices.SortFunc(found, func(a, b string) int { return versionOf(b) - versionOf(a) })
	dirs = append(dirs, found...)
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb and postgres) on PATH or in " + BinDirs +
		": run `make tools` (it installs Debian's postgresql package) or set " + EnvURL + " to the URL of a server")
}

// versionOf is the major version in /usr/lib/postgresql/<version>/bin.
func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// serverCredential is the account the cluster runs as: nil (this process's
// own) unless this process is root; see startCluster.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		// No Groups: root's supplementary groups are dropped.
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and neither a postgres nor a nobody user exists to run the throw-away cluster as " +
		"(PostgreSQL refuses to run as root): create one (useradd --system postgres) or set " + EnvURL)
}

// unsearchable returns the first of dir and its parents that cred's user
// may not enter, or "".
func unsearchable(dir string, cred *syscall.Credential) string {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return d
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		perm := fi.Mode().Perm()
		switch {
		case !ok:
		case st.Uid == cred.Uid && perm&0o100 != 0:
		case st.Uid != cred.Uid && st.Gid == cred.Gid && perm&0o010 != 0:
		case st.Uid != cred.Uid && st.Gid != cred.Gid && perm&0o001 != 0:
		default:
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
