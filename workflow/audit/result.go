package audit

import (
	"errors"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// What journal verification reports: each session's checks apart, and
// what the anchor said beside them.

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
	Kind      approval.Kind `json:"kind"`
	Env       string        `json:"env"`
	Subject   string        `json:"subject"`
	Approver  string        `json:"approver"`
	Signed    bool          `json:"signed"`
	Signature VerifyCheck   `json:"signature"`
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
	// OtherLedgerJournals counts the journals on disk without a row in
	// this ledger whose session.opened names another ledger (the sessions
	// directory of a PostgreSQL ledger is shared with the default one):
	// left out like OtherLedgers.
	OtherLedgerJournals int
	// AnchorError is why the anchors could not be read; every session's
	// anchor check is then unchecked (or failed, for an anchor that was
	// rewritten).
	AnchorError error
	// AnchorTampered lists what the anchor's history shows was erased of
	// sessions that are not this ledger's to verify (their signed heads
	// name another ledger): the anchor itself was tampered with, whoever's
	// the session. This ledger's erased sessions fail their own anchor
	// check instead.
	AnchorTampered []string
	// Unprotected is AnchorPlace.Unprotected of the anchor read: "" when
	// the anchor lives where its keeper alone cannot rewind it.
	Unprotected string
	// Unchecked says what could not be checked at all here, and why
	// ("anchors not checked: no relcap.yaml (-c)").
	Unchecked []string
}

// Tampered reports whether anything beyond the sessions' own checks was
// found tampered with: the anchor's history, or the anchor unreadable
// because it was rewritten.
func (v JournalVerification) Tampered() bool {
	return len(v.AnchorTampered) > 0 || errors.Is(v.AnchorError, fault.ErrTampered)
}
