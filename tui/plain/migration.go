package plain

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/relcap/relcap/workflow/audit"
)

// Migration is what relcap ledger migrate did and verified, as its
// printer needs it: cmd converts the store's report into it, so this
// package never sees an adapter's type.
type Migration struct {
	// From and To are the ledgers' locations, passwords masked.
	From, To string
	DryRun   bool
	Tables   []MigratedTable
	Skipped  []SkippedTable
	// Copied is the number of rows inserted or merged, in every table.
	Copied int
	// Releases is how many releases the source holds.
	Releases int
	// JournalsCopied and JournalsPresent count the older sessions whose
	// journal files were copied or were there already; JournalsLeft are
	// the ones not copied, each with why.
	JournalsCopied, JournalsPresent int
	JournalsLeft                    []string
	// Journals, EffortSame and SessionsDir are the verification (none
	// for a dry run).
	Journals    []audit.MovedSession
	EffortSame  bool
	SessionsDir string
}

// MigratedTable is one table's row counts in a migration.
type MigratedTable struct {
	Table                           string
	Source, Copied, Present, Merged int
}

// SkippedTable is a table a migration does not copy, and why.
type SkippedTable struct {
	Table, Why string
}

// PrintMigration prints the summary table and the verification; problems
// are what the verification found different (MovedProblems).
func PrintMigration(w io.Writer, m Migration, problems []string) {
	if m.DryRun {
		fmt.Fprintf(w, "dry run: nothing was written; migrating %s into %s would do this:\n", m.From, m.To)
	} else {
		fmt.Fprintf(w, "migrated %s into %s\n", m.From, m.To)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tSOURCE ROWS\tCOPIED\tALREADY PRESENT\tMERGED")
	for _, t := range m.Tables {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", t.Table, t.Source, t.Copied, t.Present, t.Merged)
	}
	_ = tw.Flush()
	for _, s := range m.Skipped {
		fmt.Fprintf(w, "not copied: %s (%s)\n", s.Table, s.Why)
	}
	if m.JournalsCopied > 0 || len(m.JournalsLeft) > 0 {
		fmt.Fprintf(w, "journal files: %d older session(s) copied into %s's journal entries, %d there already\n", m.JournalsCopied, m.To, m.JournalsPresent)
		for _, l := range m.JournalsLeft {
			fmt.Fprintf(w, "journal file not copied: %s\n", l)
		}
	}
	if m.Copied == 0 && m.JournalsCopied == 0 {
		what := "copied"
		if m.DryRun {
			what = "would copy"
		}
		fmt.Fprintf(w, "%s 0 rows: every row of %s is already in %s\n", what, m.From, m.To)
	}
	if m.DryRun {
		return
	}
	intact, same := 0, 0
	for _, s := range m.Journals {
		if s.Same {
			same++
		}
		if s.After.Intact {
			intact++
		}
	}
	fmt.Fprintf(w, "rows: every row of %s is in %s\n", m.From, m.To)
	fmt.Fprintf(w, "journals: %d of %d sessions verify against %s as against %s (%d intact; journals in %s)\n",
		same, len(m.Journals), m.To, m.From, intact, m.SessionsDir)
	if m.EffortSame {
		fmt.Fprintf(w, "effort: the report over the %d migrated releases is the same on both\n", m.Releases)
	} else {
		fmt.Fprintf(w, "effort: the report over the %d migrated releases DIFFERS\n", m.Releases)
	}
	if len(problems) == 0 {
		fmt.Fprintln(w, "verified")
	} else {
		fmt.Fprintln(w, "verification FAILED")
	}
}

// MigrationNote tells where the migrated sessions' journals are when the
// target ledger reads them from another directory.
func MigrationNote(w io.Writer, fromDir, toDir, to string) {
	fmt.Fprintf(w, "note: the journals stay in %s; relcap reads %s's from %s: copy the session directories there (cp -a %s/. %s/) for relcap journal verify --ledger %s\n",
		fromDir, to, toDir, fromDir, toDir, to)
}
