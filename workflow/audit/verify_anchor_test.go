package audit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/journal"
)

// TestVerifyJournalsReadsTheAnchorsWholeHistory: a later commit on top of
// the anchor (a fast-forward) removes one session's head, with its
// ledger row and journal deleted, and changes another's: both fail,
// naming the commit; a head of another ledger erased the same way is the
// anchor's tampering, said apart. Verified against the tip alone, the
// erased session would not be listed at all.
func TestVerifyJournalsReadsTheAnchorsWholeHistory(t *testing.T) {
	t.Parallel()
	w := newSealWorld()
	theirs := newSealWorld()
	theirs.anchor, theirs.files = w.anchor, w.files
	for _, id := range []string{"kept", "erased", "changed"} {
		w.session(t, id, "ana", 3)
		w.seal(t, id)
	}
	theirs.session(t, "theirs", "bo", 2)
	theirs.seal(t, "theirs")

	removedBy := w.anchor.EraseInNewCommit("erased")
	w.ledger.DeleteSession("erased")
	w.files.RemoveJournal("erased")
	forged, ok := w.anchor.Head("changed")
	require.True(t, ok)
	forged.Head.Seq = 9
	forged.Statement = string(forged.Head.Statement())
	changedBy := w.anchor.ChangeInNewCommit(forged)
	theirsBy := w.anchor.EraseInNewCommit("theirs")

	v, all := w.verify(t, w.fullDeps())
	require.NoError(t, all.AnchorError)
	require.True(t, v["kept"].Intact)

	er := v["erased"]
	require.False(t, er.Intact, "erased from the tip, the ledger and the disk, and still found")
	require.Equal(t, []string{"chain", "ledger_head", "anchor"}, checkNames(er.Failed))
	require.Contains(t, er.Checks.Anchor.Detail, "the anchor was erased by a later commit: sessions/erased.json (anchored at commit ")
	require.Contains(t, er.Checks.Anchor.Detail, "was removed by commit "+removedBy[:12])
	require.Contains(t, er.Checks.LedgerHead.Detail, "the ledger has no session erased, but the fake anchor held (until commit "+removedBy[:12]+") its head")

	ch := v["changed"]
	require.Equal(t, []string{"anchor"}, checkNames(ch.Failed))
	require.Contains(t, ch.Checks.Anchor.Detail, "was changed by commit "+changedBy[:12])

	require.NotContains(t, v, "theirs", "another ledger's session is not this one's to verify")
	require.Len(t, all.AnchorTampered, 1)
	require.Contains(t, all.AnchorTampered[0], "the anchor of session theirs (of ledger ")
	require.Contains(t, all.AnchorTampered[0], "was removed by commit "+theirsBy[:12])
	require.True(t, all.Tampered())
}

// TestVerifyJournalsCatchesARewoundAnchorByItsRecordedCommit: an anchor
// written in place is rewound two commits, dropping a session's head,
// and the later session's head anchored again on top, so the tip holds
// every head the ledger still has. The later session's recorded anchor
// commit is no longer in the history: it fails. Every anchored session
// warns that the anchor is not protected.
func TestVerifyJournalsCatchesARewoundAnchorByItsRecordedCommit(t *testing.T) {
	t.Parallel()
	w := newSealWorld()
	w.anchor.InPlace = true
	for _, id := range []string{"first", "dropped", "last"} {
		w.session(t, id, "ana", 3)
		w.seal(t, id)
	}
	v, all := w.verify(t, w.fullDeps())
	require.Contains(t, all.Unprotected, "anchor not protected: the fake repository has no origin; rewinds cannot be detected")
	for _, s := range v {
		require.True(t, s.Intact, "%s: %v", s.Session, s.Failed)
		require.Contains(t, s.Warnings, all.Unprotected, "a warning, not tampering")
	}

	last, ok := w.anchor.Head("last")
	require.True(t, ok)
	w.anchor.Rewind(2)
	w.anchor.Reanchor(last)
	w.ledger.DeleteSession("dropped")
	w.files.RemoveJournal("dropped")
	seal, err := w.ledger.SessionSeal(t.Context(), "last")
	require.NoError(t, err)
	place, ok := audit.ParseAnchorPlace(seal.Anchor)
	require.True(t, ok)

	v, _ = w.verify(t, w.fullDeps())
	require.True(t, v["first"].Intact)
	require.NotContains(t, v, "dropped", "erased from every place this machine reads: that is why the warning")
	require.Equal(t, []string{"anchor"}, checkNames(v["last"].Failed))
	require.Contains(t, v["last"].Checks.Anchor.Detail, "the ledger records its head anchored at commit "+place.Commit)
	require.Contains(t, v["last"].Checks.Anchor.Detail, "no longer contains: the ref was rewound or rewritten")
}

// orphanJournal is a journal whose session.opened names ledger ("" for
// none, as journals did before), of n entries.
func orphanJournal(t *testing.T, ledger string, n int) []string {
	t.Helper()
	e, err := journal.Next(nil, t0, "ana", journal.KindSessionOpened, journal.SessionOpened{Command: "plan", Ledger: ledger})
	require.NoError(t, err)
	b, err := json.Marshal(e)
	require.NoError(t, err)
	lines := []string{string(b)}
	prev := e
	for i := 1; i < n; i++ {
		next, err := journal.Next(&prev, t0, "ana", journal.KindStepFinished, map[string]int{"i": i})
		require.NoError(t, err)
		b, err := json.Marshal(next)
		require.NoError(t, err)
		lines, prev = append(lines, string(b)), next
	}
	return lines
}

// TestVerifyJournalsWithoutConfigurationReportsJournalsWithoutALedgerRow:
// without relcap.yaml there is no anchor to read: a journal on disk whose
// ledger row was deleted fails all the same (its journal names this
// ledger, or none); one that names another ledger is counted apart; an
// empty one (an opening interrupted) is a warning; and the verification
// says the anchors were not checked.
func TestVerifyJournalsWithoutConfigurationReportsJournalsWithoutALedgerRow(t *testing.T) {
	t.Parallel()
	w := newSealWorld()
	w.session(t, "kept", "ana", 3)
	w.seal(t, "kept")
	self, err := w.ledger.LedgerIdentity(t.Context())
	require.NoError(t, err)
	w.files.SetJournal("ours", orphanJournal(t, self, 3))
	w.files.SetJournal("unnamed", orphanJournal(t, "", 2))
	w.files.SetJournal("theirs", orphanJournal(t, "another-ledger", 2))
	w.files.SetJournal("interrupted", nil)

	q, err := audit.New(audit.Deps{Project: &workflow.Project{}, Ledger: w.ledger, Sessions: w.files})
	require.NoError(t, err)
	all, err := q.VerifyJournals(t.Context(), nil)
	require.NoError(t, err)
	v := map[string]audit.SessionVerification{}
	for _, s := range all.Sessions {
		v[s.Session] = s
	}
	require.Equal(t, []string{"anchors not checked: no relcap.yaml (-c): a session whose journal and ledger rows were both rewritten or deleted goes unnoticed"}, all.Unchecked)
	require.True(t, v["kept"].Intact)

	require.False(t, v["ours"].Intact)
	require.Equal(t, []string{"ledger_head"}, checkNames(v["ours"].Failed))
	require.Contains(t, v["ours"].Checks.LedgerHead.Detail, "journal on disk without a ledger row: its journal names this ledger ("+self+"), which has no session ours: its ledger row was deleted")

	require.False(t, v["unnamed"].Intact)
	require.Contains(t, v["unnamed"].Checks.LedgerHead.Detail, "its ledger row was deleted, or it is another ledger's session whose journal does not name its ledger")
	require.Contains(t, v["unnamed"].Checks.LedgerHead.Detail, "verify it with that ledger (--ledger)")

	require.NotContains(t, v, "theirs")
	require.Equal(t, 1, all.OtherLedgerJournals)

	require.True(t, v["interrupted"].Intact, "no entries: nothing was recorded, nothing was deleted")
	require.Contains(t, strings.Join(v["interrupted"].Warnings, "\n"), "a session whose opening was interrupted")

	one, err := q.VerifySessions(t.Context(), []string{"theirs"})
	require.NoError(t, err, "asked for by ID, a journal on disk is verified as far as it can be")
	require.True(t, one[0].Intact)
	require.Contains(t, one[0].Checks.LedgerHead.Detail, "recorded in ledger another-ledger (its journal says so)")
}
