package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
)

func newCmdLedger(a Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "The ledger itself: move a captain's history into the team's store",
	}
	cmd.AddCommand(newCmdLedgerMigrate(a, nil))
	return cmd
}

// migrateOptions are ledger migrate's flags.
type migrateOptions struct {
	f        Factory
	from, to string
	dryRun   bool
}

func newCmdLedgerMigrate(a Factory, runF func(context.Context, *migrateOptions) error) *cobra.Command {
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

// runMigrate copies the history of one ledger into another and verifies
// that it reads the same there.
func runMigrate(ctx context.Context, f *migrateOptions) error {
	a := f.f
	out, err := a.MigrateLedger(ctx, MigrateRequest{From: f.from, To: f.to, DryRun: f.dryRun})
	if err != nil {
		return err
	}
	if a.Flags().JSON {
		if err := printJSON(a, out.Document); err != nil {
			return err
		}
	} else {
		plain.PrintMigration(a.IO().Out, out.View, out.Problems)
	}
	if out.TargetSessionsDir != "" && out.TargetSessionsDir != out.SessionsDir && out.MovedSessions > 0 && !f.dryRun {
		plain.MigrationNote(a.IO().Err, out.SessionsDir, out.TargetSessionsDir, out.To)
	}
	if len(out.Problems) > 0 {
		plain.PrintMigrationFailed(a.IO().Err, out.Problems)
		return SilentError{ExitError}
	}
	return nil
}
