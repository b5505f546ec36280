package audit

import (
	"context"
	"reflect"
)

// MovedSession is one session's journal verified against the ledger it
// was moved from and against the one it was moved to.
type MovedSession struct {
	Session string              `json:"session"`
	Before  SessionVerification `json:"before"`
	After   SessionVerification `json:"after"`
	// Same: both verifications found the same (intact, or the same
	// problems): the move changed nothing a verification sees.
	Same bool `json:"same"`
}

// VerifyMoved verifies the sessions ids as `relcap journal verify` does,
// once with before's records and once with after's, and says per session
// whether both found the same. A ledger migration (relcap ledger migrate)
// copies the sessions' heads and seals, so a session whose journal
// verified against the old ledger verifies against the new one, and one
// that did not fails there alike. Both Records should read the journals
// from the same session files.
func VerifyMoved(ctx context.Context, before, after *Auditor, ids []string) ([]MovedSession, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	b, err := before.VerifyJournals(ctx, ids)
	if err != nil {
		return nil, err
	}
	a, err := after.VerifyJournals(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]SessionVerification, len(a.Sessions))
	for _, v := range a.Sessions {
		byID[v.Session] = v
	}
	out := make([]MovedSession, 0, len(b.Sessions))
	for _, v := range b.Sessions {
		w, ok := byID[v.Session]
		out = append(out, MovedSession{Session: v.Session, Before: v, After: w, Same: ok && reflect.DeepEqual(v, w)})
	}
	return out, nil
}
