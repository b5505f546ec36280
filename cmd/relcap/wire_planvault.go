package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/relcap/relcap/adapters/planvault"
	"github.com/relcap/relcap/tui/cli"
	"github.com/relcap/relcap/workflow"
)

// passphraseEnv gives the passphrase of the applier's key file where no
// terminal can ask for it (CI, the cockpit): age decrypts shared plans
// with the key file itself, and ssh-agent cannot do that for it.
const passphraseEnv = "RELCAP_SSH_PASSPHRASE"

// planVault wires the shared-plan vault when the ledger is a team store
// (PostgreSQL) and the project names a people file to encrypt to; nil
// otherwise, so with SQLite plans stay on this machine as they always did.
// command decides whether a passphrase may be asked at the terminal: not
// under the cockpit, which owns the screen.
func (a *app) planVault(ctx context.Context, p *workflow.Project, planDir, command string) (workflow.PlanVault, error) {
	loc, err := a.ledgerLocation()
	if err != nil || loc.url == "" || p.People == "" {
		return nil, err
	}
	l, err := a.openLedger(ctx)
	if err != nil {
		return nil, err
	}
	actor, err := a.actor()
	if err != nil {
		return nil, err
	}
	// Masked from the start, not only once read: nothing relcap writes
	// may carry it.
	if v := a.io.Getenv(passphraseEnv); v != "" {
		a.secrets.Add(v)
	}
	keyFrom := "git's user.signingkey"
	if strings.TrimSpace(a.io.Getenv(signingEnv)) != "" {
		keyFrom = signingEnv
	}
	return planvault.New(planvault.Options{
		Store: l, Where: "the team store " + l.Location(), People: p.People, PlanDir: planDir,
		Key: a.signingKey(ctx, p.Dir, actor), KeyFrom: keyFrom,
		Passphrase: a.passphrase(command != "cockpit" && command != "release" && command != "resume"),
		Clock:      a.clock,
	})
}

// teamStoreWithoutPeople reports whether plans made now stay on this
// machine although the ledger is a team store: no people file to encrypt
// them to.
func (a *app) teamStoreWithoutPeople(p *workflow.Project) bool {
	loc, err := a.ledgerLocation()
	return err == nil && loc.url != "" && p.People == ""
}

// passphrase reads the passphrase of a protected key file: from
// RELCAP_SSH_PASSPHRASE, else from the terminal when ask and stdin is one,
// else it says how to give one.
func (a *app) passphrase(ask bool) func(keyFile string) ([]byte, error) {
	return func(keyFile string) ([]byte, error) {
		if v := a.io.Getenv(passphraseEnv); v != "" {
			a.secrets.Add(v)
			return []byte(v), nil
		}
		if f, ok := a.io.In.(*os.File); ask && ok && term.IsTerminal(int(f.Fd())) {
			fmt.Fprintf(a.io.Err, "passphrase for %s (to decrypt the shared plan): ", keyFile)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(a.io.Err)
			if err != nil {
				return nil, fmt.Errorf("reading the passphrase of %s: %w", keyFile, err)
			}
			return b, nil
		}
		return nil, cli.UsageError{Err: errors.New("your key " + keyFile + " is protected by a passphrase, needed to decrypt the shared plan: run relcap apply at a terminal to be asked for it, or set " + passphraseEnv)}
	}
}
