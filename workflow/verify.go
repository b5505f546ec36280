package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/journal"
)

// VerifyStatus is the outcome of one check of a session's record.
type VerifyStatus string

// Verification outcomes. Only VerifyFailed is tampering; the others are
// said as warnings.
const (
	VerifyOK     VerifyStatus = "ok"
	VerifyFailed VerifyStatus = "failed"
	// VerifyAbsent: there is nothing to check: the head is unsigned or
	// unanchored (sessions from before signed heads, projects without a
	// people file or environment repository), with why.
	VerifyAbsent VerifyStatus = "absent"
	// VerifyUnchecked: it could not be checked in this verification: no
	// people file or anchor is configured here, the anchor could not be
	// read, or an earlier check failed first.
	VerifyUnchecked VerifyStatus = "unchecked"
)

// VerifyCheck is one check's outcome and what it found.
type VerifyCheck struct {
	Status VerifyStatus `json:"status"`
	Detail string       `json:"detail,omitempty"`
}

// SessionChecks are the separate checks of one session.
type SessionChecks struct {
	// Chain: every entry of the journal file hashes the one before.
	Chain VerifyCheck `json:"chain"`
	// LedgerHead: the session's row in the ledger exists and its head is
	// the chain's last entry.
	LedgerHead VerifyCheck `json:"ledger_head"`
	// LedgerCopy: the ledger's copy of the journal agrees with the file
	// line for line; or, the file not being on this machine, the journal
	// was read from the copy. Absent for sessions from before the ledger
	// kept journal entries.
	LedgerCopy VerifyCheck `json:"ledger_copy"`
	// Recordings: the screen recordings the journal vouches for are
	// unchanged.
	Recordings VerifyCheck `json:"recordings"`
	// Signature: the sealed head is signed by its actor with a key the
	// people file gives them, as the file reads now.
	Signature VerifyCheck `json:"signature"`
	// Anchor: the head anchored outside the ledger is the ledger's and
	// the journal's.
	Anchor VerifyCheck `json:"anchor"`
}

// failed lists the checks that failed as "name: detail", in a fixed
// order.
func (c SessionChecks) failed() []string {
	var out []string
	for _, n := range []struct {
		name string
		c    VerifyCheck
	}{{"chain", c.Chain}, {"ledger_head", c.LedgerHead}, {"ledger_copy", c.LedgerCopy}, {"recordings", c.Recordings}, {"signature", c.Signature}, {"anchor", c.Anchor}} {
		if n.c.Status == VerifyFailed {
			out = append(out, n.name+": "+n.c.Detail)
		}
	}
	return out
}

// SessionVerification is one session's record checked: its journal's
// chain, the ledger's head, the recordings, the head's signature and its
// anchor.
type SessionVerification struct {
	Session string `json:"session"`
	Entries int64  `json:"entries"`
	// Journal is where the journal was read: its file, or the ledger's
	// copy when the file is not on this machine; "" when there is neither.
	Journal JournalSource `json:"journal,omitempty"`
	// Intact is true when no check failed (unsigned, unanchored or
	// unchecked heads are warnings, not failures).
	Intact bool `json:"intact"`
	// Problem is the first problem: the first bad entry, or the first
	// failed check.
	Problem *journal.Problem `json:"problem,omitempty"`
	Checks  SessionChecks    `json:"checks"`
	// Failed lists the failed checks as "check: detail".
	Failed []string `json:"failed,omitempty"`
	// Unsigned and Unanchored say why the head carries no signature or
	// was not anchored; Warnings lists those and whatever was unchecked.
	Unsigned   string   `json:"unsigned,omitempty"`
	Unanchored string   `json:"unanchored,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	// Approvals are the approvals the session's journal recorded, signed
	// or not (where the environment allowed unsigned ones).
	Approvals []ApprovalVerification `json:"approvals,omitempty"`
}

// JournalSource is where a session's journal was read.
type JournalSource string

// Where a journal is read from.
const (
	// JournalFromFile: the journal file on this machine (the ledger's copy,
	// where it keeps one, compared with it).
	JournalFromFile JournalSource = "file"
	// JournalFromLedger: the ledger's copy, the file not being on this
	// machine: the session was recorded on another one.
	JournalFromLedger JournalSource = "ledger"
)

// ApprovalVerification is one approval a session's journal recorded:
// whether it was signed and, if so, whether its signature still verifies
// against the people file as it reads now (a key removed since withdraws
// it). Neither is tampering, the chain vouching for the entry: both are
// said as warnings.
type ApprovalVerification struct {
	Kind      ApprovalKind `json:"kind"`
	Env       string       `json:"env"`
	Subject   string       `json:"subject"`
	Approver  string       `json:"approver"`
	Signed    bool         `json:"signed"`
	Signature VerifyCheck  `json:"signature"`
	// People is the people file revision the approval was verified
	// against when recorded, "" when it was not recorded (older relcap).
	// A signature that does not hold against its recorded revision is a
	// failed check, not a warning: see checkApprovalSignature.
	People string `json:"people,omitempty"`
	// Binding says the signature was checked against the recorded
	// revision, so a failure means the record is not what was verified.
	Binding bool `json:"binding,omitempty"`
	// Notes are what the reader must know of how it was checked.
	Notes []string `json:"notes,omitempty"`
}

// JournalVerification is every verified session, and why the anchors
// could not be read, if they could not.
type JournalVerification struct {
	Sessions []SessionVerification
	// Anchor names where the anchors were read, "" when none is
	// configured.
	Anchor string
	// OtherLedgers counts the sessions the anchor holds whose signed head
	// names another ledger (projects sharing the environment repository,
	// or a captain's own ledger beside the team's): they are not this
	// ledger's to verify, and are left out unless asked for by ID.
	OtherLedgers int
	// AnchorError is why the anchors could not be read; every session's
	// anchor check is then unchecked (or failed, for an anchor that was
	// rewritten).
	AnchorError error
}

// VerifySessions is VerifyJournals' sessions.
func (q *Records) VerifySessions(ctx context.Context, ids []string) ([]SessionVerification, error) {
	v, err := q.VerifyJournals(ctx, ids)
	return v.Sessions, err
}

// VerifyJournals checks the sessions ids (every session the ledger or the
// anchor knows when ids is empty): each journal entry's hash and link; the
// last entry against the head the ledger holds; the screen recordings the
// journal vouches for; the sealed head's signature against the people file
// as it reads now; and the head anchored outside the ledger against the
// ledger and the journal. A session anchored but missing from the ledger
// (its row deleted) is verified too, and fails. A tampered session is a
// result with Intact false, not an error; a session neither the ledger
// nor the anchor knows is an ErrUsage error.
func (q *Records) VerifyJournals(ctx context.Context, ids []string) (JournalVerification, error) {
	if q.sessions == nil {
		return JournalVerification{}, missingPort("session files")
	}
	rows, err := q.ledger.Sessions(ctx)
	if err != nil {
		return JournalVerification{}, err
	}
	byID := make(map[string]Session, len(rows))
	for _, s := range rows {
		byID[s.ID] = s
	}
	self, err := q.ledger.LedgerIdentity(ctx)
	if err != nil {
		return JournalVerification{}, fmt.Errorf("read the ledger's identity: %w", err)
	}
	out := JournalVerification{}
	anchored := map[string]AnchoredHead{}
	if q.anchor != nil {
		out.Anchor = q.anchor.Where()
		heads, err := q.anchor.Anchors(ctx)
		if err != nil {
			out.AnchorError = err
		}
		for _, h := range heads {
			anchored[h.Head.Session] = h
		}
	}
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
		slices.Sort(only)
		ids = mergeByID(ids, only)
	}
	for _, id := range ids {
		row, inLedger := byID[id]
		a, isAnchored := anchored[id]
		if !inLedger && !isAnchored {
			return out, fmt.Errorf("%w: session %s is not in the ledger (see relcap journal list)", ErrUsage, id)
		}
		sv := sessionCheck{q: q, self: self, id: id, inLedger: inLedger, row: row, anchor: out.Anchor, anchorErr: out.AnchorError}
		if isAnchored {
			sv.anchored = &a
		}
		v, err := sv.verify(ctx)
		if err != nil {
			return out, err
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
	q         *Records
	self      string // this ledger's identity
	id        string
	inLedger  bool
	row       Session
	seal      SessionSeal
	anchored  *AnchoredHead
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
		if a.Kind == ApprovePlan {
			subject = ShortHash(subject) // a fingerprint
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
		if err := json.Unmarshal(l.Text, &e); err != nil || e.Kind != KindApprovalRecorded {
			continue
		}
		var rec ApprovalRecorded
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
	if errors.Is(err, ErrNotFound) && c.copy.Kept {
		// Recorded on another machine (or its file removed here): the
		// ledger's copy is the journal.
		lines, err, c.fromLedger = c.copy.Lines, nil, true
		v.Journal = JournalFromLedger
	}
	switch {
	case errors.Is(err, ErrNotFound) && c.headSeq() == 0:
		c.noFile, c.chainOK = true, true
		c.lastHash = journal.GenesisHash
		v.Journal = ""
		v.Checks.Chain = VerifyCheck{Status: VerifyOK, Detail: "no entries"}
		return nil
	case errors.Is(err, ErrNotFound):
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

func (c *sessionCheck) checkLedgerHead(v *SessionVerification) {
	switch {
	case !c.inLedger && c.anchored.Head.OfAnotherLedger(c.self):
		// Its signed head names the ledger that holds it: not this one.
		v.Checks.LedgerHead = VerifyCheck{Status: VerifyUnchecked, Detail: fmt.Sprintf(
			"recorded in ledger %s (its signed head says so), not in this one (%s): verify it with that ledger (--ledger), or copy that ledger in with relcap ledger migrate",
			c.anchored.Head.Ledger, c.self)}
	case !c.inLedger:
		h := c.anchored.Head
		v.Checks.LedgerHead = VerifyCheck{Status: VerifyFailed, Detail: fmt.Sprintf(
			"the ledger has no session %s, but %s holds its head (entry %d, %s, %s by %s): its ledger row was deleted, unless it was recorded in another ledger whose project anchors in the same environment repository (verify it there, or copy that ledger in with relcap ledger migrate)",
			c.id, c.anchor, h.Seq, ShortHash(h.Hash), h.Command, h.Actor)}
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
	err := c.q.verifier.Verify(ctx, sh.Head.Actor, NamespaceJournal, sh.Head.Statement(), sh.Signature, sh.Head.At)
	switch {
	case errors.Is(err, ErrUsage):
		return fmt.Errorf("verify the signature of session %s: %w", c.id, err)
	case err != nil:
		v.Checks.Signature = VerifyCheck{Status: VerifyFailed, Detail: fmt.Sprintf("the head in the %s is not %s's: %v", from, sh.Head.Actor, err)}
		return nil
	}
	v.Checks.Signature = VerifyCheck{Status: VerifyOK, Detail: fmt.Sprintf("signed by %s with key %s", sh.Head.Actor, sh.Signature.Key)}
	return nil
}

func (c *sessionCheck) checkAnchor(v *SessionVerification) {
	a := c.anchored
	switch {
	case a != nil:
		if why := c.anchorDisagrees(*a); why != "" {
			v.Checks.Anchor = VerifyCheck{Status: VerifyFailed, Detail: why}
			return
		}
		v.Checks.Anchor = VerifyCheck{Status: VerifyOK, Detail: fmt.Sprintf("entry %d anchored in %s", a.Head.Seq, c.anchor)}
	case c.inLedger && c.seal.Anchor != "":
		// The ledger says it was anchored, and the anchor holds nothing.
		switch {
		case c.anchor == "":
			v.Checks.Anchor = VerifyCheck{Status: VerifyUnchecked, Detail: fmt.Sprintf(
				"anchored in %s, but no environment repository is configured here to read it: run journal verify with -c naming relcap.yaml", c.seal.Anchor)}
		case errors.Is(c.anchorErr, ErrTampered):
			v.Checks.Anchor = VerifyCheck{Status: VerifyFailed, Detail: c.anchorErr.Error()}
		case c.anchorErr != nil:
			v.Checks.Anchor = VerifyCheck{Status: VerifyUnchecked, Detail: fmt.Sprintf("anchored in %s, which could not be read: %v", c.seal.Anchor, c.anchorErr)}
		default:
			v.Checks.Anchor = VerifyCheck{Status: VerifyFailed, Detail: fmt.Sprintf(
				"the ledger says its head was anchored (%s), but %s holds no head for it: the anchor was rewritten", c.seal.Anchor, c.anchor)}
		}
	case c.inLedger && c.seal.Sealed():
		v.Unanchored = c.seal.Unanchored
		if v.Unanchored == "" {
			v.Unanchored = "sealed without an anchor"
		}
		v.Checks.Anchor = VerifyCheck{Status: VerifyAbsent, Detail: v.Unanchored}
	default:
		v.Unanchored = c.unsealedReason()
		v.Checks.Anchor = VerifyCheck{Status: VerifyAbsent, Detail: v.Unanchored}
	}
}

// anchorDisagrees says how the anchored head a differs from the journal
// and the ledger, or "" when it agrees with both.
func (c *sessionCheck) anchorDisagrees(a AnchoredHead) string {
	h := a.Head
	if a.Statement != string(h.Statement()) {
		return fmt.Sprintf("the statement anchored in %s is not the head beside it: the anchor file was edited", c.anchor)
	}
	if c.chainOK && (h.Seq != c.seq || h.Hash != c.lastHash) {
		return fmt.Sprintf("the journal ends at entry %d (%s), but the head anchored in %s is entry %d (%s): the journal was rewritten after it was anchored",
			c.seq, ShortHash(c.lastHash), c.anchor, h.Seq, ShortHash(h.Hash))
	}
	if !c.inLedger {
		return "" // the ledger check says the row is missing
	}
	l := c.seal.Head
	var diffs []string
	if l.Seq != h.Seq || l.Hash != h.Hash {
		diffs = append(diffs, fmt.Sprintf("the ledger's head is entry %d (%s), the anchored one entry %d (%s)", l.Seq, ShortHash(l.Hash), h.Seq, ShortHash(h.Hash)))
	}
	for _, f := range []struct{ name, ledger, anchored string }{
		{"actor", l.Actor, h.Actor}, {"command", l.Command, h.Command}, {"release", l.Release, h.Release}, {"ledger", l.Ledger, h.Ledger},
	} {
		if f.ledger != f.anchored {
			diffs = append(diffs, fmt.Sprintf("the ledger's %s is %q, the anchored one %q", f.name, f.ledger, f.anchored))
		}
	}
	if c.seal.Sealed() {
		switch {
		case !l.At.Equal(h.At):
			diffs = append(diffs, fmt.Sprintf("the ledger's seal is dated %s, the anchored one %s", l.At.UTC().Format(time.RFC3339), h.At.UTC().Format(time.RFC3339)))
		case c.seal.Signature != a.Signature:
			diffs = append(diffs, fmt.Sprintf("the ledger's signature (key %s) is not the anchored one (key %s)", orNone(c.seal.Signature.Key), orNone(a.Signature.Key)))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	return fmt.Sprintf("the head anchored in %s disagrees with the ledger: %s", c.anchor, strings.Join(diffs, "; "))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// verifyRecordings checks the recordings an intact journal vouches for
// and returns how many there were. When elsewhere allows it (the journal
// was read from the ledger, its session recorded on another machine), a
// recording that cannot be read here is not a failure: it is returned in
// unread.
func (q *Records) verifyRecordings(ctx context.Context, id string, lines []journal.Line, elsewhere bool) (n int, unread []string, p *journal.Problem) {
	for _, l := range lines {
		var e journal.Entry
		if err := json.Unmarshal(l.Text, &e); err != nil || e.Kind != KindScreenRecorded {
			continue // the chain already vouched for every line
		}
		n++
		var rec ScreenRecorded
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

// JournalEntries reads session id's journal for display: its file when it
// is on this machine, else the ledger's copy (the session was recorded on
// another machine), and says which. It checks no hash (VerifyJournals
// does). On a line that is not an entry it returns the entries before it
// and an error naming the line. A session with neither file nor copy is
// an error wrapping ErrNotFound.
func (q *Records) JournalEntries(ctx context.Context, id string) ([]journal.Entry, JournalSource, error) {
	if q.sessions == nil {
		return nil, "", missingPort("session files")
	}
	from := JournalFromFile
	lines, err := q.sessions.JournalLines(ctx, id)
	if errors.Is(err, ErrNotFound) {
		cp, cerr := q.ledger.JournalCopy(ctx, id)
		switch {
		case errors.Is(cerr, ErrNotFound):
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
