package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"

	"github.com/relcap/relcap/workflow/oplock"
)

// dialect is what SQLite and PostgreSQL do differently. Everything else in
// this package is shared: the same SQL text, written with ? placeholders
// (rebind turns them into PostgreSQL's $1, $2, …), run through
// database/sql on both; the same schema history (migrations.go, each
// version written in both dialects side by side); the same Go code around
// it. A difference belongs here only when the two databases cannot share
// the text or the behaviour.
type dialect interface {
	// rebind rewrites the ? placeholders of shared SQL for the database.
	rebind(q string) string
	// migrationSQL is migration m written for this database.
	migrationSQL(m migration) string
	// schemaTable creates schema_migrations if it does not exist.
	schemaTable() string
	// schemaTables describes every table of the ledger's schema from the
	// database's catalogue (Migrate's copy).
	schemaTables(ctx context.Context, tx *sql.Tx) ([]tableSchema, error)
	// probeWrite is a write that changes nothing, so a ledger that can
	// only be read fails at open rather than at the first save.
	probeWrite() string
	// serialize makes the transactions that call it with the same key run
	// one after another from this point to their end, for transactions
	// that read and then write what the database's row locks do not
	// cover (a session's head, a scope's open findings, the schema).
	// SQLite takes its one write lock at BEGIN, so every write
	// transaction is serialized already.
	serialize(ctx context.Context, tx *sql.Tx, key string) error
	// notify tells every change feed on the ledger that topic changed,
	// when tx commits. SQLite's feeds notice every commit by themselves.
	notify(ctx context.Context, tx *sql.Tx, topic string) error
	// retryable reports whether a transaction that failed with err can be
	// run again as it is: PostgreSQL aborts one of two transactions that
	// deadlock, and the other then goes through.
	retryable(err error) bool
	// clockNanos is the SQL expression of the database's own clock, in
	// Unix nanoseconds: the time the ledger received a row, which the
	// writer's clock cannot back-date (on PostgreSQL, the server's).
	clockNanos() string
	// greatest and least name the functions of the larger and the smaller
	// of two values (SQLite's two-argument max and min).
	greatest() string
	least() string
	// snapshots begins n read-only transactions on n connections that all
	// see the same committed state of the ledger.
	snapshots(ctx context.Context, db *sql.DB, n int) ([]*sql.Tx, error)
	// tryLock is workflow.OperationLocks' TryLock (oplocks.go).
	tryLock(ctx context.Context, l *Ledger, scope oplock.Scope, holder oplock.Holder) (func(), error)
	// changes is workflow.ChangeFeed's Changes.
	changes(ctx context.Context, l *Ledger) <-chan struct{}
	// openError explains a failure to open or first use the ledger at
	// location loc; fail wraps the failure of operation op.
	openError(loc string, err error) error
	fail(loc, op string, err error) error
}

// dollarRebinder rewrites ? placeholders as $1, $2, … (PostgreSQL), leaving
// question marks inside quoted strings, quoted identifiers and comments
// alone. Results are cached: the ledger runs a few dozen distinct
// statements.
type dollarRebinder struct{ cache sync.Map }

func (r *dollarRebinder) rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	if v, ok := r.cache.Load(q); ok {
		return v.(string)
	}
	out := rebindDollar(q)
	r.cache.Store(q, out)
	return out
}

func rebindDollar(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) && q[j] != c {
				j++
			}
			b.WriteString(q[i:min(j+1, len(q))])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j - 1
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
