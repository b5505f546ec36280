package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/relcap/relcap/workflow/journal"
)

// SessionVerification is one session's journal checked against its chain,
// the ledger's head and the recordings it vouches for.
type SessionVerification struct {
	Session string           `json:"session"`
	Entries int64            `json:"entries"`
	Intact  bool             `json:"intact"`
	Problem *journal.Problem `json:"problem,omitempty"`
}

// VerifySessions checks the journals of the sessions ids (every session
// when ids is empty): each entry's hash and link, the last entry against
// the head the ledger holds, and then, the chain being intact, that every
// screen recording the journal vouches for still has its journaled SHA-256.
// A tampered session is a result with Intact false, not an error; an
// unknown session is an ErrUsage error.
func (q *Records) VerifySessions(ctx context.Context, ids []string) ([]SessionVerification, error) {
	if q.sessions == nil {
		return nil, missingPort("session files")
	}
	if len(ids) == 0 {
		all, err := q.ledger.Sessions(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range all {
			ids = append(ids, s.ID)
		}
	}
	out := make([]SessionVerification, 0, len(ids))
	for _, id := range ids {
		v, err := q.verifySession(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (q *Records) verifySession(ctx context.Context, id string) (SessionVerification, error) {
	head, err := q.ledger.JournalHead(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return SessionVerification{}, fmt.Errorf("%w: session %s is not in the ledger (see relcap journal list)", ErrUsage, id)
	}
	if err != nil {
		return SessionVerification{}, err
	}
	v := SessionVerification{Session: id}
	lines, err := q.sessions.JournalLines(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound) && head.Seq == 0:
		v.Intact = true
		return v, nil
	case errors.Is(err, ErrNotFound):
		v.Problem = &journal.Problem{Seq: 1, Reason: fmt.Sprintf("journal file is missing; the ledger's head is entry %d", head.Seq)}
		return v, nil
	case err != nil:
		return SessionVerification{}, err
	}
	v.Entries, v.Problem = journal.Verify(lines, head)
	if v.Problem == nil {
		// The chain is intact, so its entries can vouch for the files
		// beside it: the screen recordings.
		v.Problem = q.verifyRecordings(ctx, id, lines)
	}
	v.Intact = v.Problem == nil
	return v, nil
}

// verifyRecordings checks the recordings an intact journal vouches for.
func (q *Records) verifyRecordings(ctx context.Context, id string, lines []journal.Line) *journal.Problem {
	for _, l := range lines {
		var e journal.Entry
		if err := json.Unmarshal(l.Text, &e); err != nil || e.Kind != KindScreenRecorded {
			continue // the chain already vouched for every line
		}
		var rec ScreenRecorded
		if err := json.Unmarshal(e.Data, &rec); err != nil {
			return &journal.Problem{Seq: e.Seq, Reason: "screen.recorded entry unreadable: " + err.Error()}
		}
		sum, err := q.sessions.RecordingSHA256(ctx, id, rec.File)
		if err != nil {
			return &journal.Problem{Seq: e.Seq, Reason: fmt.Sprintf("recording %s is missing: %v", rec.File, err)}
		}
		if sum != rec.SHA256 {
			return &journal.Problem{Seq: e.Seq, Reason: fmt.Sprintf("recording %s differs from the SHA-256 journaled in entry %d: it was edited or truncated", rec.File, e.Seq)}
		}
	}
	return nil
}
