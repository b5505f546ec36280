package terraform

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/relcap/relcap/adapters/internal/flock"
)

// Terraform runs that relcap's death cannot kill.
//
// terraform-exec starts Terraform with Pdeathsig SIGKILL and reads its
// output through pipes: relcap killed (SIGKILL, a closed terminal, an
// OOM kill) takes Terraform with it, by that signal or by SIGPIPE on its
// next write, possibly after a side effect and before the state records
// it. A detached run is started instead as a small supervisor (this very
// binary re-executed in a hidden mode, see init) in a session of its own;
// the supervisor starts Terraform, whose stdout and stderr are files in
// the run's private directory, waits for it and records its exit status
// there. relcap follows the files for the screen and the journal. A run
// directory holds:
//
//	command.json  what was run, by which relcap, when (written before it starts)
//	running.lock  flock(2)ed by the supervisor while it lives, released by
//	              the kernel at its death
//	pid.json      the supervisor's and Terraform's pids
//	stdout stderr Terraform's output (mode 0600: it may hold what Terraform
//	              prints of secrets, like the plan files beside it)
//	exit.json     Terraform's exit code or signal, written by the supervisor
//
// relcap's Ctrl-C still interrupts Terraform gracefully: relcap sends
// SIGINT to the run's process group, as a terminal would.

const (
	// superviseEnv carries the run directory to the supervisor; with
	// superviseArg as the first argument it makes a process linking this
	// package a supervisor (init).
	superviseEnv = "RELCAP_TERRAFORM_SUPERVISE"
	superviseArg = "__relcap-terraform-supervisor"

	runCommandFile = "command.json"
	runLockFile    = "running.lock"
	runPidFile     = "pid.json"
	runStdoutFile  = "stdout"
	runStderrFile  = "stderr"
	runExitFile    = "exit.json"

	// followPoll is how often relcap reads a run's output and checks
	// whether it ended.
	followPoll = 100 * time.Millisecond
	// interruptGrace is how long relcap waits for Terraform to stop after
	// SIGINT before it gives up waiting (as terraform-exec's WaitDelay);
	// Terraform is not killed, and a resumed relcap waits for it.
	interruptGrace = 60 * time.Second
)

// init turns a process started as a supervisor into one before anything
// else runs: the relcap binary and every test binary linking this package
// can supervise, with no wiring in their main. The marker is removed from
// the environment in every case, so Terraform and its children never see it.
func init() {
	dir, ok := os.LookupEnv(superviseEnv)
	if !ok {
		return
	}
	_ = os.Unsetenv(superviseEnv) // cannot fail for a valid name
	if len(os.Args) < 3 || os.Args[1] != superviseArg || !filepath.IsAbs(dir) {
		return
	}
	os.Exit(supervise(dir, os.Args[2], os.Args[3:]))
}

// runCommand is what a run directory says was started.
type runCommand struct {
	Op          string    `json:"op"`
	Args        []string  `json:"args"`
	Dir         string    `json:"dir"`
	Workspace   string    `json:"workspace"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	PlanFile    string    `json:"plan_file,omitempty"`
	PlanHash    string    `json:"plan_hash,omitempty"`
	RelcapPid   int       `json:"relcap_pid"`
	StartedAt   time.Time `json:"started_at"`
}

// runPids are the supervisor's pid (also the run's process group and
// session) and Terraform's.
type runPids struct {
	Supervisor int `json:"supervisor"`
	Terraform  int `json:"terraform"`
}

// runExit is how Terraform ended, as its supervisor saw it.
type runExit struct {
	// Code is Terraform's exit code; -1 when a signal ended it or it
	// never started.
	Code int `json:"code"`
	// Signal names the signal that ended Terraform, if one did.
	Signal string `json:"signal,omitempty"`
	// StartError says why Terraform could not be started.
	StartError string    `json:"start_error,omitempty"`
	EndedAt    time.Time `json:"ended_at"`
}

// supervise runs Terraform (bin args) with this process's stdout and
// stderr (the run's files) and the run's lock (fd 3), waits for it and
// records how it ended in dir. It ignores the signals that would end it
// early: SIGINT reaches Terraform through the process group, and a
// supervisor gone before Terraform would leave its exit unrecorded.
func supervise(dir, bin string, args []string) int {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGQUIT)
	// The run's lock (fd 3) stays with the supervisor alone: inherited by
	// Terraform, it would pass on to every process Terraform starts
	// (providers, a provisioner's background job) and outlive the run.
	syscall.CloseOnExec(3)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	var rec runExit
	if err := cmd.Start(); err != nil {
		rec = runExit{Code: -1, StartError: err.Error()}
	} else {
		if err := writeJSONFile(filepath.Join(dir, runPidFile), runPids{Supervisor: os.Getpid(), Terraform: cmd.Process.Pid}); err != nil {
			fmt.Fprintf(os.Stderr, "relcap supervisor: %v\n", err)
		}
		_ = cmd.Wait() // the status is read from ProcessState
		rec = exitOf(cmd.ProcessState)
	}
	rec.EndedAt = time.Now().UTC()
	if err := writeJSONFile(filepath.Join(dir, runExitFile), rec); err != nil {
		fmt.Fprintf(os.Stderr, "relcap supervisor: recording Terraform's exit status: %v\n", err)
		return 1
	}
	return 0
}

func exitOf(ps *os.ProcessState) runExit {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return runExit{Code: -1, Signal: ws.Signal().String()}
	}
	return runExit{Code: ps.ExitCode()}
}

// writeJSONFile writes v to path atomically and durably, mode 0600.
func writeJSONFile(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// detachedRun is a run this relcap started.
type detachedRun struct {
	dir string
	pid int // the supervisor's: the run's process group
}

// startDetached starts Terraform (t.binary args) in t.dir under a
// supervisor, its run kept in dir, which must not exist. The directory is
// prepared under a temporary name and renamed into place just before the
// start, so a run directory exists only for a run that may have started.
func (a *Adapter) startDetached(t target, dir string, args []string, about runCommand) (*detachedRun, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding relcap's own binary to supervise terraform: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("creating terraform run directory: %w", err)
	}
	if _, err := os.Lstat(dir); err == nil {
		return nil, fmt.Errorf("terraform run directory %s exists already", dir)
	}
	prep, err := os.MkdirTemp(filepath.Dir(dir), ".prepare-*")
	if err != nil {
		return nil, fmt.Errorf("creating terraform run directory: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			_ = os.RemoveAll(prep) // a run that never started leaves nothing
		}
	}()
	open := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(prep, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	}
	stdout, err := open(runStdoutFile)
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	stderr, err := open(runStderrFile)
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	lock, err := open(runLockFile)
	if err != nil {
		return nil, err
	}
	defer lock.Close() // the supervisor holds its own copy of the lock
	if ok, err := flock.TryLock(lock); err != nil || !ok {
		return nil, fmt.Errorf("locking terraform run %s: %v", dir, errors.Join(err, errors.New("lock held")))
	}
	about.Args, about.Dir, about.Workspace = args, t.dir, t.workspace
	about.RelcapPid, about.StartedAt = os.Getpid(), a.clock.Now().UTC()
	if err := writeJSONFile(filepath.Join(prep, runCommandFile), about); err != nil {
		return nil, fmt.Errorf("recording terraform run: %w", err)
	}

	cmd := exec.Command(exe, append([]string{superviseArg, t.binary}, args...)...)
	cmd.Dir = t.dir
	cmd.Env = append(terraformEnv(), superviseEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{lock}
	// A session of its own: no terminal's SIGINT or SIGHUP, no process
	// group signal aimed at relcap, reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}

	if err := os.Rename(prep, dir); err != nil {
		return nil, fmt.Errorf("creating terraform run directory: %w", err)
	}
	keep = true
	if err := syncDir(filepath.Dir(dir)); err != nil {
		_ = os.RemoveAll(dir) // nothing started
		return nil, fmt.Errorf("recording terraform run directory: %w", err)
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir) // nothing started
		return nil, fmt.Errorf("starting terraform %s in %s: %w", about.Op, t.dir, err)
	}
	run := &detachedRun{dir: dir, pid: cmd.Process.Pid}
	go func() { _ = cmd.Wait() }() // reap it; its result is in exit.json
	return run, nil
}

// terraformEnv is the environment Terraform runs with, as terraform-exec
// builds it: relcap's, with logging off (TF_LOG would print what
// Terraform otherwise masks), TF_IN_AUTOMATION set and TF_WORKSPACE
// removed (relcap selects the workspace itself).
func terraformEnv() []string {
	drop := map[string]bool{"TF_LOG": true, "TF_LOG_CORE": true, "TF_LOG_PATH": true, "TF_LOG_PROVIDER": true,
		"TF_IN_AUTOMATION": true, "TF_WORKSPACE": true, superviseEnv: true}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	return append(env, "TF_LOG=", "TF_LOG_CORE=", "TF_LOG_PATH=", "TF_LOG_PROVIDER=", "TF_IN_AUTOMATION=1")
}

// runState is what a run directory says of its run.
type runState int

const (
	// runAbsent: no such run directory; the run never started.
	runAbsent runState = iota
	// runAlive: the supervisor holds the run's lock, or its Terraform
	// still runs (the supervisor killed alone).
	runAlive
	// runExited: Terraform ended and its supervisor recorded how.
	runExited
	// runLost: nothing holds the lock and no exit was recorded: Terraform
	// and its supervisor were killed, or the run's files were tampered
	// with. How Terraform ended cannot be known.
	runLost
)

// runStatus is a run's state, with its exit when it exited.
type runStatus struct {
	State runState
	Exit  runExit
}

// inspectRun reads the state of the run kept in dir.
func inspectRun(dir string) (runStatus, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return runStatus{State: runAbsent}, nil
	} else if err != nil {
		return runStatus{}, fmt.Errorf("terraform run %s: %w", dir, err)
	}
	alive, err := runHeld(dir)
	if err != nil {
		return runStatus{}, err
	}
	if alive {
		return runStatus{State: runAlive}, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, runExitFile))
	if errors.Is(err, fs.ErrNotExist) {
		if terraformAlive(dir) {
			return runStatus{State: runAlive}, nil
		}
		return runStatus{State: runLost}, nil
	}
	if err != nil {
		return runStatus{}, fmt.Errorf("terraform run %s: %w", dir, err)
	}
	var ex runExit
	if err := json.Unmarshal(b, &ex); err != nil {
		return runStatus{State: runLost}, nil // an exit that cannot be read is no evidence
	}
	return runStatus{State: runExited, Exit: ex}, nil
}

// runHeld reports whether a live process holds the run's lock.
func runHeld(dir string) (bool, error) {
	f, err := os.Open(filepath.Join(dir, runLockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("terraform run %s: %w", dir, err)
	}
	defer f.Close()
	got, err := flock.TryLock(f)
	if err != nil {
		return false, fmt.Errorf("terraform run %s: %w", dir, err)
	}
	if got {
		_ = flock.Unlock(f) // closing releases it anyway
	}
	return !got, nil
}

// terraformAlive reports whether the Terraform process a run's
// supervisor started still runs: its pid is alive and is that Terraform
// (same command line and working directory, read from /proc), not a
// process that reused the pid.
func terraformAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, runPidFile))
	if err != nil {
		return false
	}
	var p runPids
	if json.Unmarshal(b, &p) != nil || p.Terraform <= 0 {
		return false
	}
	b, err = os.ReadFile(filepath.Join(dir, runCommandFile))
	if err != nil {
		return false
	}
	var c runCommand
	if json.Unmarshal(b, &c) != nil {
		return false
	}
	proc := filepath.Join("/proc", fmt.Sprint(p.Terraform))
	cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline"))
	if err != nil {
		// No /proc (not Linux), or the process is gone.
		return !errors.Is(err, fs.ErrNotExist) && syscall.Kill(p.Terraform, 0) == nil
	}
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	if len(args) != len(c.Args)+1 || strings.Join(args[1:], "\x00") != strings.Join(c.Args, "\x00") {
		return false
	}
	cwd, err := os.Readlink(filepath.Join(proc, "cwd"))
	return err == nil && cwd == c.Dir
}

// runGroup is the process group of the run in dir: its supervisor's pid,
// or 0 if unknown.
func runGroup(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, runPidFile))
	if err != nil {
		return 0
	}
	var p runPids
	if json.Unmarshal(b, &p) != nil {
		return 0
	}
	return p.Supervisor
}

// followRun copies the run's output in dir to stdout and stderr as it grows
// (whole lines at a time) until the run ends, and returns its status.
// When ctx ends, it interrupts Terraform (SIGINT to the run's process
// group, as a terminal's Ctrl-C) and keeps following it for up to
// interruptGrace; after that it returns ctx's error and Terraform goes
// on, where a later relcap finds it. pid is the run's process group if
// this relcap started it, else 0.
func followRun(ctx context.Context, dir string, pid int, stdout, stderr io.Writer) (runStatus, error) {
	out := &tail{path: filepath.Join(dir, runStdoutFile), w: stdout}
	errs := &tail{path: filepath.Join(dir, runStderrFile), w: stderr}
	defer out.close()
	defer errs.close()
	var interrupted time.Time
	for {
		out.pump(false)
		errs.pump(false)
		st, err := inspectRun(dir)
		if err != nil {
			return st, err
		}
		if st.State != runAlive {
			out.pump(true)
			errs.pump(true)
			return st, nil
		}
		if ctx.Err() != nil {
			if interrupted.IsZero() {
				interrupted = time.Now()
				if pid == 0 {
					pid = runGroup(dir)
				}
				if pid > 0 {
					// The lock is held, so the group still has a member
					// and its id names no other process.
					_ = syscall.Kill(-pid, syscall.SIGINT)
				}
			} else if time.Since(interrupted) > interruptGrace {
				return st, fmt.Errorf("terraform did not stop within %s of the interrupt and still runs (run %s); relcap resume waits for it: %w", interruptGrace, dir, ctx.Err())
			}
		}
		time.Sleep(followPoll)
	}
}

// tail copies what is appended to a file to a writer, line by line.
type tail struct {
	path    string
	w       io.Writer
	f       *os.File
	pending []byte
}

func (t *tail) pump(final bool) {
	if t.f == nil {
		f, err := os.Open(t.path)
		if err != nil {
			return // not there: nothing to show
		}
		t.f = f
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := t.f.Read(buf)
		t.pending = append(t.pending, buf[:n]...)
		if n == 0 || err != nil {
			break
		}
	}
	end := bytes.LastIndexByte(t.pending, '\n') + 1
	if final {
		end = len(t.pending)
	}
	if end > 0 && t.w != nil {
		_, _ = t.w.Write(t.pending[:end]) // output that cannot be shown changes nothing; the run keeps it
	}
	t.pending = t.pending[end:]
}

func (t *tail) close() {
	if t.f != nil {
		t.f.Close()
	}
}

// runOutput reads a run's stdout and stderr.
func runOutput(dir string) (stdout, stderr string) {
	o, _ := os.ReadFile(filepath.Join(dir, runStdoutFile)) // missing output is empty output
	e, _ := os.ReadFile(filepath.Join(dir, runStderrFile))
	return string(o), string(e)
}

// maskRunOutput rewrites a finished run's stdout and stderr with every
// secret relcap knows masked, once its outcome has been read: the files
// must hold Terraform's raw output while it runs (relcap may die and a
// later relcap follows them), but nothing relcap keeps after that may
// hold a secret in clear. A run still going, or one whose files cannot be
// rewritten, is left as it is (0600 in the private plan store, as the plan
// files beside it); the next relcap that settles it masks it then.
func (a *Adapter) maskRunOutput(dir string) {
	if a.secrets.Len() == 0 {
		return
	}
	for _, name := range []string{runStdoutFile, runStderrFile} {
		path := filepath.Join(dir, name)
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		masked := a.secrets.ScrubBytes(raw)
		if bytes.Equal(masked, raw) {
			continue
		}
		tmp := path + ".masked"
		if err := os.WriteFile(tmp, masked, 0o600); err != nil {
			_ = os.Remove(tmp)
			continue
		}
		if err := os.Rename(tmp, path); err != nil {
			_ = os.Remove(tmp)
		}
	}
}

// exitError is a run's failure as terraform-exec reports one: the exit
// and Terraform's stderr, which terraformError reads (lock holders, stale
// plans).
func exitError(st runStatus, stderr string) error {
	switch {
	case st.Exit.StartError != "":
		return fmt.Errorf("terraform could not be started: %s", st.Exit.StartError)
	case st.Exit.Signal != "":
		return fmt.Errorf("terraform was killed by %s\n%s", st.Exit.Signal, stderr)
	}
	return fmt.Errorf("exit status %d\n%s", st.Exit.Code, stderr)
}

// runDetachedCommand runs Terraform (args) in t.dir detached, as an
// apply is, for a command that takes the state lock (plan): relcap's
// death leaves it to finish and release the lock rather than killing it
// while it holds the lock. Its output follows to the operation's writers;
// it returns Terraform's exit code, and an error as terraform-exec's
// would (Terraform's stderr kept, for terraformError) unless the code is
// among ok. The run's directory, under the plan store, is removed once
// its outcome is read.
func (a *Adapter) runDetachedCommand(ctx context.Context, t target, op string, args []string, ok ...int) (int, error) {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	dir := filepath.Join(a.planDir, "runs", "ops", op+"-"+a.clock.Now().UTC().Format("20060102T150405Z")+"-"+hex.EncodeToString(b[:]))
	run, err := a.startDetached(t, dir, args, runCommand{Op: op})
	if err != nil {
		return -1, err
	}
	stdout, stderr := a.writers(ctx)
	st, err := followRun(ctx, run.dir, run.pid, stdout, stderr)
	if err != nil {
		return -1, a.terraformError(ctx, op, t, err)
	}
	_, errOut := runOutput(run.dir)
	if st.State == runExited && st.Exit.StartError == "" && st.Exit.Signal == "" && slices.Contains(ok, st.Exit.Code) {
		_ = os.RemoveAll(run.dir) // the outcome is read; a leftover is only clutter
		return st.Exit.Code, nil
	}
	_ = os.RemoveAll(run.dir) // the outcome is in the error
	if st.State != runExited {
		return -1, a.terraformError(ctx, op, t, fmt.Errorf("terraform %s ended with no exit status recorded\n%s", op, errOut))
	}
	return st.Exit.Code, a.terraformError(ctx, op, t, exitError(st, errOut))
}
