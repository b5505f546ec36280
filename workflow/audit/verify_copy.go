package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// checkLedgerCopy compares the journal file with the ledger's copy, line
// for line: any difference is tampering with one or the other.
func (c *sessionCheck) checkLedgerCopy(v *SessionVerification) {
	switch {
	case !c.inLedger:
		v.Checks.LedgerCopy = VerifyCheck{Status: VerifyUnchecked, Detail: "the ledger has no row for the session"}
	case !c.copy.Kept:
		v.Checks.LedgerCopy = VerifyCheck{Status: VerifyAbsent, Detail: "recorded before the ledger kept journal entries: verified from its file alone"}
	case c.fromLedger:
		v.Checks.LedgerCopy = VerifyCheck{Status: VerifyOK, Detail: fmt.Sprintf(
			"the journal file is not on this machine (recorded on another): verified from the ledger's copy, %d entries", len(c.copy.Lines))}
	default:
		if p := c.copyDiffers(); p != nil {
			if v.Problem == nil {
				v.Problem = p
			}
			v.Checks.LedgerCopy = VerifyCheck{Status: VerifyFailed, Detail: p.String()}
			return
		}
		v.Checks.LedgerCopy = VerifyCheck{Status: VerifyOK, Detail: fmt.Sprintf("the ledger's copy agrees with the file, line for line (%d entries)", len(c.lines))}
	}
}

// copyDiffers is the first line where the journal file and the ledger's
// copy differ, saying which of them is not a sealed chain there, or nil.
func (c *sessionCheck) copyDiffers() *journal.Problem {
	held := make(map[int][]byte, len(c.copy.Lines))
	last := 0
	for _, l := range c.copy.Lines {
		held[l.Number] = l.Text
		last = max(last, l.Number)
	}
	_, _, copyErr := journal.Chain(c.copy.Lines)
	if copyErr == nil {
		copyErr = journal.MatchHead(c.copy.Lines, int64(len(c.copy.Lines)), lastHashOf(c.copy.Lines), c.copy.Head)
	}
	for n := 1; n <= max(len(c.lines), last); n++ {
		text, ok := held[n]
		seq := int64(n)
		switch {
		case n > len(c.lines):
			return &journal.Problem{Seq: seq, Reason: fmt.Sprintf("the ledger's copy holds entry %d, but the journal file ends at line %d: the file was truncated", n, len(c.lines))}
		case !ok:
			return &journal.Problem{Line: c.lines[n-1].Number, Seq: seq, Reason: fmt.Sprintf("not in the ledger's copy, which has no entry %d", n)}
		case !bytes.Equal(c.lines[n-1].Text, text):
			who := "one of them was rewritten"
			switch {
			case copyErr != nil && copyErr.Seq == seq:
				who = "the ledger's copy was edited"
			case c.chainErr != nil && c.chainErr.Seq == seq:
				who = "the journal file was edited"
			}
			return &journal.Problem{Line: c.lines[n-1].Number, Seq: seq, Reason: fmt.Sprintf("differs from the ledger's copy of entry %d: %s", n, who)}
		}
	}
	return nil
}

// lastHashOf is the hash of the last entry of lines, GenesisHash for none
// or one that is not an entry.
func lastHashOf(lines []journal.Line) string {
	var e journal.Entry
	if len(lines) == 0 || json.Unmarshal(lines[len(lines)-1].Text, &e) != nil {
		return journal.GenesisHash
	}
	return e.Hash
}

// JournalEntries reads session id's journal for display: its file when it
// is on this machine, else the ledger's copy (the session was recorded on
// another machine), and says which. It checks no hash (VerifyJournals
// does). On a line that is not an entry it returns the entries before it
// and an error naming the line. A session with neither file nor copy is
// an error wrapping ErrNotFound.
func (q *Auditor) JournalEntries(ctx context.Context, id string) ([]journal.Entry, JournalSource, error) {
	if q.sessions == nil {
		return nil, "", workflow.MissingPort("session files")
	}
	from := JournalFromFile
	lines, err := q.sessions.JournalLines(ctx, id)
	if errors.Is(err, fault.ErrNotFound) {
		cp, cerr := q.ledger.JournalCopy(ctx, id)
		switch {
		case errors.Is(cerr, fault.ErrNotFound):
			return nil, "", err
		case cerr != nil:
			return nil, "", cerr
		case !cp.Kept:
			return nil, "", fmt.Errorf("%w (session %s was recorded before the ledger kept journal entries, so its file is the only copy)", err, id)
		}
		lines, err, from = cp.Lines, nil, JournalFromLedger
	}
	if err != nil {
		return nil, "", err
	}
	entries := make([]journal.Entry, 0, len(lines))
	for _, l := range lines {
		var e journal.Entry
		if err := json.Unmarshal(l.Text, &e); err != nil {
			where := "line"
			if from == JournalFromLedger {
				where = "the ledger's copy, entry"
			}
			return entries, from, fmt.Errorf("journal of session %s, %s %d, is not a journal entry: %w", id, where, l.Number, err)
		}
		entries = append(entries, e)
	}
	return entries, from, nil
}
