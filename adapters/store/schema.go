package store

import (
	"context"
	"database/sql"
	"strings"
)

// tableSchema is one table as the database's catalogue describes it, for
// Migrate: it copies whatever tables the schema has, so tables added by
// later migrations need no code of their own.
type tableSchema struct {
	name    string
	columns []columnSchema // in their declared order
	// primaryKey names the primary key's columns, in key order.
	primaryKey []string
	// uniques are the other unique constraints and indexes over plain
	// columns, without a WHERE (a partial index keys only some rows).
	uniques [][]string
	// references are the foreign keys: the tables (and their columns)
	// this one's rows point at.
	references []foreignKey
}

type columnSchema struct {
	name string
	typ  string // as declared (SQLite) or format_type (PostgreSQL), lower case
	// identity: the database numbers it (SQLite's INTEGER PRIMARY KEY, an
	// alias of the rowid; PostgreSQL's GENERATED … AS IDENTITY or serial).
	identity bool
}

type foreignKey struct {
	table   string
	columns []string // the referenced table's columns
}

func (t tableSchema) column(name string) (columnSchema, bool) {
	for _, c := range t.columns {
		if c.name == name {
			return c, true
		}
	}
	return columnSchema{}, false
}

// quoteIdent quotes a table or column name the same way in both dialects.
func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// schemaTables reads SQLite's catalogue through its table-valued pragmas.
func (sqliteDialect) schemaTables(ctx context.Context, tx *sql.Tx) ([]tableSchema, error) {
	names, err := queryStrings(ctx, tx, `SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	out := make([]tableSchema, 0, len(names))
	for _, name := range names {
		t := tableSchema{name: name}
		var withoutRowid bool
		if err := tx.QueryRowContext(ctx, `SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?`, name).Scan(&withoutRowid); err != nil {
			return nil, err
		}
		rows, err := tx.QueryContext(ctx, `SELECT name, lower(type), pk FROM pragma_table_info(?) ORDER BY cid`, name)
		if err != nil {
			return nil, err
		}
		pk := map[int]string{}
		for rows.Next() {
			var c columnSchema
			var pos int
			if err := rows.Scan(&c.name, &c.typ, &pos); err != nil {
				rows.Close()
				return nil, err
			}
			if pos > 0 {
				pk[pos] = c.name
			}
			t.columns = append(t.columns, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		for i := 1; i <= len(pk); i++ {
			t.primaryKey = append(t.primaryKey, pk[i])
		}
		// A one-column INTEGER PRIMARY KEY of a rowid table is the rowid.
		if len(t.primaryKey) == 1 && !withoutRowid {
			for i := range t.columns {
				if t.columns[i].name == t.primaryKey[0] && t.columns[i].typ == "integer" {
					t.columns[i].identity = true
				}
			}
		}
		idx, err := queryStrings(ctx, tx, `SELECT name FROM pragma_index_list(?) WHERE "unique" = 1 AND origin <> 'pk' AND partial = 0 ORDER BY name`, name)
		if err != nil {
			return nil, err
		}
		for _, ix := range idx {
			cols, err := queryStrings(ctx, tx, `SELECT coalesce(name, '') FROM pragma_index_info(?) ORDER BY seqno`, ix)
			if err != nil {
				return nil, err
			}
			if !containsEmpty(cols) { // an index on an expression keys no column
				t.uniques = append(t.uniques, cols)
			}
		}
		rows, err = tx.QueryContext(ctx, `SELECT id, "table", coalesce("to", '') FROM pragma_foreign_key_list(?) ORDER BY id, seq`, name)
		if err != nil {
			return nil, err
		}
		byID := map[int]int{}
		for rows.Next() {
			var (
				id       int
				ref, col string
			)
			if err := rows.Scan(&id, &ref, &col); err != nil {
				rows.Close()
				return nil, err
			}
			i, ok := byID[id]
			if !ok {
				t.references = append(t.references, foreignKey{table: ref})
				i = len(t.references) - 1
				byID[id] = i
			}
			// An empty column: the key names the referenced table's
			// primary key implicitly.
			t.references[i].columns = append(t.references[i].columns, col)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// schemaTables reads PostgreSQL's catalogue: the tables of the current
// schema (the one relcap's migrations created them in).
func (*postgresDialect) schemaTables(ctx context.Context, tx *sql.Tx) ([]tableSchema, error) {
	type rel struct {
		oid  int64
		name string
	}
	rows, err := tx.QueryContext(ctx, `
SELECT c.oid::bigint, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY c.relname`)
	if err != nil {
		return nil, err
	}
	var rels []rel
	for rows.Next() {
		var r rel
		if err := rows.Scan(&r.oid, &r.name); err != nil {
			rows.Close()
			return nil, err
		}
		rels = append(rels, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]tableSchema, 0, len(rels))
	for _, r := range rels {
		t := tableSchema{name: r.name}
		rows, err := tx.QueryContext(ctx, `
SELECT a.attname, lower(format_type(a.atttypid, a.atttypmod)),
	a.attidentity <> '' OR coalesce(pg_get_expr(d.adbin, d.adrelid), '') LIKE 'nextval(%'
FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = $1::bigint::oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, r.oid)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var c columnSchema
			if err := rows.Scan(&c.name, &c.typ, &c.identity); err != nil {
				rows.Close()
				return nil, err
			}
			t.columns = append(t.columns, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		// Unique indexes over plain columns (an expression's attnum is 0,
		// so it joins no column: those indexes are left out).
		rows, err = tx.QueryContext(ctx, `
SELECT ic.relname, i.indisprimary, a.attname
FROM pg_index i
JOIN pg_class ic ON ic.oid = i.indexrelid
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = $1::bigint::oid AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
ORDER BY ic.relname, k.ord`, r.oid)
		if err != nil {
			return nil, err
		}
		var (
			last    string
			current []string
			primary bool
		)
		flush := func() {
			if current == nil {
				return
			}
			if primary {
				t.primaryKey = current
			} else {
				t.uniques = append(t.uniques, current)
			}
			current = nil
		}
		for rows.Next() {
			var ix, col string
			var isPK bool
			if err := rows.Scan(&ix, &isPK, &col); err != nil {
				rows.Close()
				return nil, err
			}
			if ix != last {
				flush()
				last, primary = ix, isPK
			}
			current = append(current, col)
		}
		flush()
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		rows, err = tx.QueryContext(ctx, `
SELECT c.conname, cf.relname, a.attname
FROM pg_constraint c
JOIN pg_class cf ON cf.oid = c.confrelid
CROSS JOIN LATERAL unnest(c.confkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum
WHERE c.conrelid = $1::bigint::oid AND c.contype = 'f'
ORDER BY c.conname, k.ord`, r.oid)
		if err != nil {
			return nil, err
		}
		last = ""
		for rows.Next() {
			var con, ref, col string
			if err := rows.Scan(&con, &ref, &col); err != nil {
				rows.Close()
				return nil, err
			}
			if con != last {
				t.references = append(t.references, foreignKey{table: ref})
				last = con
			}
			fk := &t.references[len(t.references)-1]
			fk.columns = append(fk.columns, col)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func queryStrings(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func containsEmpty(ss []string) bool {
	for _, s := range ss {
		if s == "" {
			return true
		}
	}
	return false
}
