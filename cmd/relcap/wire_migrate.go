package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/tui/cli"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/report"
)

// migrateLocation reads --from or --to: sqlite:PATH, a path, or a
// postgres:// URL.
func migrateLocation(a *app, flag, v string) (ledgerLocation, error) {
	if v == "" {
		return ledgerLocation{}, cli.UsageError{Err: fmt.Errorf("%s is required: sqlite:PATH, a path, or a postgres:// URL", flag)}
	}
	if rest, ok := strings.CutPrefix(v, "sqlite:"); ok {
		v = strings.TrimPrefix(rest, "//")
		if v == "" {
			return ledgerLocation{}, cli.UsageError{Err: fmt.Errorf("%s sqlite: names no file; write sqlite:PATH", flag)}
		}
	}
	return a.ledgerFrom(flag, v)
}

// migrateResult is what ledger migrate --json prints.
type migrateResult struct {
	Migration store.MigrateReport  `json:"migration"`
	Journals  []audit.MovedSession `json:"journals,omitempty"`
	// EffortSame: the effort report over the migrated releases is the
	// same on both ledgers.
	EffortSame bool `json:"effort_same"`
	// Verified: rows, journals and effort all agree (false for a dry run,
	// which verifies nothing).
	Verified bool `json:"verified"`
	// SessionsDir is where the migrated sessions' journals are.
	SessionsDir string `json:"sessions_dir"`
}

// MigrateLedger copies the history of one ledger into another and
// verifies that it reads the same there (relcap ledger migrate).
func (a *app) MigrateLedger(ctx context.Context, req cli.MigrateRequest) (cli.MigrateOutcome, error) {
	var out cli.MigrateOutcome
	fromLoc, err := migrateLocation(a, "--from", req.From)
	if err != nil {
		return out, err
	}
	toLoc, err := migrateLocation(a, "--to", req.To)
	if err != nil {
		return out, err
	}
	if fromLoc.path != "" {
		// Opening a missing file would create an empty ledger, and copy
		// nothing as if all were well.
		if _, err := os.Stat(fromLoc.path); errors.Is(err, fs.ErrNotExist) {
			return out, cli.UsageError{Err: fmt.Errorf("--from %s: no ledger there; name the SQLite file to migrate (default $XDG_DATA_HOME/relcap/ledger.db)", fromLoc.path)}
		}
	}
	if fromLoc.path != "" && fromLoc.path == toLoc.path {
		return out, cli.UsageError{Err: fmt.Errorf("--from and --to are both %s: name two different ledgers", fromLoc.path)}
	}
	src, err := a.openLedgerAt(ctx, fromLoc)
	if err != nil {
		return out, err
	}
	defer src.Close()
	dst, err := a.openLedgerAt(ctx, toLoc)
	if err != nil {
		return out, err
	}
	defer dst.Close()

	dir, err := a.sessionsDirOf(fromLoc)
	if err != nil {
		return out, err
	}
	// Sessions older than the ledger's journal copies bring their files'
	// entries along, so teammates can verify them from their machines.
	rep, err := store.Migrate(ctx, src, dst, store.MigrateOptions{DryRun: req.DryRun, Journals: store.SessionFiles{Dir: dir}.JournalLines})
	if err != nil {
		return out, err
	}
	res := migrateResult{Migration: rep, SessionsDir: dir}
	if !req.DryRun {
		if out.Problems, err = verifyMigration(a, ctx, src, dst, dir, &res); err != nil {
			return out, err
		}
		res.Verified = len(out.Problems) == 0
	}
	out.Document, out.View, out.SessionsDir, out.To, out.MovedSessions = res, migrationView(res), dir, rep.To, len(rep.Sessions)
	if toDir, err := a.sessionsDirOf(toLoc); err == nil {
		out.TargetSessionsDir = toDir
	}
	return out, nil
}

// verifyMigration compares the migrated sessions' journal verification
// and the migrated releases' effort report between the two ledgers; it
// returns what differs.
func verifyMigration(a *app, ctx context.Context, src, dst *store.Ledger, dir string, res *migrateResult) ([]string, error) {
	project, err := a.ProjectIfAny()
	if err != nil {
		return nil, err
	}
	before, err := a.auditorOf(project, src, dir)
	if err != nil {
		return nil, err
	}
	after, err := a.auditorOf(project, dst, dir)
	if err != nil {
		return nil, err
	}
	if res.Journals, err = audit.VerifyMoved(ctx, before, after, res.Migration.Sessions); err != nil {
		return nil, err
	}
	o := report.Options{Now: a.clock.Now(), ProdEnv: report.DefaultProdEnv}
	if err := o.UseProject(project, false); err != nil {
		return nil, err
	}
	if res.EffortSame, err = report.SameEffort(ctx, src, dst, res.Migration.Releases, o); err != nil {
		return nil, err
	}
	return plain.MovedProblems(res.Journals, res.EffortSame), nil
}

// migrationView is the store's report and the verification as the
// printer takes them.
func migrationView(res migrateResult) plain.Migration {
	rep := res.Migration
	m := plain.Migration{From: rep.From, To: rep.To, DryRun: rep.DryRun, Copied: rep.Copied(), Releases: len(rep.Releases),
		JournalsCopied: rep.Journals.Copied, JournalsPresent: rep.Journals.Present, JournalsLeft: rep.Journals.Left,
		Journals: res.Journals, EffortSame: res.EffortSame, SessionsDir: res.SessionsDir}
	for _, t := range rep.Tables {
		m.Tables = append(m.Tables, plain.MigratedTable{Table: t.Table, Source: t.Source, Copied: t.Copied, Present: t.Present, Merged: t.Merged})
	}
	for _, t := range rep.Skipped {
		m.Skipped = append(m.Skipped, plain.SkippedTable(t))
	}
	return m
}
