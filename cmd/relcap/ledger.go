package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/tui/cli"
	"github.com/relcap/relcap/workflow/secret"
)

// envLedger names the environment variable that says where the ledger is,
// as --ledger does.
const envLedger = cli.EnvLedger

// ledgerLocation is where this invocation's ledger is and who said so.
type ledgerLocation struct {
	// from names what set it, for messages: "--ledger", "RELCAP_LEDGER",
	// or the configuration's ledger: key; empty for the default.
	from string
	url  string // a PostgreSQL ledger's URL, as given
	path string // an SQLite ledger's absolute path
}

// absent is true for an SQLite ledger whose file does not exist: it holds
// nothing, and whoever only reads must not create it by opening it.
func (l ledgerLocation) absent() bool {
	if l.path == "" {
		return false
	}
	_, err := os.Stat(l.path)
	return errors.Is(err, fs.ErrNotExist)
}

// ledgerLocation resolves where the ledger is: --ledger, else
// $RELCAP_LEDGER, else relcap.yaml's ledger:, else SQLite under
// $XDG_DATA_HOME. Each may be an SQLite file's path or a postgres:// URL,
// whose password joins the process's secrets at once.
func (a *app) ledgerLocation() (ledgerLocation, error) {
	if a.ledgerAt != nil {
		return *a.ledgerAt, nil
	}
	loc, err := a.resolveLedger()
	if err != nil {
		return ledgerLocation{}, err
	}
	a.ledgerAt = &loc
	return loc, nil
}

func (a *app) resolveLedger() (ledgerLocation, error) {
	if v := a.flags.Ledger; v != "" {
		return a.ledgerFrom("--ledger", v)
	}
	if v := a.io.Getenv(envLedger); v != "" {
		return a.ledgerFrom(envLedger, v)
	}
	p, err := a.ProjectIfAny()
	if err != nil {
		return ledgerLocation{}, err
	}
	if p.Ledger != "" {
		// config.Load resolved a relative path against relcap.yaml.
		return a.ledgerFrom(p.File+": ledger", p.Ledger)
	}
	d, err := a.dataHome()
	if err != nil {
		return ledgerLocation{}, err
	}
	return ledgerLocation{path: filepath.Join(d, "ledger.db")}, nil
}

// ledgerFrom reads v, which from gave: a postgres:// URL, or a path. Any
// other URL is refused, since a URL taken as a path would create a
// directory named after it (a password in its name).
func (a *app) ledgerFrom(from, v string) (ledgerLocation, error) {
	// Learnt before the value is parsed or shown: the password as written
	// (escaped or not, with / ? # @ in it) and unescaped.
	a.secrets.Add(secret.URLCredentials(v)...)
	if store.IsPostgresURL(v) {
		return ledgerLocation{from: from, url: v}, nil
	}
	if scheme, _, isURL := strings.Cut(v, "://"); isURL && !strings.ContainsAny(scheme, `/\`) {
		return ledgerLocation{}, cli.UsageError{Err: fmt.Errorf("%s: %s: a %s:// ledger is not supported; give a postgres:// URL for a team's PostgreSQL or the path of an SQLite file (default $XDG_DATA_HOME/relcap/ledger.db)",
			from, secret.RedactURL(v), scheme)}
	}
	abs, err := filepath.Abs(v)
	if err != nil {
		return ledgerLocation{}, cli.UsageError{Err: fmt.Errorf("%s: %s: %w", from, v, err)}
	}
	return ledgerLocation{from: from, path: abs}, nil
}

// sessionsDir is where session journals are kept. An SQLite ledger keeps
// them beside it, so a ledger file and its journals travel together; with
// a PostgreSQL ledger they stay on this machine, under $XDG_DATA_HOME.
func (a *app) sessionsDir() (string, error) {
	loc, err := a.ledgerLocation()
	if err != nil {
		return "", err
	}
	return a.sessionsDirOf(loc)
}

// sessionsDirOf is where the journals of the ledger at loc are kept.
func (a *app) sessionsDirOf(loc ledgerLocation) (string, error) {
	if loc.url != "" {
		d, err := a.dataHome()
		if err != nil {
			return "", err
		}
		return filepath.Join(d, "sessions"), nil
	}
	return filepath.Join(filepath.Dir(loc.path), "sessions"), nil
}

// openLedger opens this invocation's ledger once. A failure names what
// set the location (flag, environment or configuration key); it is kept,
// so a server that does not answer is not waited for again.
func (a *app) openLedger(ctx context.Context) (*store.Ledger, error) {
	if a.ledger != nil {
		return a.ledger, nil
	}
	if a.ledgerErr != nil {
		return nil, a.ledgerErr
	}
	loc, err := a.ledgerLocation()
	if err != nil {
		return nil, err
	}
	l, err := a.openLedgerAt(ctx, loc)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			a.ledgerErr = err
		}
		return nil, err
	}
	a.ledger = l
	return l, nil
}

// openLedgerAt opens the ledger at loc; a failure names what set it.
func (a *app) openLedgerAt(ctx context.Context, loc ledgerLocation) (*store.Ledger, error) {
	var (
		l   *store.Ledger
		err error
	)
	if a.readOnly && loc.absent() {
		// A read-only command never creates a ledger: a path with none
		// is a typo (or nothing was recorded there yet), said as such.
		from := loc.from
		if from == "" {
			from = "the default ledger"
		}
		return nil, cli.UsageError{Err: fmt.Errorf("%s: no ledger at %s: nothing was recorded there; check the path (--ledger, $%s or relcap.yaml's ledger:)", from, loc.path, envLedger)}
	}
	if loc.url != "" {
		l, err = store.OpenPostgres(ctx, loc.url, store.WithSecrets(a.secrets))
	} else {
		l, err = store.OpenSQLite(ctx, loc.path, store.WithSecrets(a.secrets))
	}
	if err != nil && loc.from != "" {
		err = fmt.Errorf("%s: %w", loc.from, err)
	}
	return l, err
}
