package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/report"
)

func newCmdLedger(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "The ledger itself: move a captain's history into the team's store",
	}
	cmd.AddCommand(newCmdLedgerMigrate(a, nil))
	return cmd
}

// migrateOptions are ledger migrate's flags.
type migrateOptions struct {
	f        *app
	from, to string
	dryRun   bool
}

func newCmdLedgerMigrate(a *app, runF func(context.Context, *migrateOptions) error) *cobra.Command {
	f := &migrateOptions{f: a}
	cmd := &cobra.Command{
		Use:   "migrate --from sqlite:PATH --to postgres://…",
		Short: "Copy a ledger's history into another (a captain's SQLite into the team's PostgreSQL)",
		Long: `migrate copies every release, plan, approval, effort entry, convergence,
sighting, finding and session of the --from ledger into the --to ledger, in one
transaction: all of it or nothing. Rows the target already holds are skipped,
so running it again copies nothing, and a target that holds other captains'
history keeps it. A row whose key the target holds with other content (the
same release ID, another body) is a conflict: it is named and nothing is
written.

Afterwards it checks that every row arrived, that every migrated session's
journal verifies against the target as it did against the source (the
journals stay where they are), and that the effort report over the migrated
releases is the same on both; it exits 1 if any differs. --dry-run says what
would be copied, conflicts included, and writes nothing.

Either ledger is an SQLite file (sqlite:PATH or a plain path) or a
postgres:// URL; both are brought to this relcap's schema first.`,
		Example: `  relcap ledger migrate --from ~/.local/share/relcap/ledger.db --to postgres://relcap@db.internal/relcap
  relcap ledger migrate --from sqlite:ledger.db --to postgres://relcap@db.internal/relcap --dry-run`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runOr(runF, runMigrate)(cmd.Context(), f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "the ledger to copy from: sqlite:PATH, a path, or a postgres:// URL")
	fl.StringVar(&f.to, "to", "", "the ledger to copy into: a postgres:// URL, sqlite:PATH or a path")
	fl.BoolVar(&f.dryRun, "dry-run", false, "say what would be copied, write nothing")
	return cmd
}

// migrateLocation reads --from or --to: sqlite:PATH, a path, or a
// postgres:// URL.
func migrateLocation(a *app, flag, v string) (ledgerLocation, error) {
	if v == "" {
		return ledgerLocation{}, usageError{fmt.Errorf("%s is required: sqlite:PATH, a path, or a postgres:// URL", flag)}
	}
	if rest, ok := strings.CutPrefix(v, "sqlite:"); ok {
		v = strings.TrimPrefix(rest, "//")
		if v == "" {
			return ledgerLocation{}, usageError{fmt.Errorf("%s sqlite: names no file; write sqlite:PATH", flag)}
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

// runMigrate copies the history of one ledger into another and verifies
// that it reads the same there.
func runMigrate(ctx context.Context, f *migrateOptions) error {
	a := f.f
	fromLoc, err := migrateLocation(a, "--from", f.from)
	if err != nil {
		return err
	}
	toLoc, err := migrateLocation(a, "--to", f.to)
	if err != nil {
		return err
	}
	if fromLoc.path != "" {
		// Opening a missing file would create an empty ledger, and copy
		// nothing as if all were well.
		if _, err := os.Stat(fromLoc.path); errors.Is(err, fs.ErrNotExist) {
			return usageError{fmt.Errorf("--from %s: no ledger there; name the SQLite file to migrate (default $XDG_DATA_HOME/relcap/ledger.db)", fromLoc.path)}
		}
	}
	if fromLoc.path != "" && fromLoc.path == toLoc.path {
		return usageError{fmt.Errorf("--from and --to are both %s: name two different ledgers", fromLoc.path)}
	}
	src, err := a.openLedgerAt(ctx, fromLoc)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := a.openLedgerAt(ctx, toLoc)
	if err != nil {
		return err
	}
	defer dst.Close()

	dir, err := a.sessionsDirOf(fromLoc)
	if err != nil {
		return err
	}
	// Sessions older than the ledger's journal copies bring their files'
	// entries along, so teammates can verify them from their machines.
	rep, err := store.Migrate(ctx, src, dst, store.MigrateOptions{DryRun: f.dryRun, Journals: store.SessionFiles{Dir: dir}.JournalLines})
	if err != nil {
		return err
	}
	res := migrateResult{Migration: rep, SessionsDir: dir}
	var problems []string
	if !f.dryRun {
		if problems, err = verifyMigration(a, ctx, src, dst, dir, &res); err != nil {
			return err
		}
		res.Verified = len(problems) == 0
	}
	if a.flags.json {
		if err := a.printJSON(res); err != nil {
			return err
		}
	} else {
		plain.PrintMigration(a.io.Out, migrationView(res), problems)
	}
	if toDir, err := a.sessionsDirOf(toLoc); err == nil && toDir != dir && len(rep.Sessions) > 0 && !f.dryRun {
		plain.MigrationNote(a.io.Err, dir, toDir, rep.To)
	}
	if len(problems) > 0 {
		plain.PrintMigrationFailed(a.io.Err, problems)
		return errSilent{exitError}
	}
	return nil
}

// verifyMigration compares the migrated sessions' journal verification
// and the migrated releases' effort report between the two ledgers; it
// returns what differs.
func verifyMigration(a *app, ctx context.Context, src, dst *store.Ledger, dir string, res *migrateResult) ([]string, error) {
	project, err := a.projectIfAny()
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
