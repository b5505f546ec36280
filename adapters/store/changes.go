package store

import (
	"context"
	"time"

	"github.com/relcap/relcap/workflow"
)

var _ workflow.ChangeFeed = (*Ledger)(nil)

// Changes signals (at most one pending signal) each time the ledger
// changes, from this process or another, until ctx ends; the channel then
// closes. SQLite notices every commit of another connection (polling PRAGMA
// data_version); PostgreSQL is told of releases, plans, approvals and
// convergences by a NOTIFY in the writing transaction, on a connection
// held to LISTEN.
func (s *Ledger) Changes(ctx context.Context) <-chan struct{} { return s.d.changes(ctx, s) }

// changePoll is how often an SQLite ledger's Changes asks whether another
// connection committed: a cheap read of one counter, so an approval given
// in another process shows in the open cockpit within a fraction of a
// second.
const changePoll = 200 * time.Millisecond

// changes tells through PRAGMA data_version, which changes for a
// connection when someone else's transaction committed; one connection is
// held for it.
func (sqliteDialect) changes(ctx context.Context, s *Ledger) <-chan struct{} {
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return // the ledger is closing; nobody waits for changes then
		}
		defer conn.Close()
		var last int64
		if err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&last); err != nil {
			return
		}
		tick := time.NewTicker(changePoll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var v int64
			if err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
				return
			}
			if v == last {
				continue
			}
			last = v
			signal(ch)
		}
	}()
	return ch
}

// signal sends on ch unless a signal is already pending: one says enough.
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
