package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// notCopied are the tables Migrate leaves alone, each with why (the
// summary prints it). Every other table of the schema is copied, tables
// that later migrations add included, by the same code: it reads the
// tables, their columns and keys from the database's catalogue. A table
// whose rows must not travel is named here: rows derived by a trigger from
// rows that are copied (copying both would count them twice), and
// transient rows, such as the holders of locks held right now, which mean
// something only to the processes of the ledger they were taken in. A
// migration that adds such a table adds its name here, with the reason.
var notCopied = map[string]string{
	"schema_migrations": "the schema's version: each ledger was brought to the current schema when opened",
	"effort_keys":       "derived: the effort_sum trigger numbers each person, role, step and kind as effort is inserted",
	"effort_totals":     "derived: the effort_sum trigger sums each release's effort as it is inserted",
	"operation_locks":   "transient: the holders of locks held right now, by connections to the source alone",
	"ledger_identity":   "each ledger's own: the sessions copied keep the source's identity in their sealed heads, as signed",
}

// observation is a table whose rows record when something was seen: two
// ledgers that both saw it keep one row, seen first at the earlier of the
// two times and last at the later. A row of the source that differs from
// the target's only in those columns is merged, not a conflict.
type observation struct {
	first, last string
	// key and open, for a table keyed by a number: the rows whose open
	// column is NULL are one observation per key (a partial unique
	// index); empty for a table with a natural key, which is the key.
	key  []string
	open string
}

var observations = map[string]observation{
	// Two captains resolving the same tag to the same digest.
	"sightings": {first: "at", last: "last_seen"},
	// Two captains' ownership checks finding the same problem still open
	// (findings_open: one open row per scope, code and subject).
	"findings": {first: "first_seen", last: "last_seen", key: []string{"scope", "code", "subject"}, open: "resolved_at"},
}

// MigrateOptions says how Migrate copies.
type MigrateOptions struct {
	// DryRun copies inside the target's transaction and rolls it back:
	// the report says what would be copied, conflicts included, and
	// nothing is written.
	DryRun bool
	// Journals reads a source session's journal file, for sessions the
	// source ledger keeps no copy of (recorded before schema 8): their
	// lines, once they verify against the source's head, are copied into
	// the target's journal_entries, so teammates on other machines can
	// verify them too. nil copies none; a file it cannot find
	// (fault.ErrNotFound) leaves the session to its file, as before.
	Journals func(ctx context.Context, sessionID string) ([]journal.Line, error)
}

// JournalBackfill is what Migrate did with the journal files of sessions
// the source ledger keeps no copy of.
type JournalBackfill struct {
	// Copied sessions had their file's entries copied into the target.
	Copied int `json:"copied"`
	// Present sessions' entries were in the target already.
	Present int `json:"present"`
	// Left are sessions whose file could not be copied, each with why
	// (not on this machine, or it does not verify): they are verified
	// from their file alone, where it is.
	Left []string `json:"left,omitempty"`
}

// TableMigration is what Migrate did with one table: Source rows in the
// source ledger, of which Copied were inserted into the target, Present
// were there already (the same row), and Merged were observations the
// target had too, whose times now span both.
type TableMigration struct {
	Table   string `json:"table"`
	Source  int    `json:"source_rows"`
	Copied  int    `json:"copied"`
	Present int    `json:"already_present"`
	Merged  int    `json:"merged"`

	refused bool // an insert hit a unique index: the copy stops
}

// SkippedTable is a table Migrate does not copy, and why.
type SkippedTable struct {
	Table string `json:"table"`
	Why   string `json:"why"`
}

// MigrateReport is the outcome of Migrate.
type MigrateReport struct {
	// From and To are the ledgers' locations, passwords masked.
	From   string           `json:"from"`
	To     string           `json:"to"`
	DryRun bool             `json:"dry_run"`
	Tables []TableMigration `json:"tables"`
	// Skipped are the schema's tables left alone (see notCopied).
	Skipped []SkippedTable `json:"skipped"`
	// Releases and Sessions are the IDs of the source's releases and
	// sessions: what the migration's verification compares.
	Releases []string `json:"releases"`
	Sessions []string `json:"sessions"`
	// Journals is the copy of older sessions' journal files.
	Journals JournalBackfill `json:"journals"`
}

// Copied is the number of rows inserted or merged, in every table.
func (r MigrateReport) Copied() int {
	n := 0
	for _, t := range r.Tables {
		n += t.Copied + t.Merged
	}
	return n
}

// MigrateConflict is a row of the source whose key a different row holds
// in the target.
type MigrateConflict struct {
	Table string `json:"table"`
	// Key names the row (column=value of its key), or for a table keyed
	// by a number each ledger assigns, the unique index it collides on.
	Key string `json:"key"`
	// Differs names the columns whose values differ, when known.
	Differs []string `json:"differs,omitempty"`
}

func (c MigrateConflict) String() string {
	s := c.Table + " " + c.Key
	if len(c.Differs) > 0 {
		s += " (" + strings.Join(c.Differs, ", ") + " differ)"
	}
	return s
}

// ConflictError is Migrate's refusal: rows of the source collide with
// different rows of the target. Nothing was written.
type ConflictError struct {
	To        string
	Conflicts []MigrateConflict // the first few
	Total     int
}

func (e *ConflictError) Error() string {
	parts := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		parts[i] = c.String()
	}
	more := ""
	if e.Total > len(e.Conflicts) {
		more = fmt.Sprintf(" and %d more", e.Total-len(e.Conflicts))
	}
	return fmt.Sprintf("%d row(s) of the source collide with different rows of %s under the same key: %s%s; nothing was written: "+
		"find out which is right (the same release or session changed on both sides?) and settle it before migrating again",
		e.Total, e.To, strings.Join(parts, "; "), more)
}

// maxConflicts is how many conflicts a ConflictError names.
const maxConflicts = 10

// Migrate copies every row of ledger from into ledger to, both already
// open (and so at the current schema), in one transaction on to: it
// commits whole or not at all. It copies every table of the schema but
// those of notCopied, parents before the tables whose foreign keys point
// at them, columns by name, so it works both ways between SQLite and
// PostgreSQL and into a ledger that already holds other captains' rows:
//
//   - a row with a natural key (a release's ID, a session's, a plan's
//     fingerprint, a unique set of columns) is inserted when the target
//     has none with that key, and skipped when the target's is equal;
//     a different row under the same key is a conflict (a ConflictError,
//     nothing written), unless it is the same observation seen at other
//     times (see observations), merged to span both;
//   - a row keyed only by a number the database assigns (effort entries,
//     approvals, convergences, findings) is matched on all its other
//     columns, counting duplicates: a row present as often in the target
//     is skipped, any other is inserted under a number the target
//     assigns. The source's numbers are never copied, so they cannot
//     collide with the team's and no sequence needs moving; a foreign
//     key onto such a number would need renumbering, which Migrate
//     refuses rather than get wrong.
//
// Values are copied as they are stored (not masked again: they were when
// written). Inserts run the target's triggers (effort summaries); only
// observations are ever updated, and sealed session heads, which the
// schema keeps write-once, are only ever inserted.
//
// After the commit Migrate checks, in the same snapshot of the source,
// that every source row is now in the target; running it again copies
// nothing. from and to must be two different ledgers.
func Migrate(ctx context.Context, from, to *Ledger, opts MigrateOptions) (MigrateReport, error) {
	rep := MigrateReport{From: from.loc, To: to.loc, DryRun: opts.DryRun}
	if from.sameAs(to) {
		return rep, refuse("%s is both the source and the target: name two different ledgers", from.loc)
	}
	srcTxs, err := from.readSnapshots(ctx, 1)
	if err != nil {
		return rep, from.fail("read the ledger to migrate", err)
	}
	src := srcTxs[0]
	defer func() { _ = src.Rollback() }()
	srcTables, err := from.d.schemaTables(ctx, src.Tx)
	if err != nil {
		return rep, from.fail("read the schema", err)
	}
	if rep.Releases, err = queryStrings(ctx, src.Tx, `SELECT id FROM releases ORDER BY id`); err != nil {
		return rep, from.fail("list releases", err)
	}
	if rep.Sessions, err = queryStrings(ctx, src.Tx, `SELECT id FROM sessions ORDER BY id`); err != nil {
		return rep, from.fail("list sessions", err)
	}

	var plans []tablePlan
	err = to.runTx(ctx, func(tx ledgerTx) error {
		// Two migrations into one ledger at once would both find a row
		// missing and both insert it.
		if err := tx.serialize(ctx, "migrate"); err != nil {
			return err
		}
		dstTables, err := to.d.schemaTables(ctx, tx.Tx)
		if err != nil {
			return err
		}
		if plans, rep.Skipped, err = planMigration(srcTables, dstTables, from.loc, to.loc); err != nil {
			return err
		}
		var conflicts []MigrateConflict
		rep.Tables = rep.Tables[:0]
		for _, p := range plans {
			tm, cs, err := p.copy(ctx, src, tx, modeCopy)
			if err != nil {
				return err
			}
			rep.Tables = append(rep.Tables, tm)
			conflicts = append(conflicts, cs...)
			if tm.refused {
				// The database refused the insert and (PostgreSQL) the
				// transaction with it: nothing more can be run in it.
				break
			}
			if tm.Copied+tm.Merged > 0 {
				// Live cockpits on a PostgreSQL ledger hear of the
				// migrated approvals and releases at once.
				if err := tx.notify(ctx, p.name); err != nil {
					return err
				}
			}
		}
		if len(conflicts) > 0 {
			return &ConflictError{To: to.loc, Conflicts: conflicts[:min(len(conflicts), maxConflicts)], Total: len(conflicts)}
		}
		if opts.Journals != nil {
			if rep.Journals, err = backfillJournals(ctx, src.Tx, tx, opts.Journals); err != nil {
				return err
			}
		}
		if opts.DryRun {
			return errDryRun
		}
		return nil
	})
	switch {
	case errors.Is(err, errDryRun):
		return rep, nil
	case err != nil:
		var ce *ConflictError
		var me migrateError
		if errors.As(err, &ce) || errors.As(err, &me) {
			return rep, err
		}
		return rep, to.fail("migrate from "+from.loc, err)
	}

	// The check: every source row of the snapshot copied is in the target.
	dstTxs, err := to.readSnapshots(ctx, 1)
	if err != nil {
		return rep, to.fail("check the migration", err)
	}
	defer func() { _ = dstTxs[0].Rollback() }()
	var missing []string
	for _, p := range plans {
		tm, cs, err := p.copy(ctx, src, dstTxs[0], modeCheck)
		if err != nil {
			return rep, to.fail("check the migration", err)
		}
		if n := tm.Copied + tm.Merged + len(cs); n > 0 {
			missing = append(missing, fmt.Sprintf("%s: %d of %d rows", p.name, n, tm.Source))
		}
	}
	if len(missing) > 0 {
		return rep, refuse("after the copy, rows of %s are not in %s: %s; another process changed it meanwhile? run the migration again",
			from.loc, to.loc, strings.Join(missing, ", "))
	}
	return rep, nil
}

// migrateError is a refusal of Migrate's own, whose message says it all:
// not wrapped again as a database failure.
type migrateError struct{ error }

func (e migrateError) Unwrap() error { return e.error }

func refuse(format string, args ...any) error {
	return migrateError{fmt.Errorf("migrate: "+format, args...)}
}

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run")

// sameAs reports whether s and o are one ledger: one SQLite file, or one
// PostgreSQL database on one server.
func (s *Ledger) sameAs(o *Ledger) bool {
	if s == o {
		return true
	}
	if s.path != "" && o.path != "" {
		a, errA := os.Stat(s.path)
		b, errB := os.Stat(o.path)
		return s.path == o.path || (errA == nil && errB == nil && os.SameFile(a, b))
	}
	ps, ok1 := s.d.(*postgresDialect)
	po, ok2 := o.d.(*postgresDialect)
	return ok1 && ok2 && ps.cfg.Host == po.cfg.Host && ps.cfg.Port == po.cfg.Port && ps.cfg.Database == po.cfg.Database
}

// backfillJournals copies into dst the journal files of the source's
// sessions that the source ledger keeps no entries of (opened before
// schema 8), each only when its lines verify against the source's head,
// and only into a target that holds none of the session's entries yet: a
// second migration finds them present. Sessions' journal_copy is left as
// it is (it is write-once); a ledger that holds a session's entries
// verifies them whatever the flag says (JournalCopy).
func backfillJournals(ctx context.Context, src *sql.Tx, dst ledgerTx, read func(context.Context, string) ([]journal.Line, error)) (JournalBackfill, error) {
	var b JournalBackfill
	rows, err := src.QueryContext(ctx, `SELECT s.id, s.head_seq, s.head_hash FROM sessions s
WHERE NOT EXISTS (SELECT 1 FROM journal_entries e WHERE e.session_id = s.id) ORDER BY s.id`)
	if err != nil {
		return b, err
	}
	var heads []journal.Head
	for rows.Next() {
		var h journal.Head
		if err := rows.Scan(&h.SessionID, &h.Seq, &h.Hash); err != nil {
			_ = rows.Close()
			return b, err
		}
		heads = append(heads, h)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return b, err
	}
	for _, h := range heads {
		if h.Seq == 0 {
			continue // a session that journaled nothing
		}
		var n int
		if err := dst.QueryRowContext(ctx, `SELECT count(*) FROM journal_entries WHERE session_id = ?`, h.SessionID).Scan(&n); err != nil {
			return b, err
		}
		if n > 0 {
			b.Present++
			continue
		}
		lines, err := read(ctx, h.SessionID)
		if errors.Is(err, fault.ErrNotFound) {
			b.Left = append(b.Left, h.SessionID+": its journal file is not on this machine")
			continue
		}
		if err != nil {
			return b, err
		}
		if _, p := journal.Verify(lines, h); p != nil {
			b.Left = append(b.Left, fmt.Sprintf("%s: its journal file does not verify (%s)", h.SessionID, p))
			continue
		}
		for _, l := range lines {
			var e journal.Entry
			if err := json.Unmarshal(l.Text, &e); err != nil {
				return b, err // verified above: cannot happen
			}
			// Not scrubbed, as AppendJournal: the line was masked before
			// it was sealed, and masking it again could change it.
			if _, err := dst.Tx.ExecContext(ctx, dst.d.rebind(`INSERT INTO journal_entries (session_id, seq, hash, line) VALUES (?, ?, ?, ?)`),
				h.SessionID, e.Seq, e.Hash, string(l.Text)); err != nil {
				return b, err
			}
		}
		b.Copied++
	}
	return b, nil
}
