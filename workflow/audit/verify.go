package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// VerifySessions is VerifyJournals' sessions.
func (q *Auditor) VerifySessions(ctx context.Context, ids []string) ([]SessionVerification, error) {
	v, err := q.VerifyJournals(ctx, ids)
	return v.Sessions, err
}

// VerifyJournals checks the sessions ids (every session the ledger, the
// anchor's history or the sessions directory knows when ids is empty):
// each journal entry's hash and link; the last entry against the head the
// ledger holds; the screen recordings the journal vouches for; the sealed
// head's signature against the people file as it reads now; and the head
// anchored outside the ledger against the ledger and the journal, in the
// anchor's whole history: a head erased from it by a later commit, or a
// session whose recorded anchor commit is no longer in it, fails. A
// session anchored but missing from the ledger (its row deleted), and a
// journal on disk that no ledger row accounts for, are verified too, and
// fail. A tampered session is a result with Intact false, not an error; a
// session neither the ledger, the anchor nor the disk knows is an
// ErrUsage error.
func (q *Auditor) VerifyJournals(ctx context.Context, ids []string) (JournalVerification, error) {
	if q.sessions == nil {
		return JournalVerification{}, workflow.MissingPort("session files")
	}
	rows, err := q.ledger.Sessions(ctx)
	if err != nil {
		return JournalVerification{}, err
	}
	byID := make(map[string]workflow.Session, len(rows))
	for _, s := range rows {
		byID[s.ID] = s
	}
	self, err := q.ledger.LedgerIdentity(ctx)
	if err != nil {
		return JournalVerification{}, fmt.Errorf("read the ledger's identity: %w", err)
	}
	out := JournalVerification{}
	anchored, erased, hist := q.readAnchor(ctx, self, byID, &out)
	if len(ids) == 0 {
		for _, s := range rows {
			ids = append(ids, s.ID)
		}
		var only []string
		for id, a := range anchored {
			switch _, ok := byID[id]; {
			case ok:
			case a.Head.OfAnotherLedger(self):
				out.OtherLedgers++
			default:
				only = append(only, id)
			}
		}
		for id := range erased {
			if _, ok := byID[id]; !ok && !slices.Contains(only, id) {
				if _, inTip := anchored[id]; !inTip {
					only = append(only, id)
				}
			}
		}
		orphans, err := q.orphanJournals(ctx, self, byID, anchored, erased, &out)
		if err != nil {
			return out, err
		}
		only = append(only, orphans...)
		slices.Sort(only)
		ids = mergeByID(ids, only)
	}
	for _, id := range ids {
		row, inLedger := byID[id]
		a, isAnchored := anchored[id]
		e, isErased := erased[id]
		if isErased {
			a, isAnchored = e.Head, true // as first anchored
		}
		if !inLedger && !isAnchored {
			if _, err := q.sessions.JournalLines(ctx, id); err != nil {
				return out, fmt.Errorf("%w: session %s is not in the ledger (see relcap journal list)", fault.ErrUsage, id)
			}
		}
		sv := sessionCheck{q: q, self: self, id: id, inLedger: inLedger, row: row, anchor: out.Anchor, anchorErr: out.AnchorError, history: hist}
		if isAnchored {
			sv.anchored = &a
		}
		if isErased {
			sv.erased = &e
		}
		v, err := sv.verify(ctx)
		if err != nil {
			return out, err
		}
		if out.Unprotected != "" && (isAnchored || (inLedger && sv.seal.Anchor != "")) {
			v.Warnings = append(v.Warnings, out.Unprotected)
		}
		out.Sessions = append(out.Sessions, v)
	}
	return out, nil
}

// mergeByID places each of the sorted IDs extra before the first of ids
// that sorts after it, keeping ids' own order (the ledger's, by start
// time): session IDs begin with their start time, so a session known
// only to the anchor is listed about where it ran.
func mergeByID(ids, extra []string) []string {
	out := make([]string, 0, len(ids)+len(extra))
	for _, id := range ids {
		for len(extra) > 0 && extra[0] < id {
			out = append(out, extra[0])
			extra = extra[1:]
		}
		out = append(out, id)
	}
	return append(out, extra...)
}

// sessionCheck is what one session's verification knows.
type sessionCheck struct {
	q         *Auditor
	self      string // this ledger's identity
	id        string
	inLedger  bool
	row       workflow.Session
	seal      SessionSeal
	anchored  *AnchoredHead // as the tip holds it, or as first anchored when erased
	erased    *ErasedAnchor // erased from the anchor by a later commit
	history   *AnchorHistory
	anchor    string // where anchors are read, "" for none
	anchorErr error

	copy       JournalCopy    // the ledger's copy of the journal
	lines      []journal.Line // the journal verified: the file's, or the copy's
	fromLedger bool           // no file here: lines are the copy's
	noFile     bool
	chainOK    bool
	chainErr   *journal.Problem // where the chain of lines broke
	seq        int64            // the chain's last entry
	lastHash   string           // its hash
}

func (c *sessionCheck) verify(ctx context.Context) (SessionVerification, error) {
	v := SessionVerification{Session: c.id}
	if c.inLedger {
		seal, err := c.q.ledger.SessionSeal(ctx, c.id)
		if err != nil {
			return v, err
		}
		c.seal = seal
		if c.copy, err = c.q.ledger.JournalCopy(ctx, c.id); err != nil {
			return v, err
		}
	}
	if err := c.checkChain(ctx, &v); err != nil {
		return v, err
	}
	c.checkLedgerHead(&v)
	c.checkLedgerCopy(&v)
	c.checkRecordings(ctx, &v)
	if err := c.checkSignature(ctx, &v); err != nil {
		return v, err
	}
	c.checkAnchor(&v)
	if err := c.checkApprovals(ctx, &v); err != nil {
		return v, err
	}

	v.Failed = append(v.Checks.failed(), approvalFailures(v.Approvals)...)
	v.Intact = len(v.Failed) == 0
	if v.Problem == nil && !v.Intact {
		v.Problem = &journal.Problem{Seq: c.headSeq(), Reason: v.Failed[0]}
	}
	if v.Unsigned != "" {
		v.Warnings = append(v.Warnings, "unsigned: "+v.Unsigned)
	}
	if v.Unanchored != "" {
		v.Warnings = append(v.Warnings, "not anchored: "+v.Unanchored)
	}
	for _, n := range []struct {
		name string
		c    VerifyCheck
	}{{"recordings", v.Checks.Recordings}, {"signature", v.Checks.Signature}, {"anchor", v.Checks.Anchor}} {
		if n.c.Status == VerifyUnchecked && (n.name != "recordings" || c.chainOK) {
			v.Warnings = append(v.Warnings, n.name+" not checked: "+n.c.Detail)
		}
	}
	if !c.inLedger && v.Checks.LedgerHead.Status == VerifyUnchecked {
		v.Warnings = append(v.Warnings, "ledger_head not checked: "+v.Checks.LedgerHead.Detail)
	}
	for _, a := range v.Approvals {
		subject := a.Subject // a release ID or an application
		if a.Kind == approval.Plan {
			subject = workflow.ShortHash(subject) // a fingerprint
		}
		what := fmt.Sprintf("%s approval of %s in %s by %s", a.Kind, subject, a.Env, a.Approver)
		switch {
		case a.Signature.Status == VerifyAbsent:
			v.Warnings = append(v.Warnings, "unsigned "+what)
		case a.Signature.Status == VerifyFailed && !a.Binding:
			v.Warnings = append(v.Warnings, what+": its signature no longer verifies: "+a.Signature.Detail)
		case a.Signature.Status == VerifyUnchecked:
			v.Warnings = append(v.Warnings, what+": not checked: "+a.Signature.Detail)
		}
		for _, n := range a.Notes {
			v.Warnings = append(v.Warnings, what+": "+n)
		}
	}
	return v, nil
}

// checkApprovals lists the approvals an intact journal recorded, and
// checks the signed ones against the people file now.
func (c *sessionCheck) checkApprovals(ctx context.Context, v *SessionVerification) error {
	if !c.chainOK {
		return nil
	}
	for _, l := range c.lines {
		var e journal.Entry
		if err := json.Unmarshal(l.Text, &e); err != nil || e.Kind != journal.KindApprovalRecorded {
			continue
		}
		var rec journal.ApprovalRecorded
		if err := json.Unmarshal(e.Data, &rec); err != nil {
			continue // an entry of another shape; the chain vouched for it
		}
		a := rec.Approval
		av := ApprovalVerification{Kind: a.Kind, Env: a.Env, Subject: a.Subject, Approver: a.Approver, Signed: !a.Signature.IsZero()}
		switch {
		case !av.Signed:
			av.Signature = VerifyCheck{Status: VerifyAbsent, Detail: "recorded unsigned, as the environment allowed (approvals.signed: false)"}
		case c.q.verifier == nil:
			av.Signature = VerifyCheck{Status: VerifyUnchecked, Detail: "no people file is configured here to check it against"}
		default:
			if err := checkApprovalSignature(ctx, c.q.verifier, a, &av); err != nil {
				return fmt.Errorf("verify %s's approval in session %s: %w", a.Approver, c.id, err)
			}
		}
		v.Approvals = append(v.Approvals, av)
	}
	return nil
}

// headSeq is the head the session should end at: the ledger's, else the
// anchored one.
func (c *sessionCheck) headSeq() int64 {
	if c.inLedger {
		return c.seal.Head.Seq
	}
	if c.anchored != nil {
		return c.anchored.Head.Seq
	}
	return 0
}

func (c *sessionCheck) checkChain(ctx context.Context, v *SessionVerification) error {
	lines, err := c.q.sessions.JournalLines(ctx, c.id)
	v.Journal = JournalFromFile
	if errors.Is(err, fault.ErrNotFound) && c.copy.Kept {
		// Recorded on another machine (or its file removed here): the
		// ledger's copy is the journal.
		lines, err, c.fromLedger = c.copy.Lines, nil, true
		v.Journal = JournalFromLedger
	}
	switch {
	case errors.Is(err, fault.ErrNotFound) && c.headSeq() == 0:
		c.noFile, c.chainOK = true, true
		c.lastHash = journal.GenesisHash
		v.Journal = ""
		v.Checks.Chain = VerifyCheck{Status: VerifyOK, Detail: "no entries"}
		return nil
	case errors.Is(err, fault.ErrNotFound):
		c.noFile = true
		v.Journal = ""
		reason := fmt.Sprintf("journal file is missing; the ledger's head is entry %d", c.headSeq())
		if !c.inLedger {
			reason = fmt.Sprintf("journal file is missing; the anchored head is entry %d", c.headSeq())
		}
		v.Problem = &journal.Problem{Seq: 1, Reason: reason}
		v.Checks.Chain = VerifyCheck{Status: VerifyFailed, Detail: reason}
		return nil
	case err != nil:
		return err
	}
	c.lines = lines
	seq, last, p := journal.Chain(lines)
	v.Entries, c.seq, c.lastHash = seq, seq, last
	if p != nil {
		if c.fromLedger {
			p.Reason = "in the ledger's copy: " + p.Reason
		}
		v.Problem, c.chainErr = p, p
		v.Checks.Chain = VerifyCheck{Status: VerifyFailed, Detail: p.String()}
		return nil
	}
	c.chainOK = true
	detail := fmt.Sprintf("%d entries", seq)
	if c.fromLedger {
		detail += " in the ledger's copy"
	}
	v.Checks.Chain = VerifyCheck{Status: VerifyOK, Detail: detail}
	return nil
}

func (c *sessionCheck) checkLedgerHead(v *SessionVerification) {
	switch {
	case !c.inLedger && c.anchored == nil:
		v.Checks.LedgerHead = c.orphanLedgerHead()
	case !c.inLedger && c.anchored.Head.OfAnotherLedger(c.self):
		// Its signed head names the ledger that holds it: not this one.
		v.Checks.LedgerHead = VerifyCheck{Status: VerifyUnchecked, Detail: fmt.Sprintf(
			"recorded in ledger %s (its signed head says so), not in this one (%s): verify it with that ledger (--ledger), or copy that ledger in with relcap ledger migrate",
			c.anchored.Head.Ledger, c.self)}
	case !c.inLedger:
		h := c.anchored.Head
		holds := "holds"
		if c.erased != nil {
			holds = "held (until commit " + short(c.erased.By) + ")"
		}
		v.Checks.LedgerHead = VerifyCheck{Status: VerifyFailed, Detail: fmt.Sprintf(
			"the ledger has no session %s, but %s %s its head (entry %d, %s, %s by %s): its ledger row was deleted, unless it was recorded in another ledger whose project anchors in the same environment repository (verify it there, or copy that ledger in with relcap ledger migrate)",
			c.id, c.anchor, holds, h.Seq, workflow.ShortHash(h.Hash), h.Command, h.Actor)}
	case !c.chainOK:
		v.Checks.LedgerHead = VerifyCheck{Status: VerifyUnchecked, Detail: "the journal's chain is broken"}
	case c.noFile:
		v.Checks.LedgerHead = VerifyCheck{Status: VerifyOK, Detail: "no entries"}
	default:
		head := journal.Head{SessionID: c.id, Seq: c.seal.Head.Seq, Hash: c.seal.Head.Hash}
		if p := journal.MatchHead(c.lines, c.seq, c.lastHash, head); p != nil {
			v.Problem = p
			v.Checks.LedgerHead = VerifyCheck{Status: VerifyFailed, Detail: p.String()}
			return
		}
		v.Checks.LedgerHead = VerifyCheck{Status: VerifyOK, Detail: fmt.Sprintf("entry %d", head.Seq)}
	}
}

func (c *sessionCheck) checkRecordings(ctx context.Context, v *SessionVerification) {
	if !c.chainOK {
		v.Checks.Recordings = VerifyCheck{Status: VerifyUnchecked, Detail: "the journal's chain is broken"}
		return
	}
	// The chain is intact, so its entries can vouch for the files beside
	// it: the screen recordings. They stay on the machine that recorded
	// them: read from the ledger's copy, the journal may name recordings
	// that are not here.
	n, elsewhere, p := c.q.verifyRecordings(ctx, c.id, c.lines, c.fromLedger)
	switch {
	case p != nil:
		if v.Problem == nil {
			v.Problem = p
		}
		v.Checks.Recordings = VerifyCheck{Status: VerifyFailed, Detail: p.String()}
	case len(elsewhere) > 0:
		v.Checks.Recordings = VerifyCheck{Status: VerifyUnchecked, Detail: fmt.Sprintf(
			"%s recorded on another machine, not checked here (%d of %d recording(s) checked)", strings.Join(elsewhere, ", "), n-len(elsewhere), n)}
	default:
		v.Checks.Recordings = VerifyCheck{Status: VerifyOK, Detail: fmt.Sprintf("%d recording(s)", n)}
	}
}

// sealed is the sealed head to check the signature of: the ledger's, else
// (its row deleted, or a seal the ledger lost) the anchored one.
func (c *sessionCheck) sealed() (*SealedHead, string) {
	if c.inLedger && c.seal.Sealed() {
		return &c.seal.SealedHead, "ledger"
	}
	if c.anchored != nil {
		return &c.anchored.SealedHead, "anchor"
	}
	return nil, ""
}

// unsealedReason says why a session has no sealed head.
func (c *sessionCheck) unsealedReason() string {
	if !c.inLedger {
		return "the ledger has no row for the session, so no sealed head to check"
	}
	if c.row.EndedAt.IsZero() {
		return "the session is not closed (still running, or its process ended before closing), so its head was never sealed"
	}
	return "the session's head was never sealed (closed by a relcap from before signed heads, or its process ended before sealing)"
}

func (c *sessionCheck) checkSignature(ctx context.Context, v *SessionVerification) error {
	sh, from := c.sealed()
	switch {
	case sh == nil:
		v.Unsigned = c.unsealedReason()
		v.Checks.Signature = VerifyCheck{Status: VerifyAbsent, Detail: v.Unsigned}
		return nil
	case !sh.Signed():
		v.Unsigned = sh.Unsigned
		if v.Unsigned == "" {
			v.Unsigned = "sealed without a signature"
		}
		v.Checks.Signature = VerifyCheck{Status: VerifyAbsent, Detail: v.Unsigned}
		return nil
	case c.q.verifier == nil:
		v.Checks.Signature = VerifyCheck{Status: VerifyUnchecked, Detail: fmt.Sprintf(
			"signed by %s with key %s, but no people file is configured here to check it against: run journal verify with -c naming the relcap.yaml whose people: file lists them", sh.Head.Actor, sh.Signature.Key)}
		return nil
	}
	err := c.q.verifier.Verify(ctx, sh.Head.Actor, approval.NamespaceJournal, sh.Head.Statement(), sh.Signature, sh.Head.At)
	switch {
	case errors.Is(err, fault.ErrUsage):
		return fmt.Errorf("verify the signature of session %s: %w", c.id, err)
	case err != nil:
		v.Checks.Signature = VerifyCheck{Status: VerifyFailed, Detail: fmt.Sprintf("the head in the %s is not %s's: %v", from, sh.Head.Actor, err)}
		return nil
	}
	v.Checks.Signature = VerifyCheck{Status: VerifyOK, Detail: fmt.Sprintf("signed by %s with key %s", sh.Head.Actor, sh.Signature.Key)}
	return nil
}

// verifyRecordings checks the recordings an intact journal vouches for
// and returns how many there were. When elsewhere allows it (the journal
// was read from the ledger, its session recorded on another machine), a
// recording that cannot be read here is not a failure: it is returned in
// unread.
func (q *Auditor) verifyRecordings(ctx context.Context, id string, lines []journal.Line, elsewhere bool) (n int, unread []string, p *journal.Problem) {
	for _, l := range lines {
		var e journal.Entry
		if err := json.Unmarshal(l.Text, &e); err != nil || e.Kind != journal.KindScreenRecorded {
			continue // the chain already vouched for every line
		}
		n++
		var rec journal.ScreenRecorded
		if err := json.Unmarshal(e.Data, &rec); err != nil {
			return n, unread, &journal.Problem{Seq: e.Seq, Reason: "screen.recorded entry unreadable: " + err.Error()}
		}
		sum, err := q.sessions.RecordingSHA256(ctx, id, rec.File)
		if err != nil && elsewhere {
			unread = append(unread, rec.File)
			continue
		}
		if err != nil {
			return n, unread, &journal.Problem{Seq: e.Seq, Reason: fmt.Sprintf("recording %s is missing: %v", rec.File, err)}
		}
		if sum != rec.SHA256 {
			return n, unread, &journal.Problem{Seq: e.Seq, Reason: fmt.Sprintf("recording %s differs from the SHA-256 journaled in entry %d: it was edited or truncated", rec.File, e.Seq)}
		}
	}
	return n, unread, nil
}
