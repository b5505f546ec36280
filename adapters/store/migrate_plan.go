package store

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
)

// How Migrate plans each table: the order (parents first), the natural key
// rows are matched on, and the columns' types in the target.

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
