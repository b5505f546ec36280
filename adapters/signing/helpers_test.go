package signing

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// These tests run the real OpenSSH tools. A missing tool fails the test
// rather than skipping it: a skipped signing suite would let CI pass
// without checking that relcap's signatures are OpenSSH's.

// tool returns the path of an OpenSSH program, failing the test without it.
func tool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	require.NoError(t, err, "%s is not installed: the signing tests run the real OpenSSH tools (apt-get install openssh-client)", name)
	return path
}

// run runs an OpenSSH program with stdin and the extra environment, without
// the caller's agent: no test may touch the developer's keys. It returns
// the combined output and the exit code.
func run(t *testing.T, stdin []byte, env []string, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool(t, name), args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), out)
	return string(out), 0
}

// cleanEnv is the test's environment without SSH_AUTH_SOCK.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SSH_AUTH_SOCK=") {
			env = append(env, kv)
		}
	}
	return env
}

// keyFile is a key ssh-keygen made.
type keyFile struct {
	path string        // the private key file; path+".pub" is the public one
	line string        // the public key line, without its comment
	pub  ssh.PublicKey // the public key
	fp   string        // its SHA-256 fingerprint
}

// newKey makes a key of type typ (ed25519, ecdsa, rsa) with ssh-keygen in
// dir, protected by passphrase when it is not empty.
func newKey(t *testing.T, dir, name, typ, passphrase string) keyFile {
	t.Helper()
	path := filepath.Join(dir, name)
	args := []string{"-q", "-t", typ, "-N", passphrase, "-C", name + "@example.com", "-f", path}
	if typ == "rsa" {
		args = append(args, "-b", "2048") // the smallest ssh-keygen allows without warning; keeps the suite fast
	}
	out, code := run(t, nil, nil, "ssh-keygen", args...)
	require.Zero(t, code, "ssh-keygen: %s", out)
	data, err := os.ReadFile(path + ".pub")
	require.NoError(t, err)
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	require.NoError(t, err)
	return keyFile{path: path, line: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))), pub: pub, fp: ssh.FingerprintSHA256(pub)}
}

// writeFile writes lines to dir/name and returns its path.
func writeFile(t *testing.T, dir, name string, lines ...string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return path
}

// startAgent starts a private ssh-agent in the foreground, stopped when the
// test ends, and returns its socket. The socket lives in a short directory
// of its own: t.TempDir paths can exceed the 108 bytes of a Unix socket
// path.
func startAgent(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rsa")
	require.NoError(t, err)
	socket := filepath.Join(dir, "agent.sock")
	cmd := exec.Command(tool(t, "ssh-agent"), "-D", "-a", socket)
	cmd.Env = cleanEnv()
	var stderr lockedBuffer // ssh-agent -D logs as it runs, while the test reads
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.Dial("unix", socket)
		if err == nil {
			_ = conn.Close()
			return socket
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "ssh-agent did not start", "no listener on %s within 5s: %v\n%s", socket, err, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockedBuffer is a bytes.Buffer safe to write from a process's output
// copier while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// sshAdd adds a key file to the agent at socket with the real ssh-add.
func sshAdd(t *testing.T, socket string, k keyFile) {
	t.Helper()
	out, code := run(t, nil, []string{"SSH_AUTH_SOCK=" + socket}, "ssh-add", k.path)
	require.Zero(t, code, "ssh-add %s: %s", k.path, out)
}

// sshVerify checks a signature with ssh-keygen -Y verify and the people
// file at people, at verifyTime when it is not zero. It returns whether
// ssh-keygen accepted it, and its output.
func sshVerify(t *testing.T, people, principal, namespace string, message []byte, armored string, verifyTime time.Time) (bool, string) {
	t.Helper()
	sigPath := filepath.Join(t.TempDir(), "statement.sig")
	require.NoError(t, os.WriteFile(sigPath, []byte(armored), 0o644))
	args := []string{"-Y", "verify", "-f", people, "-I", principal, "-n", namespace, "-s", sigPath}
	if !verifyTime.IsZero() {
		args = append(args, "-Overify-time="+verifyTime.UTC().Format("20060102150405")+"Z")
	}
	out, code := run(t, message, nil, "ssh-keygen", args...)
	good := code == 0 && strings.Contains(out, "Good")
	return good, out
}

// sshSign signs message with ssh-keygen -Y sign and the key file k.
func sshSign(t *testing.T, k keyFile, namespace string, message []byte) string {
	t.Helper()
	msgPath := filepath.Join(t.TempDir(), "statement")
	require.NoError(t, os.WriteFile(msgPath, message, 0o644))
	out, code := run(t, nil, nil, "ssh-keygen", "-Y", "sign", "-f", k.path, "-n", namespace, msgPath)
	require.Zero(t, code, "ssh-keygen -Y sign: %s", out)
	sig, err := os.ReadFile(msgPath + ".sig")
	require.NoError(t, err)
	return string(sig)
}

// testKey is a fixed ed25519 public key line, for parser tests that need a
// valid key but no private half.
func testKey(t testing.TB, seed byte) (string, ssh.PublicKey) {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))), pub
}
