package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/relcap/relcap/adapters/argocd/remote"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/tui/cli"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/secret"
)

// app is the composition root's state for one invocation: what the flags
// said, and the adapters opened so far (lazily, so `relcap version` opens
// nothing).
type app struct {
	io *IO
	// screen is standard output for what draws a terminal screen (the
	// cockpit, a replayed recording): masked, not escaped.
	screen io.Writer
	flags  cli.GlobalFlags
	clock  workflow.Clock

	ledger *store.Ledger
	// ledgerAt is where the ledger is, once resolved; ledgerErr is why it
	// could not be opened, so a server that does not answer is waited
	// for once per command, not once per caller.
	ledgerAt  *ledgerLocation
	ledgerErr error
	project   *workflow.Project
	// secrets are masked in everything this process prints, journals and
	// records; config, adapters and Terraform's plans add to them.
	secrets  *secret.Set
	sessions []*store.FileJournal
	args     []string
	argo     *remote.Pool
	// demoKeys are the key files relcap demo's sandbox made for its
	// people, by principal.
	demoKeys map[string]string
	// gitSigningKeys are git's signing-key settings, by release
	// repository, read once per command: the signer, the shared-plan
	// vault and the session's seal all ask.
	gitSigningKeys map[string]string
	// started is when the command began; measured the services whose
	// command time counts as effort (effort_command.go).
	started  time.Time
	measured []measuredCommand
	// warnedBreakGlass: an expired break-glass was looked for already.
	warnedBreakGlass bool
	// readOnly: the command only reads the ledger (tui/cli says so with
	// SetReadOnly), so a ledger that does not exist is a mistyped path,
	// never created.
	readOnly bool
}

// run builds the command tree, executes it and maps the outcome to an exit
// code. It is main without os.Exit, so tests can call it.
func run(ctx context.Context, io *IO, args []string) (code int) {
	secrets := secret.NewSet()
	secrets.LearnCommandLine(io.Getenv(cli.EnvLedger), args)
	masked := *io
	// What commands print is text: no escape, control character or bidi
	// override from a typed value, a file, the ledger or a tool reaches
	// the terminal raw (tui/plain.SafeWriter). The cockpit and relcap
	// journal replay draw the screen itself and write to screen.
	screen := secrets.Writer(io.Out)
	masked.Out, masked.Err = secrets.Writer(plain.SafeWriter(io.Out)), secrets.Writer(plain.SafeWriter(io.Err))
	io = &masked
	// The masking writers hold back what may begin a secret until they
	// know; whatever they hold is let go, masked, when the command ends.
	defer func() { _, _, _ = secret.Flush(masked.Out), secret.Flush(masked.Err), secret.Flush(screen) }()
	a := &app{io: io, screen: screen, clock: workflow.SystemClock{}, args: args, secrets: secrets}
	a.started = a.clock.Now()
	defer func() {
		// A bug must not greet the captain with a stack trace. Every ledger
		// write is a transaction and every journal line is fsynced, so what
		// was recorded before the failure is intact.
		if r := recover(); r != nil {
			fmt.Fprintf(io.Err, "relcap: internal error: %v\nrelcap: nothing already recorded was lost; please report this with the command you ran (relcap version: %s)\n", r, currentBuild().Version)
			_ = a.close(context.WithoutCancel(ctx), cli.ExitError, fmt.Errorf("internal error: %v", r))
			code = cli.ExitError
		}
	}()
	root := cli.NewCmdRoot(a, args)
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	err := root.ExecuteContext(ctx)
	code = cli.ExitCode(err)
	var silent cli.SilentError
	if err != nil && !errors.As(err, &silent) {
		fmt.Fprintln(io.Err, "relcap: "+err.Error())
	}
	if cerr := a.close(context.WithoutCancel(ctx), code, err); cerr != nil {
		fmt.Fprintln(io.Err, "relcap: "+cerr.Error())
		if code == cli.ExitOK {
			code = cli.ExitError
		}
	}
	return code
}

// close ends every session this invocation opened, journaling how the
// command ended, then closes the ledger.
func (a *app) close(ctx context.Context, code int, cmdErr error) error {
	var errs []error
	// Before the journals close: a lost effort entry is journaled.
	for _, m := range a.measured {
		errs = append(errs, m.svc.RecordCommandEffort(ctx, workflow.CommandEffort{Step: m.step, Role: m.role, Started: a.started,
			Interactive: a.io.StdinTTY, Why: "no terminal: stdin is not a TTY (CI or a script), so relcap cannot tell how long a person spent"}))
	}
	for _, j := range a.sessions {
		if !j.Recorded() {
			// Nothing was recorded: no session to close, sign or anchor.
			continue
		}
		outcome := journal.SessionClosed{ExitCode: code}
		if cmdErr != nil {
			outcome.Error = cmdErr.Error()
		}
		if _, err := j.Append(ctx, outcome); err != nil {
			errs = append(errs, err)
		}
		if err := j.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		// After the last entry: the head signed and anchored is final.
		if err := a.sealSession(ctx, j); err != nil {
			errs = append(errs, err)
		}
	}
	if err := a.argo.Close(); err != nil {
		errs = append(errs, err)
	}
	if a.ledger != nil {
		if err := a.ledger.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dataHome is $XDG_DATA_HOME/relcap.
func (a *app) dataHome() (string, error) { return a.xdgHome("XDG_DATA_HOME", ".local/share") }

// stateHome is $XDG_STATE_HOME/relcap.
func (a *app) stateHome() (string, error) { return a.xdgHome("XDG_STATE_HOME", ".local/state") }

// xdgHome is relcap's directory under the XDG base directory named by
// variable, or under its default below $HOME.
func (a *app) xdgHome(variable, fallback string) (string, error) {
	if d := a.io.Getenv(variable); d != "" {
		return filepath.Join(d, "relcap"), nil
	}
	home := a.io.Getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find a home directory: set %s or HOME (or pass --ledger PATH)", variable)
		}
		home = h
	}
	return filepath.Join(home, filepath.FromSlash(fallback), "relcap"), nil
}

// LoadProject loads relcap.yaml from -c or the nearest one up from the
// working directory.
func (a *app) LoadProject() (*workflow.Project, error) {
	if a.project != nil {
		return a.project, nil
	}
	path := a.flags.Config
	if path == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		path, err = config.Find(wd)
		if err != nil {
			return nil, err
		}
	}
	p, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	a.project = p
	a.learnSecrets(p)
	return p, nil
}

// learnSecrets adds the secrets the configuration names
// (workflow.Project.Credentials).
func (a *app) learnSecrets(p *workflow.Project) {
	a.secrets.LearnCredentials(p.Credentials(), a.io.Getenv)
}

// actor is --actor, else $USER, else the OS user name.
func (a *app) actor() (string, error) {
	if s := strings.TrimSpace(a.flags.Actor); s != "" {
		return s, nil
	}
	if s := a.io.Getenv("USER"); s != "" {
		return s, nil
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	return "", cli.UsageError{Err: errors.New("cannot tell who is acting: pass --actor NAME or set $USER")}
}

// openSession prepares the journal of a state-changing command; run closes
// it with the command's outcome. The session is created (its file, its
// ledger row) only when the command first records something, so a command
// that refuses, fails early or finds nothing to do leaves no session, and
// no signed or anchored head.
func (a *app) openSession(ctx context.Context, command, releaseID string) (*store.FileJournal, error) {
	l, err := a.openLedger(ctx)
	if err != nil {
		return nil, err
	}
	actor, err := a.actor()
	if err != nil {
		return nil, err
	}
	dir, err := a.sessionsDir()
	if err != nil {
		return nil, err
	}
	// The journal names its ledger, so journal verify tells a journal
	// whose ledger row was deleted from another ledger's.
	self, err := l.LedgerIdentity(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the ledger's identity: %w", err)
	}
	now := a.clock.Now()
	opened := journal.SessionOpened{Command: command, Args: a.args, Relcap: currentBuild().Version, Ledger: self}
	j, err := store.PrepareSession(l, dir, workflow.Session{
		ID: store.NewSessionID(now), Actor: actor, Command: command, ReleaseID: releaseID, StartedAt: now,
	}, a.clock, []journal.Record{opened}, store.WithSecrets(a.secrets))
	if err != nil {
		return nil, err
	}
	a.sessions = append(a.sessions, j)
	return j, nil
}
