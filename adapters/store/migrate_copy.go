package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// How Migrate copies or checks one table's rows, and the canonical form
// rows are compared in across the two dialects.

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
