package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/relcap/relcap/workflow/effort"
)

// The effort a report reads: the summed effort_totals of the selected
// releases (migration 2), decoded without per-pair allocation, and the
// reasons unmeasured work was not measured (migration 15).

// effortKey is one numbered (person, role, step, kind) of effort_keys;
// skip marks keys of other people in the per-person view.
type effortKey struct {
	person string
	role   effort.Role
	step   string
	kind   effort.Kind
	skip   bool
}

// readEffortKeys reads the effort key numbers, indexed by number. Only
// person's keys are kept when person is set.
func readEffortKeys(ctx context.Context, tx querier, person string) ([]effortKey, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, person, role, step, kind FROM effort_keys`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []effortKey
	for rows.Next() {
		var (
			id   int
			k    effortKey
			kind string
		)
		if err := rows.Scan(&id, &k.person, &k.role, &k.step, &kind); err != nil {
			return nil, err
		}
		if id < 0 || id > 1<<24 {
			return nil, fmt.Errorf("effort key number %d is out of range", id)
		}
		k.kind, k.skip = effort.Kind(kind), person != "" && k.person != person
		if id >= len(out) {
			out = append(out, make([]effortKey, id+1-len(out))...)
		}
		out[id] = k
	}
	return out, rows.Err()
}

// readEffortSums reads the effort of the releases cond selects: one entry
// per release, person, role, step and kind, summed (At is not kept in the
// sums, and reports do not read it), with why work was not measured.
// It runs beside readReleaseFacts, on a connection of its own.
func readEffortSums(ctx context.Context, tx ledgerTx, cond string, args []any, keys []effortKey) ([]effort.Entry, error) {
	rows, err := tx.QueryContext(ctx, effortSumsSQL(cond), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		ids   []string
		sums  sql.RawBytes
		pairs []int64 // effort key, nanoseconds, ...; ~8 keys a release
		ends  []int   // by release: end of its pairs
	)
	for rows.Next() {
		var id string
		if err := rows.Scan(&id, &sums); err != nil {
			return nil, err
		}
		if pairs, err = appendSums(pairs, sums, keys); err != nil {
			return nil, fmt.Errorf("release %s: stored effort sums are unreadable: %w", id, err)
		}
		ids, ends = append(ids, id), append(ends, len(pairs))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Entries are made once their number is known: on a big ledger they
	// are most of what a report allocates.
	entries := make([]effort.Entry, len(pairs)/2)
	start := 0
	for i, end := range ends {
		for j := start; j < end; j += 2 {
			k := &keys[pairs[j]]
			entries[j/2] = effort.Entry{ReleaseID: ids[i], Person: k.person, Role: k.role, Step: k.step,
				Kind: k.kind, Duration: time.Duration(pairs[j+1])}
		}
		start = end
	}
	if err := readUnmeasuredNotes(ctx, tx, entries); err != nil {
		return nil, err
	}
	return entries, nil
}

// effortSumsSQL reads the effort sums of the releases cond selects.
func effortSumsSQL(cond string) string {
	return `SELECT r.id, t.sums FROM releases r JOIN effort_totals t ON t.release_id = r.id` + cond
}

// appendSums appends the (key, nanoseconds) pairs of one release's
// effort_totals.sums to pairs, leaving out skipped keys. sums is a JSON
// object from key number to nanoseconds as SQLite writes it,
// {"1":900000000000,"4":60000000000}, or PostgreSQL's jsonb does, with a
// space after each colon and comma, read without allocating; any other
// shape is read by encoding/json.
func appendSums(pairs []int64, sums []byte, keys []effortKey) ([]int64, error) {
	start := len(pairs)
	more, ok := parseSums(pairs, sums)
	if !ok {
		var m map[string]int64
		if err := json.Unmarshal(sums, &m); err != nil {
			return pairs[:start], err
		}
		more = pairs
		for k, ns := range m {
			id, err := strconv.ParseInt(k, 10, 64)
			if err != nil {
				return pairs[:start], fmt.Errorf("effort key %q is not a number", k)
			}
			more = append(more, id, ns)
		}
	}
	kept := more[:start]
	for i := start; i < len(more); i += 2 {
		id := more[i]
		if id < 0 || id >= int64(len(keys)) || keys[id].kind == "" {
			return pairs[:start], fmt.Errorf("unknown effort key %d", id)
		}
		if !keys[id].skip {
			kept = append(kept, id, more[i+1])
		}
	}
	return kept, nil
}

// parseSums appends {"1":2,"3":4} (or {"1": 2, "3": 4}) to pairs as 1,
// 2, 3, 4; ok is false for any other shape (other spaces, signs,
// fractions, very big numbers).
func parseSums(pairs []int64, b []byte) ([]int64, bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, false
	}
	b = b[1 : len(b)-1]
	num := func() (int64, bool) {
		var n int64
		i := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if i >= 18 {
				return 0, false
			}
			n = n*10 + int64(b[i]-'0')
		}
		if i == 0 {
			return 0, false
		}
		b = b[i:]
		return n, true
	}
	for len(b) > 0 {
		if b[0] != '"' {
			return nil, false
		}
		b = b[1:]
		k, ok := num()
		if !ok || len(b) < 2 || b[0] != '"' || b[1] != ':' {
			return nil, false
		}
		b = b[2:]
		if len(b) > 0 && b[0] == ' ' {
			b = b[1:]
		}
		v, ok := num()
		if !ok {
			return nil, false
		}
		pairs = append(pairs, k, v)
		if len(b) > 0 {
			if b[0] != ',' {
				return nil, false
			}
			b = b[1:]
			if len(b) > 0 && b[0] == ' ' {
				b = b[1:]
			}
			if len(b) == 0 {
				return nil, false
			}
		}
	}
	return pairs, true
}

// readUnmeasuredNotes fills in why each unmeasured entry's work was not
// measured: effort_totals keeps the sums, not the notes, so the notes
// come from the effort_unmeasured index (migration 15), read only when
// the selection has unmeasured work. Of several notes of one person on
// one step of a release, the first recorded is the reason.
func readUnmeasuredNotes(ctx context.Context, tx querier, entries []effort.Entry) error {
	type workKey struct{ release, person, step string }
	missing := map[workKey]*effort.Entry{}
	for i := range entries {
		if e := &entries[i]; e.Kind == effort.Unmeasured {
			missing[workKey{e.ReleaseID, e.Person, e.Step}] = e
		}
	}
	if len(missing) == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT release_id, person, step, note FROM effort
WHERE kind = 'unmeasured' ORDER BY release_id, person, step, at`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k workKey
		var note string
		if err := rows.Scan(&k.release, &k.person, &k.step, &note); err != nil {
			return err
		}
		if e, ok := missing[k]; ok && e.Note == "" {
			e.Note = note
		}
	}
	return rows.Err()
}
