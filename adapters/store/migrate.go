package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/journal"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
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
	// (workflow.ErrNotFound) leaves the session to its file, as before.
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

// tablePlan is how one table is copied.
type tablePlan struct {
	name string
	// columns are the columns copied: all but a number the database
	// assigns. dstTypes are their types in the target (for conversions
	// between the dialects' values); json marks those either schema
	// declares JSON, compared as JSON values.
	columns  []string
	dstTypes []string
	json     []bool
	// key indexes columns: the natural key rows are matched on. Empty:
	// rows are matched on every copied column.
	key []int
	// order is what source rows are read in: their key, or the number
	// the source assigned (its insertion order).
	order []string
	obs   *observation
}

// planMigration orders the source's tables, parents first, and plans each
// one's copy against the target's schema.
func planMigration(src, dst []tableSchema, fromLoc, toLoc string) ([]tablePlan, []SkippedTable, error) {
	byName := func(ts []tableSchema) map[string]tableSchema {
		m := make(map[string]tableSchema, len(ts))
		for _, t := range ts {
			m[t.name] = t
		}
		return m
	}
	srcBy, dstBy := byName(src), byName(dst)
	var skipped []SkippedTable
	var copied []tableSchema
	for _, t := range src {
		if why, ok := notCopied[t.name]; ok {
			skipped = append(skipped, SkippedTable{Table: t.name, Why: why})
			continue
		}
		copied = append(copied, t)
	}
	ordered, err := parentsFirst(copied)
	if err != nil {
		return nil, nil, err
	}
	plans := make([]tablePlan, 0, len(ordered))
	for _, s := range ordered {
		d, ok := dstBy[s.name]
		if !ok {
			return nil, nil, refuse("table %s of %s is not in %s: is one of them from another version of relcap? upgrade relcap and open both with it", s.name, fromLoc, toLoc)
		}
		assigned := map[string]bool{}
		for _, c := range s.columns {
			if dc, ok := d.column(c.name); c.identity || (ok && dc.identity) {
				assigned[c.name] = true
			}
		}
		for _, fk := range s.references {
			parent := srcBy[fk.table]
			cols := fk.columns
			if len(cols) == 1 && cols[0] == "" {
				cols = parent.primaryKey
			}
			for _, c := range cols {
				if pc, ok := parent.column(c); ok && pc.identity {
					return nil, nil, refuse("table %s refers to %s.%s, a number each ledger assigns itself; migrate copies rows under new numbers and cannot renumber the references yet", s.name, fk.table, c)
				}
			}
		}
		p := tablePlan{name: s.name}
		if o, ok := observations[s.name]; ok {
			p.obs = &o
		}
		for _, c := range s.columns {
			if assigned[c.name] {
				continue
			}
			dc, ok := d.column(c.name)
			if !ok {
				return nil, nil, refuse("column %s.%s of %s is not in %s: is one of them from another version of relcap? upgrade relcap and open both with it", s.name, c.name, fromLoc, toLoc)
			}
			p.columns = append(p.columns, c.name)
			p.dstTypes = append(p.dstTypes, dc.typ)
			p.json = append(p.json, strings.Contains(c.typ, "json") || strings.Contains(dc.typ, "json"))
		}
		key := naturalKey(s, assigned)
		for _, k := range key {
			p.key = append(p.key, slices.Index(p.columns, k))
		}
		p.order = s.primaryKey
		if len(p.order) == 0 {
			p.order = key
		}
		plans = append(plans, p)
	}
	return plans, skipped, nil
}

// naturalKey is the key rows of t are matched on: its primary key unless
// the database assigns it, else its first unique constraint free of
// assigned numbers; nil for none.
func naturalKey(t tableSchema, assigned map[string]bool) []string {
	free := func(cols []string) bool {
		if len(cols) == 0 {
			return false
		}
		for _, c := range cols {
			if assigned[c] {
				return false
			}
		}
		return true
	}
	if free(t.primaryKey) {
		return t.primaryKey
	}
	for _, u := range t.uniques {
		if free(u) {
			return u
		}
	}
	return nil
}

// parentsFirst orders tables so that each comes after the tables its
// foreign keys point at; otherwise by name.
func parentsFirst(tables []tableSchema) ([]tableSchema, error) {
	placed := map[string]bool{}
	in := map[string]bool{}
	for _, t := range tables {
		in[t.name] = true
	}
	var out []tableSchema
	for len(out) < len(tables) {
		progress := false
		for _, t := range tables {
			if placed[t.name] {
				continue
			}
			ready := true
			for _, fk := range t.references {
				if fk.table != t.name && in[fk.table] && !placed[fk.table] {
					ready = false
				}
			}
			if ready {
				out = append(out, t)
				placed[t.name] = true
				progress = true
			}
		}
		if !progress {
			var cycle []string
			for _, t := range tables {
				if !placed[t.name] {
					cycle = append(cycle, t.name)
				}
			}
			return nil, refuse("the foreign keys of tables %s form a cycle; migrate cannot order their rows", strings.Join(cycle, ", "))
		}
	}
	return out, nil
}

type copyMode int

const (
	// modeCopy inserts what the target lacks, merges observations.
	modeCopy copyMode = iota
	// modeCheck writes nothing: Copied and Merged count the rows a copy
	// would still write.
	modeCheck
)

// copy copies the table's rows from the source snapshot src into the
// target transaction dst (or, in modeCheck, counts what a copy would
// write), returning the conflicts it found.
func (p tablePlan) copy(ctx context.Context, src, dst ledgerTx, mode copyMode) (TableMigration, []MigrateConflict, error) {
	tm := TableMigration{Table: p.name}
	cols := make([]string, len(p.columns))
	for i, c := range p.columns {
		cols[i] = quoteIdent(c)
	}
	list := strings.Join(cols, ", ")

	// The target's rows, read whole before any write: a PostgreSQL
	// connection cannot write while a result is open on it.
	byKey := map[string][32]byte{}
	count := map[[32]byte]int{}
	rows, err := dst.QueryContext(ctx, `SELECT `+list+` FROM `+quoteIdent(p.name))
	if err != nil {
		return tm, nil, err
	}
	err = scanRows(rows, len(cols), func(vals []any) {
		k, h := p.identify(vals)
		if len(p.key) > 0 {
			byKey[k] = h
		} else {
			count[h]++
		}
	})
	if err != nil {
		return tm, nil, err
	}

	var insert *sql.Stmt
	if mode == modeCopy {
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
		// Through the transaction's own ExecContext would mask secrets
		// again; values are copied as stored.
		st, err := dst.Tx.PrepareContext(ctx, dst.d.rebind(`INSERT INTO `+quoteIdent(p.name)+` (`+list+`) VALUES (`+marks+`)`))
		if err != nil {
			return tm, nil, err
		}
		defer st.Close()
		insert = st
	}

	var conflicts []MigrateConflict
	q := `SELECT ` + list + ` FROM ` + quoteIdent(p.name)
	if len(p.order) > 0 {
		ord := make([]string, len(p.order))
		for i, c := range p.order {
			ord[i] = quoteIdent(c)
		}
		q += ` ORDER BY ` + strings.Join(ord, ", ")
	}
	srows, err := src.QueryContext(ctx, q)
	if err != nil {
		return tm, nil, err
	}
	defer srows.Close()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for srows.Next() {
		if err := srows.Scan(ptrs...); err != nil {
			return tm, nil, err
		}
		tm.Source++
		k, h := p.identify(vals)
		write := p.forTarget(vals)
		if len(p.key) == 0 && count[h] > 0 {
			count[h]--
			tm.Present++
			continue
		}
		_, known := byKey[k]
		if len(p.key) > 0 && byKey[k] == h {
			tm.Present++
			continue
		}
		if where, args, ok := p.sameObservation(vals, write); known || ok {
			merged, differs, found, err := p.compare(ctx, dst, vals, where, args)
			if err != nil {
				return tm, nil, err
			}
			switch {
			case !found:
				// An observation the target does not have: inserted.
			case differs != nil:
				conflicts = append(conflicts, MigrateConflict{Table: p.name, Key: p.describe(vals, args), Differs: differs})
				continue
			case merged == nil:
				tm.Present++
				continue
			default:
				tm.Merged++
				if mode == modeCopy {
					q := `UPDATE ` + quoteIdent(p.name) + ` SET ` + quoteIdent(p.obs.first) + ` = ?, ` + quoteIdent(p.obs.last) + ` = ? WHERE ` + where
					if _, err := dst.Tx.ExecContext(ctx, dst.d.rebind(q), append(merged, args...)...); err != nil {
						return tm, nil, err
					}
				}
				continue
			}
		}
		tm.Copied++
		if mode == modeCopy {
			if _, err := insert.ExecContext(ctx, write...); err != nil {
				if why, ok := uniqueViolation(err); ok {
					// A unique index the plan does not match on (a partial
					// one: one open finding per subject): the target holds
					// another row there.
					key := p.describeKey(vals)
					if key == "" {
						key = why
					}
					tm.refused = true
					return tm, append(conflicts, MigrateConflict{Table: p.name, Key: key}), nil
				}
				return tm, nil, fmt.Errorf("copy a row of %s: %w", p.name, err)
			}
		}
	}
	if err := srows.Err(); err != nil {
		return tm, nil, err
	}
	return tm, conflicts, nil
}

// sameObservation is the condition selecting the target's row of the
// same observation as the source row vals (write: as the target takes
// them): its natural key, or for a table keyed by a number the open row
// of its observation key; false when vals is no open observation of such
// a table.
func (p tablePlan) sameObservation(vals, write []any) (string, []any, bool) {
	if len(p.key) > 0 {
		return p.keyWhere(), p.keyArgs(write), false
	}
	if p.obs == nil || p.obs.open == "" || vals[slices.Index(p.columns, p.obs.open)] != nil {
		return "", nil, false
	}
	conds := make([]string, 0, len(p.obs.key)+1)
	args := make([]any, 0, len(p.obs.key))
	for _, c := range p.obs.key {
		conds = append(conds, quoteIdent(c)+` = ?`)
		args = append(args, write[slices.Index(p.columns, c)])
	}
	conds = append(conds, quoteIdent(p.obs.open)+` IS NULL`)
	return strings.Join(conds, " AND "), args, true
}

// compare reads the target's row selected by where and args (found false
// for none) and compares it with the source row vals. For an observation
// differing only in its times it returns the merged times, or nil when
// the target's already span the source's; otherwise differs names the
// columns that differ.
func (p tablePlan) compare(ctx context.Context, dst ledgerTx, vals []any, where string, args []any) (merged []any, differs []string, found bool, err error) {
	cols := make([]string, len(p.columns))
	for i, c := range p.columns {
		cols[i] = quoteIdent(c)
	}
	row := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range row {
		ptrs[i] = &row[i]
	}
	err = dst.QueryRowContext(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM `+quoteIdent(p.name)+` WHERE `+where, args...).Scan(ptrs...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	for i, c := range p.columns {
		if !bytes.Equal(canonical(vals[i], p.json[i]), canonical(row[i], p.json[i])) {
			differs = append(differs, c)
		}
	}
	if p.obs == nil {
		return nil, differs, true, nil
	}
	for _, c := range differs {
		if c != p.obs.first && c != p.obs.last {
			return nil, differs, true, nil
		}
	}
	fi, li := slices.Index(p.columns, p.obs.first), slices.Index(p.columns, p.obs.last)
	first, okF := minInt(vals[fi], row[fi])
	last, okL := maxInt(vals[li], row[li])
	if !okF || !okL {
		return nil, differs, true, nil
	}
	if first == asInt(row[fi]) && last == asInt(row[li]) {
		return nil, nil, true, nil
	}
	return []any{first, last}, nil, true, nil
}

// describe names the row compare selected: its key, or its observation
// key's values.
func (p tablePlan) describe(vals, args []any) string {
	if len(p.key) > 0 {
		return p.describeKey(vals)
	}
	parts := make([]string, len(p.obs.key))
	for i, c := range p.obs.key {
		parts[i] = fmt.Sprintf("%s=%v", c, args[i])
	}
	return strings.Join(parts, ", ") + " (open)"
}

func (p tablePlan) keyWhere() string {
	conds := make([]string, len(p.key))
	for i, k := range p.key {
		conds[i] = quoteIdent(p.columns[k]) + ` = ?`
	}
	return strings.Join(conds, " AND ")
}

func (p tablePlan) keyArgs(vals []any) []any {
	out := make([]any, len(p.key))
	for i, k := range p.key {
		out[i] = vals[k]
	}
	return out
}

// describeKey names a row by its key, e.g. "id=web-staging-20261130-3f9a1c";
// "" for a table without one.
func (p tablePlan) describeKey(vals []any) string {
	parts := make([]string, len(p.key))
	for i, k := range p.key {
		v := vals[k]
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		parts[i] = fmt.Sprintf("%s=%v", p.columns[k], v)
	}
	return strings.Join(parts, ", ")
}

// identify returns the key of a row (its natural key's values) and the
// hash of all its values, both in a form equal for equal values whichever
// database they were read from.
func (p tablePlan) identify(vals []any) (string, [32]byte) {
	var key []byte
	for _, k := range p.key {
		key = appendValue(key, canonical(vals[k], p.json[k]))
	}
	h := sha256.New()
	var buf []byte
	for i, v := range vals {
		buf = appendValue(buf[:0], canonical(v, p.json[i]))
		h.Write(buf)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return string(key), sum
}

func appendValue(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// canonical is a value as the copy compares it: tagged by kind, text and
// bytes alike (PostgreSQL's driver returns JSON as bytes, SQLite's text),
// JSON re-encoded (PostgreSQL's JSONB keeps no spacing or key order).
func canonical(v any, isJSON bool) []byte {
	switch v := v.(type) {
	case nil:
		return []byte{'n'}
	case int64:
		return strconv.AppendInt([]byte{'i'}, v, 10)
	case bool:
		if v {
			return []byte{'i', '1'}
		}
		return []byte{'i', '0'}
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return strconv.AppendInt([]byte{'i'}, int64(v), 10)
		}
		return strconv.AppendFloat([]byte{'f'}, v, 'g', -1, 64)
	case time.Time:
		return strconv.AppendInt([]byte{'t'}, v.UnixNano(), 10)
	case string:
		return canonicalText([]byte(v), isJSON)
	case []byte:
		return canonicalText(v, isJSON)
	}
	return fmt.Appendf([]byte{'?'}, "%v", v)
}

func canonicalText(b []byte, isJSON bool) []byte {
	if isJSON {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var x any
		if dec.Decode(&x) == nil {
			if out, err := json.Marshal(x); err == nil {
				return append([]byte{'j'}, out...)
			}
		}
	}
	return append([]byte{'s'}, b...)
}

// forTarget converts a source row's values to what the target's columns
// take: SQLite's STRICT text columns refuse bytes, PostgreSQL's bytea
// refuses text, and booleans are integers in SQLite.
func (p tablePlan) forTarget(vals []any) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		typ := p.dstTypes[i]
		binary := typ == "bytea" || typ == "blob"
		switch x := v.(type) {
		case []byte:
			if !binary {
				v = string(x)
			}
		case string:
			if binary {
				v = []byte(x)
			}
		case bool:
			if typ != "boolean" {
				v = int64(0)
				if x {
					v = int64(1)
				}
			}
		case int64:
			if typ == "boolean" {
				v = x != 0
			}
		}
		out[i] = v
	}
	return out
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return 0
}

func isInt(v any) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

func minInt(a, b any) (int64, bool) {
	if !isInt(a) || !isInt(b) {
		return 0, false
	}
	return min(asInt(a), asInt(b)), true
}

func maxInt(a, b any) (int64, bool) {
	if !isInt(a) || !isInt(b) {
		return 0, false
	}
	return max(asInt(a), asInt(b)), true
}

// scanRows calls fn with each row's n values, then closes rows.
func scanRows(rows *sql.Rows, n int, fn func([]any)) error {
	defer rows.Close()
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		fn(vals)
	}
	return rows.Err()
}

// uniqueViolation reports whether err is a unique index's refusal, and
// the database's words for it.
func uniqueViolation(err error) (string, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return strings.TrimSpace(pe.Message + ": " + pe.Detail), true
	}
	var se *sqlite.Error
	if errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY) {
		return err.Error(), true
	}
	return "", false
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
		if errors.Is(err, workflow.ErrNotFound) {
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
