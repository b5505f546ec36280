package store

import (
	"context"
	"time"

	"github.com/relcap/relcap/workflow"
)

var _ workflow.ChangeFeed = (*SQLite)(nil)

// changePoll is how often Changes asks SQLite whether another connection
// committed: a cheap read of one counter, so an approval given in another
// process shows in the open cockpit within a fraction of a second.
const changePoll = 200 * time.Millisecond

// Changes signals (at most one pending signal) each time another
// connection, in this process or another, commits to the ledger, until ctx
// ends. SQLite tells through PRAGMA data_version, which changes for a
// connection when someone else's transaction committed; one connection is
// held for it.
func (s *SQLite) Changes(ctx context.Context) <-chan struct{} {
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
			select {
			case ch <- struct{}{}:
			default: // one pending signal says enough
			}
		}
	}()
	return ch
}
