package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// readAnchor reads the anchor's whole history into out and returns its
// heads by session (as the tip holds them) and the erased ones of this
// ledger (as first anchored). The erased heads of other ledgers (not in
// this one, and naming another) are not this ledger's to verify, but
// their erasure is the anchor's tampering: it goes to
// out.AnchorTampered, and the head among the anchored ones. Without an anchor, out says what was not
// checked.
func (q *Auditor) readAnchor(ctx context.Context, self string, byID map[string]workflow.Session, out *JournalVerification) (map[string]AnchoredHead, map[string]ErasedAnchor, *AnchorHistory) {
	anchored := map[string]AnchoredHead{}
	erased := map[string]ErasedAnchor{}
	if q.anchor == nil {
		why := "relcap.yaml names no environment repository"
		if q.project == nil || len(q.project.Environments) == 0 {
			why = "no relcap.yaml (-c)"
		}
		out.Unchecked = append(out.Unchecked, "anchors not checked: "+why+
			": a session whose journal and ledger rows were both rewritten or deleted goes unnoticed")
		return anchored, erased, nil
	}
	out.Anchor = q.anchor.Where()
	h, err := q.anchor.History(ctx)
	if err != nil {
		out.AnchorError = err
		return anchored, erased, nil
	}
	out.Unprotected = h.Place.Unprotected()
	for _, a := range h.Heads {
		anchored[a.Head.Session] = a
	}
	for _, e := range h.Erased {
		id := e.Head.Head.Session
		if _, seen := erased[id]; seen {
			continue // the first erasure found names it
		}
		if _, inLedger := byID[id]; !inLedger && e.Head.Head.OfAnotherLedger(self) {
			// Not this ledger's, nor an orphan here: its head says whose.
			anchored[id] = e.Head
			out.AnchorTampered = append(out.AnchorTampered, fmt.Sprintf("the anchor of session %s (of ledger %s) was erased by a later commit: %s",
				id, e.Head.Head.Ledger, e.what()))
			continue
		}
		erased[id] = e
	}
	return anchored, erased, &h
}

// orphanJournals lists the sessions on disk that neither the ledger nor
// the anchor knows, of this ledger (or of none named); those whose
// journal names another ledger are counted in out instead.
func (q *Auditor) orphanJournals(ctx context.Context, self string, byID map[string]workflow.Session, anchored map[string]AnchoredHead, erased map[string]ErasedAnchor, out *JournalVerification) ([]string, error) {
	ids, err := q.sessions.SessionIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the session directories: %w", err)
	}
	var orphans []string
	for _, id := range ids {
		_, inLedger := byID[id]
		_, isAnchored := anchored[id]
		_, isErased := erased[id]
		if inLedger || isAnchored || isErased {
			continue
		}
		lines, err := q.sessions.JournalLines(ctx, id)
		if err != nil && !errors.Is(err, fault.ErrNotFound) {
			return nil, err
		}
		if l := journalLedger(lines); l != "" && l != self {
			out.OtherLedgerJournals++
			continue
		}
		orphans = append(orphans, id)
	}
	return orphans, nil
}

// journalLedger is the ledger a journal's session.opened names, "" when
// it names none (journals from before it did) or cannot be read.
func journalLedger(lines []journal.Line) string {
	if len(lines) == 0 {
		return ""
	}
	var e journal.Entry
	if json.Unmarshal(lines[0].Text, &e) != nil || e.Kind != journal.KindSessionOpened {
		return ""
	}
	var o journal.SessionOpened
	if json.Unmarshal(e.Data, &o) != nil {
		return ""
	}
	return o.Ledger
}

// orphanLedgerHead is the ledger check of a journal on disk that neither
// the ledger nor the anchor knows.
func (c *sessionCheck) orphanLedgerHead() VerifyCheck {
	named := journalLedger(c.lines)
	switch {
	case named != "" && named != c.self:
		return VerifyCheck{Status: VerifyUnchecked, Detail: fmt.Sprintf(
			"recorded in ledger %s (its journal says so), not in this one (%s): verify it with that ledger (--ledger)", named, c.self)}
	case c.seq == 0 && c.chainErr == nil:
		return VerifyCheck{Status: VerifyUnchecked, Detail: "a session directory without journal entries nor a ledger row: a session whose opening was interrupted"}
	case named == c.self:
		return VerifyCheck{Status: VerifyFailed, Detail: fmt.Sprintf(
			"journal on disk without a ledger row: its journal names this ledger (%s), which has no session %s: its ledger row was deleted", c.self, c.id)}
	default:
		return VerifyCheck{Status: VerifyFailed, Detail: fmt.Sprintf(
			"journal on disk without a ledger row: the ledger has no session %s: its ledger row was deleted, or it is another ledger's session whose journal does not name its ledger (recorded before journals did): verify it with that ledger (--ledger)", c.id)}
	}
}

func (c *sessionCheck) checkAnchor(v *SessionVerification) {
	a := c.anchored
	if c.erased != nil {
		v.Checks.Anchor = VerifyCheck{Status: VerifyFailed, Detail: fmt.Sprintf(
			"the anchor was erased by a later commit: %s of %s (relcap only ever adds anchor files)", c.erased.what(), c.anchor)}
		return
	}
	if why := c.rewound(); why != "" {
		v.Checks.Anchor = VerifyCheck{Status: VerifyFailed, Detail: why}
		return
	}
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
		case errors.Is(c.anchorErr, fault.ErrTampered):
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

// rewound says how the anchor lost the commit the ledger recorded the
// session's head anchored at, or "": a ref rewound (or rebuilt) to drop
// a commit loses it, even when every head it held was anchored again
// since. The reflog is not consulted: its keeper can rewrite it too.
func (c *sessionCheck) rewound() string {
	if !c.inLedger || c.seal.Anchor == "" || c.history == nil {
		return ""
	}
	p, ok := ParseAnchorPlace(c.seal.Anchor)
	if !ok || c.history.Contains(p.Commit) {
		return ""
	}
	return fmt.Sprintf("the ledger records its head anchored at commit %s (%s), which %s no longer contains: the ref was rewound or rewritten to drop it",
		p.Commit, c.seal.Anchor, c.anchor)
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
			c.seq, workflow.ShortHash(c.lastHash), c.anchor, h.Seq, workflow.ShortHash(h.Hash))
	}
	if !c.inLedger {
		return "" // the ledger check says the row is missing
	}
	l := c.seal.Head
	var diffs []string
	if l.Seq != h.Seq || l.Hash != h.Hash {
		diffs = append(diffs, fmt.Sprintf("the ledger's head is entry %d (%s), the anchored one entry %d (%s)", l.Seq, workflow.ShortHash(l.Hash), h.Seq, workflow.ShortHash(h.Hash)))
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
