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

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/adapters/argocd"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/input"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/secret"
)

// globalFlags are the flags every command takes (DESIGN.md).
type globalFlags struct {
	config  string
	ledger  string
	actor   string
	json    bool
	noTUI   bool
	noColor bool
	version bool
}

// app is the composition root's state for one invocation: what the flags
// said, and the adapters opened so far (lazily, so `relcap version` opens
// nothing).
type app struct {
	io *IO
	// screen is standard output for what draws a terminal screen (the
	// cockpit, a replayed recording): masked, not escaped.
	screen io.Writer
	flags  globalFlags
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
	argo     *argocd.Pool
	// demoKeys are the key files relcap demo's sandbox made for its
	// people, by principal.
	demoKeys map[string]string
	// gitSigningKeys are git's signing-key settings, by release
	// repository, read once per command: the signer, the shared-plan
	// vault and the session's seal all ask.
	gitSigningKeys map[string]string
	// started is when the command began; measured the services whose
	// command time counts as effort (cmd/relcap/effort_command.go).
	started  time.Time
	measured []measuredCommand
	// warnedBreakGlass: an expired break-glass was looked for already.
	warnedBreakGlass bool
	// readOnly: the command only reads the ledger (annotationReadOnly),
	// so a ledger that does not exist is a mistyped path, never created.
	readOnly bool
	// holdCockpit: the cockpit opens on the decision map and runs nothing
	// until the captain asks (plain relcap).
	holdCockpit bool
}

// run builds the command tree, executes it and maps the outcome to an exit
// code. It is main without os.Exit, so tests can call it.
func run(ctx context.Context, io *IO, args []string) (code int) {
	secrets := secret.NewSet()
	secrets.LearnCommandLine(io.getenv(envLedger), args)
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
			_ = a.close(context.WithoutCancel(ctx), exitError, fmt.Errorf("internal error: %v", r))
			code = exitError
		}
	}()
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	err := root.ExecuteContext(ctx)
	code = exitCode(err)
	var silent errSilent
	if err != nil && !errors.As(err, &silent) {
		fmt.Fprintln(io.Err, "relcap: "+err.Error())
	}
	if cerr := a.close(context.WithoutCancel(ctx), code, err); cerr != nil {
		fmt.Fprintln(io.Err, "relcap: "+cerr.Error())
		if code == exitOK {
			code = exitError
		}
	}
	return code
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "relcap",
		Short: "The release captain's cockpit for Terraform + Argo CD",
		Long: `relcap takes a release from "who owns what" to "production has converged":
ownership check → plan review → digest promotion → convergence watch,
with every decision journaled and the staff time it cost measured.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return unknownCommand(cmd, args[0])
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.flags.version {
				return a.printVersion()
			}
			return a.openCockpit(cmd)
		},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			// Before anything is opened or recorded.
			if err := checkTypedInput(cmd, args); err != nil {
				return err
			}
			if a.flags.noColor || a.io.getenv("NO_COLOR") != "" {
				// One switch for every screen: the cockpit's colour
				// profile, the review and the rehearsal screens read the
				// environment, as they read NO_COLOR.
				a.flags.noColor = true
				a.io.Env = append(a.io.Env, "NO_COLOR=1")
			}
			a.readOnly = isReadOnly(cmd)
			return a.checkReferences(cmd.Context(), cmd, args)
		},
	}
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return a.flagError(cmd, err) })
	root.Flags().BoolVar(&a.flags.version, "version", false, "print relcap's version (as relcap version)")
	pf := root.PersistentFlags()
	pf.StringVarP(&a.flags.config, "config", "c", "", "relcap.yaml to use (default: found in the current directory or a parent)")
	pf.StringVar(&a.flags.ledger, "ledger", "", "the ledger: an SQLite file's path or a team's postgres:// URL (default $"+envLedger+", relcap.yaml's ledger:, else $XDG_DATA_HOME/relcap/ledger.db)")
	pf.StringVar(&a.flags.actor, "actor", "", "who is acting (default $USER)")
	pf.BoolVar(&a.flags.json, "json", false, "machine output on stdout (one JSON document or NDJSON events)")
	pf.BoolVar(&a.flags.noTUI, "no-tui", false, "plain line output instead of the cockpit")
	pf.BoolVar(&a.flags.noColor, "no-color", false, "no colour (also NO_COLOR)")

	root.AddCommand(
		newCmdVersion(a),
		newCmdValidate(a, nil),
		newCmdInit(a, nil),
		newCmdOwnership(a),
		newCmdEffort(a),
		newCmdReport(a),
		newCmdJournal(a),
		newCmdPlan(a, nil),
		newCmdApprove(a, nil),
		newCmdReview(a, nil),
		newCmdApply(a, nil),
		newCmdUnlock(a, nil),
		newCmdPromote(a, nil),
		newCmdConverge(a, nil),
		newCmdRelease(a, nil),
		newCmdResume(a, nil),
		newCmdRollback(a, nil),
		newCmdRehearse(a, nil),
		newCmdBreakGlass(a),
		newCmdDemo(a, nil),
		newCmdLedger(a),
	)
	return root
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
	if d := a.io.getenv(variable); d != "" {
		return filepath.Join(d, "relcap"), nil
	}
	home := a.io.getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find a home directory: set %s or HOME (or pass --ledger PATH)", variable)
		}
		home = h
	}
	return filepath.Join(home, filepath.FromSlash(fallback), "relcap"), nil
}

// loadProject loads relcap.yaml from -c or the nearest one up from the
// working directory.
func (a *app) loadProject() (*workflow.Project, error) {
	if a.project != nil {
		return a.project, nil
	}
	path := a.flags.config
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
	a.secrets.LearnCredentials(p.Credentials(), a.io.getenv)
}

// actor is --actor, else $USER, else the OS user name.
func (a *app) actor() (string, error) {
	if s := strings.TrimSpace(a.flags.actor); s != "" {
		return s, nil
	}
	if s := a.io.getenv("USER"); s != "" {
		return s, nil
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	return "", usageError{errors.New("cannot tell who is acting: pass --actor NAME or set $USER")}
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

func (a *app) printJSON(v any) error {
	return plain.WriteJSON(a.io.Out, v)
}

// noArgs rejects positional arguments as a usage error (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %s", cmd.CommandPath(), input.QuoteInput(strings.Join(args, " ")))}
	}
	return nil
}

// exactArgs wants n positional arguments, named in the message.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s wants %s", cmd.CommandPath(), what)}
		}
		return nil
	}
}

// runOr is runF when a test gave one (to see the options a command line
// makes), else the command's own run function.
func runOr[O any](runF, run func(context.Context, *O) error) func(context.Context, *O) error {
	if runF != nil {
		return runF
	}
	return run
}

// exactlyOne is whether exactly one of a command's mutually exclusive
// modes was asked for.
func exactlyOne(modes ...bool) bool {
	n := 0
	for _, set := range modes {
		if set {
			n++
		}
	}
	return n == 1
}
