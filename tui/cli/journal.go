package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/fault"
)

func newCmdJournal(a Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "journal",
		Short: "The tamper-evident session journals, for audits",
		Long: `Every state-changing command opens a session and appends hash-chained
entries to its journal; the last entry's hash is also kept in the ledger.
journal verify detects any edit, deletion, reordering or truncation. When a
session closes, its final head is signed by the actor's key (where the project
has a people file) and anchored on refs/relcap/journal of the environment
repository, so a journal rewritten together with its ledger head, or a
session's ledger row deleted, is detected too.`,
	}
	cmd.AddCommand(newCmdJournalList(a, nil), newCmdJournalShow(a, nil), newCmdJournalVerify(a, nil), newCmdJournalReplay(a, nil))
	return readOnlyCommand(cmd)
}

func journalPath(a Factory, id string) (string, error) {
	files, err := a.SessionFiles()
	if err != nil {
		return "", err
	}
	return files.JournalPath(id), nil
}

// journalOptions are the journal commands' arguments: the sessions named.
type journalOptions struct {
	f        Factory
	Sessions []string
}

func newCmdJournalList(f Factory, runF func(context.Context, *journalOptions) error) *cobra.Command {
	opts := &journalOptions{f: f}
	return &cobra.Command{
		Use:   "list",
		Short: "List sessions, oldest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOr(runF, runJournalList)(cmd.Context(), opts)
		},
	}
}

// runJournalList lists the ledger's sessions.
func runJournalList(ctx context.Context, opts *journalOptions) error {
	a := opts.f
	q, err := a.Records(ctx)
	if err != nil {
		return err
	}
	sessions, err := q.Sessions(ctx)
	if err != nil {
		return err
	}
	return plain.PrintSessionList(a.IO().Out, a.IO().Err, sessions, a.Flags().JSON)
}

func newCmdJournalShow(f Factory, runF func(context.Context, *journalOptions) error) *cobra.Command {
	opts := &journalOptions{f: f}
	return &cobra.Command{
		Use:   "show SESSION",
		Short: "Print a session's journal entries",
		Args:  exactArgs(1, "one session ID (see relcap journal list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Sessions = args
			return runOr(runF, runJournalShow)(cmd.Context(), opts)
		},
	}
}

// runJournalShow prints one session's journal, from its file or the
// ledger's copy.
func runJournalShow(ctx context.Context, opts *journalOptions) error {
	a, args := opts.f, opts.Sessions
	path, err := journalPath(a, args[0])
	if err != nil {
		return err
	}
	q, err := a.Auditor(ctx)
	if err != nil {
		return err
	}
	entries, from, err := q.JournalEntries(ctx, args[0])
	if errors.Is(err, fault.ErrNotFound) {
		// A mistyped session ID is a usage error, as a mistyped release
		// ID is (exit 2).
		return UsageError{fmt.Errorf("%w: no journal for session %s at %s nor in the ledger (see relcap journal list)", fault.ErrNotFound, args[0], path)}
	}
	if err != nil {
		return err
	}
	if from == audit.JournalFromLedger {
		plain.PrintJournalFromLedger(a.IO().Err, args[0], path)
	}
	return plain.PrintJournalEntries(a.IO().Out, entries, a.Flags().JSON)
}

func newCmdJournalVerify(f Factory, runF func(context.Context, *journalOptions) error) *cobra.Command {
	opts := &journalOptions{f: f}
	return &cobra.Command{
		Use:   "verify [SESSION]",
		Short: "Check journals: hash chain, ledger head, recordings, signed head and anchor (all sessions by default)",
		Long: `verify re-computes every entry's hash and link and compares the last one with
the head the ledger holds; checks that the screen recordings a journal vouches
for are unchanged; checks the session's sealed head against its actor's key in
the people file as it reads now (namespace relcap-journal); and compares it with
the head anchored on refs/relcap/journal of the first environment's
environment repository, which also names sessions whose ledger row is gone.
It reads that ref's whole history, not only its tip: a head that any commit
held and a later commit removed or changed (a fast-forward that a server's
protection allows) is TAMPERED, naming the commit; so is a session whose
anchor commit, as the ledger recorded it, is no longer in the ref's history
(the ref was rewound). A journal on disk that no ledger row accounts for is
TAMPERED too, unless its journal names another ledger.

An environment repository without an origin is written in place: whoever
keeps it can rewind the ref alone, and a rewind that also deletes the
session's ledger rows and journal leaves nothing to detect. verify says so
("anchor not protected"); push the anchors to an origin whose
refs/relcap/journal only fast-forwards (docs/SECURITY.md).

The ledger keeps a copy of every journal entry (sessions recorded before it
did excepted). Where the session's journal file is on this machine, the file
and the ledger's copy must agree line for line; where it is not (the session
was recorded on another machine), the ledger's copy is verified instead, and
the screen recordings, which stay on the machine that recorded them, are
reported as not checked here.

It exits 0 when no check failed and 3 naming each session that failed and
which check (chain, ledger_head, ledger_copy, recordings, signature, anchor). Sessions
whose head is unsigned or was never anchored (older sessions, projects
without a people file or environment repository) are warned about on
stderr, not counted as tampering. Run it with -c naming the relcap.yaml whose
people file and environment repository to check against; without one,
signatures and anchors are not checked, and it says so.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Sessions = args
			return runOr(runF, runJournalVerify)(cmd.Context(), opts)
		},
	}
}

// runJournalVerify verifies the sessions' journals (all by default) and
// exits 3 naming what was tampered with.
func runJournalVerify(ctx context.Context, opts *journalOptions) error {
	a, args := opts.f, opts.Sessions
	q, err := a.Auditor(ctx)
	if err != nil {
		return err
	}
	checked, err := q.VerifyJournals(ctx, args)
	if err != nil {
		return err
	}
	files, err := a.SessionFiles()
	if err != nil {
		return err
	}
	tampered, err := plain.PrintJournalsVerified(a.IO().Out, a.IO().Err, a.Flags().JSON, checked, files.Dir, files.JournalPath)
	if err != nil {
		return err
	}
	if tampered {
		return SilentError{ExitBlocked}
	}
	if anchorErr := checked.AnchorError; anchorErr != nil {
		return fmt.Errorf("the journal anchors on %s could not be read, so no session's anchor was checked and a deleted ledger row would go unnoticed: %w; make the environment repository reachable and verify again", checked.Anchor, anchorErr)
	}
	return nil
}
