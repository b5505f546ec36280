package audit_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// sealWorld is a ledger, its session files, the people's keys and an
// anchor, all fakes.
type sealWorld struct {
	clock  *workflowtest.Clock
	ledger *workflowtest.Ledger
	files  *workflowtest.SessionFiles
	sigs   *workflowtest.Signatures
	anchor *workflowtest.Anchor
}

func newSealWorld() *sealWorld {
	return &sealWorld{
		clock: workflowtest.NewClock(t0), ledger: workflowtest.NewLedger(), files: workflowtest.NewSessionFiles(),
		sigs: workflowtest.NewSignatures("ana", "bo"), anchor: workflowtest.NewAnchor(),
	}
}

// chain is n entries of a session's journal as lines, and its head.
func chain(t *testing.T, actor, kind string, n int) ([]string, journal.Head) {
	t.Helper()
	var (
		prev  *journal.Entry
		lines []string
	)
	for i := range n {
		e, err := journal.Next(prev, t0.Add(time.Duration(i)*time.Second), actor, journal.Kind(kind), map[string]int{"i": i})
		require.NoError(t, err)
		b, err := json.Marshal(e)
		require.NoError(t, err)
		lines = append(lines, string(b))
		prev = &e
	}
	return lines, journal.Head{Seq: prev.Seq, Hash: prev.Hash}
}

// session registers a closed session of n entries.
func (w *sealWorld) session(t *testing.T, id, actor string, n int) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, w.ledger.OpenSession(ctx, workflow.Session{ID: id, Actor: actor, Command: "plan", ReleaseID: "web-staging-1", StartedAt: t0}))
	lines, head := chain(t, actor, "step.finished", n)
	head.SessionID = id
	require.NoError(t, w.ledger.SetJournalHead(ctx, head))
	require.NoError(t, w.ledger.CloseSession(ctx, id, t0.Add(time.Minute)))
	w.files.SetJournal(id, lines)
}

func (w *sealWorld) sealer() audit.HeadSealer {
	return audit.HeadSealer{Ledger: w.ledger, Clock: w.clock, Signer: w.sigs, Anchor: w.anchor}
}

func (w *sealWorld) seal(t *testing.T, id string) audit.SessionSeal {
	t.Helper()
	s, err := w.sealer().Seal(t.Context(), id)
	require.NoError(t, err)
	return s
}

// verify checks every session and returns them by ID.
func (w *sealWorld) verify(t *testing.T, d audit.Deps) (map[string]audit.SessionVerification, audit.JournalVerification) {
	t.Helper()
	d.Project, d.Ledger, d.Sessions = testProject(0), w.ledger, w.files
	q, err := audit.New(d)
	require.NoError(t, err)
	all, err := q.VerifyJournals(t.Context(), nil)
	require.NoError(t, err)
	out := map[string]audit.SessionVerification{}
	for _, v := range all.Sessions {
		out[v.Session] = v
	}
	return out, all
}

func (w *sealWorld) fullDeps() audit.Deps {
	return audit.Deps{Verifier: w.sigs, Anchor: w.anchor}
}

func TestSealSignsTheFinalHeadAsTheActorAndAnchorsIt(t *testing.T) {
	t.Parallel()
	w := newSealWorld()
	w.session(t, "s1", "ana", 4)
	seal := w.seal(t, "s1")

	require.True(t, seal.Sealed())
	self, err := w.ledger.LedgerIdentity(t.Context())
	require.NoError(t, err)
	require.Equal(t, audit.SessionHead{Session: "s1", Actor: "ana", Command: "plan", Release: "web-staging-1", Ledger: self, Seq: 4, Hash: seal.Head.Hash, At: t0}, seal.Head,
		"the head names the ledger that holds the session")
	require.True(t, seal.Signed())
	require.Empty(t, seal.Unsigned)
	require.NoError(t, w.sigs.Verify(t.Context(), "ana", approval.NamespaceJournal, seal.Head.Statement(), seal.Signature, seal.Head.At), "signed in the journal namespace")
	require.Error(t, w.sigs.Verify(t.Context(), "ana", approval.NamespaceApproval, seal.Head.Statement(), seal.Signature, seal.Head.At), "and in no other")
	require.Regexp(t, `^refs/relcap/journal [0-9a-f]{12} of the fake repository$`, seal.Anchor)
	anchored, ok := w.anchor.Head("s1")
	require.True(t, ok)
	require.Equal(t, seal.SealedHead, anchored.SealedHead)
	require.Equal(t, string(seal.Head.Statement()), anchored.Statement)

	stored, err := w.ledger.SessionSeal(t.Context(), "s1")
	require.NoError(t, err)
	require.Equal(t, seal, stored)

	w.clock.Advance(time.Hour)
	again := w.seal(t, "s1")
	require.Equal(t, seal, again, "sealing twice returns the first seal, re-signing nothing")
}

// TestVerifyJournalsLeavesAnotherLedgersSessionsToIt: two ledgers (a
// team's store and a captain's own, or two projects) anchor in one
// environment repository. Verifying this ledger does not call the other's
// sessions deleted: their signed heads name that ledger. Asked for by ID,
// such a session is verified as far as this machine can and says where
// to verify the rest; a session of this ledger whose row is deleted still
// fails.
func TestVerifyJournalsLeavesAnotherLedgersSessionsToIt(t *testing.T) {
	t.Parallel()
	w := newSealWorld()
	theirs := newSealWorld()
	theirs.anchor, theirs.files = w.anchor, w.files // one repository, one machine
	w.session(t, "ours", "ana", 3)
	w.seal(t, "ours")
	w.session(t, "deleted", "ana", 3)
	w.seal(t, "deleted")
	w.ledger.DeleteSession("deleted")
	theirs.session(t, "theirs", "bo", 4)
	theirs.seal(t, "theirs")

	v, all := w.verify(t, w.fullDeps())
	require.Equal(t, 1, all.OtherLedgers, "the other ledger's session is counted, not verified")
	require.NotContains(t, v, "theirs")
	require.True(t, v["ours"].Intact)
	require.False(t, v["deleted"].Intact, "a row deleted from this ledger is still tampering")
	require.Contains(t, v["deleted"].Checks.LedgerHead.Detail, "its ledger row was deleted")

	q, err := audit.New(audit.Deps{Project: testProject(0), Ledger: w.ledger, Sessions: w.files, Verifier: w.sigs, Anchor: w.anchor})
	require.NoError(t, err)
	one, err := q.VerifySessions(t.Context(), []string{"theirs"})
	require.NoError(t, err)
	require.Len(t, one, 1)
	require.True(t, one[0].Intact, "not tampering: %v", one[0].Failed)
	require.Equal(t, audit.VerifyUnchecked, one[0].Checks.LedgerHead.Status)
	other, err := theirs.ledger.LedgerIdentity(t.Context())
	require.NoError(t, err)
	require.Contains(t, one[0].Checks.LedgerHead.Detail, "recorded in ledger "+other+" (its signed head says so)")
	require.Equal(t, audit.VerifyOK, one[0].Checks.Signature.Status, "bo's signature covers the ledger it names")
	require.Equal(t, audit.VerifyOK, one[0].Checks.Chain.Status)
	require.Contains(t, strings.Join(one[0].Warnings, "\n"), "ledger_head not checked: recorded in ledger "+other)
}

// TestSealStatementNamesItsLedgerInVersion2: a head without a ledger is
// the v1 statement heads were signed with before, byte for byte; one
// with a ledger is v2 and its signature covers the ledger.
func TestSealStatementNamesItsLedgerInVersion2(t *testing.T) {
	t.Parallel()
	h := audit.SessionHead{Session: "s", Actor: "ana", Command: "plan", Seq: 1, Hash: "h", At: t0}
	require.Equal(t, "relcap journal head v1\nsession: \"s\"\nactor: \"ana\"\ncommand: \"plan\"\nrelease: \"\"\nseq: 1\nhash: h\nat: 2026-11-30T09:00:00Z\n", string(h.Statement()))
	h.Ledger = "0123abcd"
	require.Equal(t, "relcap journal head v2\nsession: \"s\"\nactor: \"ana\"\ncommand: \"plan\"\nrelease: \"\"\nledger: \"0123abcd\"\nseq: 1\nhash: h\nat: 2026-11-30T09:00:00Z\n", string(h.Statement()))
}

func TestSealStatementQuotesFreeText(t *testing.T) {
	t.Parallel()
	h := audit.SessionHead{Session: "s1", Actor: "ana\nseq: 99", Command: "plan", Seq: 3, Hash: "abc", At: t0}
	require.Equal(t, "relcap journal head v1\nsession: \"s1\"\nactor: \"ana\\nseq: 99\"\ncommand: \"plan\"\nrelease: \"\"\nseq: 3\nhash: abc\nat: 2026-11-30T09:00:00Z\n", string(h.Statement()),
		"an actor cannot forge another field of the statement")
}

// TestASealThatCannotSignOrAnchorSaysWhy: a head is never left unsigned or
// unanchored silently; the ledger says why.
func TestASealThatCannotSignOrAnchorSaysWhy(t *testing.T) {
	t.Parallel()
	w := newSealWorld()
	for _, id := range []string{"no-people", "no-key", "unreachable"} {
		w.session(t, id, "carol", 2)
	}
	s, err := audit.HeadSealer{Ledger: w.ledger, Clock: w.clock, NoAnchor: "relcap.yaml names no environment repository"}.Seal(t.Context(), "no-people")
	require.NoError(t, err)
	require.Contains(t, s.Unsigned, "no people file")
	require.Equal(t, "relcap.yaml names no environment repository", s.Unanchored)
	require.True(t, s.Sealed())

	s = w.seal(t, "no-key")
	require.False(t, s.Signed())
	require.Equal(t, "carol could not sign: invalid input: no key for carol", s.Unsigned)
	require.NotEmpty(t, s.Anchor, "an unsigned head is still anchored")

	w.anchor.Err = errors.New("fetching refs/relcap/journal from https://git.example.com/env.git: connection refused")
	s = w.seal(t, "unreachable")
	require.Equal(t, "fetching refs/relcap/journal from https://git.example.com/env.git: connection refused", s.Unanchored)
	stored, err := w.ledger.SessionSeal(t.Context(), "unreachable")
	require.NoError(t, err)
	require.Equal(t, s.Unanchored, stored.Unanchored, "the ledger keeps why")
}

func TestVerifyJournalsChecksChainLedgerSignatureAndAnchorApart(t *testing.T) {
	t.Parallel()
	w := newSealWorld()
	for _, id := range []string{"clean", "deleted", "rewritten", "resigned", "owned", "revoked", "dropped"} {
		actor := "ana"
		if id == "revoked" {
			actor = "bo"
		}
		w.session(t, id, actor, 3)
		w.seal(t, id)
	}
	w.session(t, "unsigned", "carol", 2)
	w.seal(t, "unsigned")
	w.session(t, "legacy", "ana", 2) // closed by a relcap from before sealed heads

	v, _ := w.verify(t, w.fullDeps())
	for id, s := range v {
		if id == "unsigned" || id == "legacy" {
			continue
		}
		require.True(t, s.Intact, "%s: %v", id, s.Failed)
		require.Empty(t, s.Warnings, id)
		require.Equal(t, audit.VerifyCheck{Status: audit.VerifyOK, Detail: "signed by " + map[bool]string{true: "bo", false: "ana"}[id == "revoked"] + " with key FAKE:" + map[bool]string{true: "bo", false: "ana"}[id == "revoked"]}, s.Checks.Signature, id)
		require.Equal(t, audit.VerifyOK, s.Checks.Anchor.Status, id)
	}

	// The attacks, each on its own session.
	w.ledger.DeleteSession("deleted")
	lines, head := chain(t, "ana", "step.finished", 5)
	head.SessionID = "rewritten"
	w.files.SetJournal("rewritten", lines)
	require.NoError(t, w.ledger.SetJournalHead(t.Context(), head))
	resigned, err := w.ledger.SessionSeal(t.Context(), "resigned")
	require.NoError(t, err)
	resigned.Signature = workflowtest.SignAs("mallory", approval.NamespaceJournal, resigned.Head.Statement())
	w.ledger.ForgeSeal(resigned)
	// The most able captain: rewrites their own session and re-signs it
	// with their own key, which verifies. Only the anchor says otherwise.
	lines, head = chain(t, "ana", "plan.reviewed", 3)
	w.files.SetJournal("owned", lines)
	owned, err := w.ledger.SessionSeal(t.Context(), "owned")
	require.NoError(t, err)
	owned.Head.Hash = head.Hash
	owned.Signature, err = w.sigs.Sign(t.Context(), "ana", approval.NamespaceJournal, owned.Head.Statement())
	require.NoError(t, err)
	w.ledger.ForgeSeal(owned)
	w.sigs.Revoke("bo")
	w.anchor.Remove("dropped")

	v, all := w.verify(t, w.fullDeps())
	require.NoError(t, all.AnchorError)
	require.Len(t, v, 9, "the deleted session is verified from its anchor")

	require.True(t, v["clean"].Intact)

	del := v["deleted"]
	require.False(t, del.Intact)
	require.Len(t, del.Failed, 1)
	require.Equal(t, audit.VerifyFailed, del.Checks.LedgerHead.Status)
	require.Contains(t, del.Checks.LedgerHead.Detail, "the ledger has no session deleted, but the fake anchor holds its head (entry 3")
	require.Contains(t, del.Checks.LedgerHead.Detail, "its ledger row was deleted")
	require.Equal(t, audit.VerifyOK, del.Checks.Chain.Status, "the journal file is still there")
	require.Equal(t, audit.VerifyOK, del.Checks.Signature.Status, "checked from the anchor")
	require.Equal(t, audit.VerifyOK, del.Checks.Anchor.Status)

	rw := v["rewritten"]
	require.False(t, rw.Intact)
	require.Equal(t, audit.VerifyOK, rw.Checks.Chain.Status, "a rewritten chain is a valid chain")
	require.Equal(t, audit.VerifyOK, rw.Checks.LedgerHead.Status, "and the ledger head was rewritten with it")
	require.Equal(t, audit.VerifyFailed, rw.Checks.Signature.Status)
	require.Contains(t, rw.Checks.Signature.Detail, "the head in the ledger is not ana's: ")
	require.Equal(t, audit.VerifyFailed, rw.Checks.Anchor.Status)
	require.Contains(t, rw.Checks.Anchor.Detail, "the journal ends at entry 5")
	require.Contains(t, rw.Checks.Anchor.Detail, "the head anchored in the fake anchor is entry 3")
	require.Equal(t, int64(5), rw.Problem.Seq)
	require.True(t, strings.HasPrefix(rw.Problem.Reason, "signature: "), rw.Problem.Reason)

	rs := v["resigned"]
	require.Equal(t, []string{"signature", "anchor"}, checkNames(rs.Failed))
	require.Contains(t, rs.Checks.Signature.Detail, "key FAKE:mallory is not in the people file")
	require.Contains(t, rs.Checks.Anchor.Detail, "the ledger's signature (key FAKE:mallory) is not the anchored one (key FAKE:ana)")

	own := v["owned"]
	require.Equal(t, audit.VerifyOK, own.Checks.Signature.Status, "ana's own key verifies what she re-signed")
	require.Equal(t, []string{"anchor"}, checkNames(own.Failed), "the anchor does not move with the ledger")

	rv := v["revoked"]
	require.Equal(t, []string{"signature"}, checkNames(rv.Failed), "a key removed from the people file no longer vouches")

	dr := v["dropped"]
	require.Equal(t, []string{"anchor"}, checkNames(dr.Failed))
	require.Contains(t, dr.Checks.Anchor.Detail, "the ledger says its head was anchored (refs/relcap/journal ")
	require.Contains(t, dr.Checks.Anchor.Detail, "holds no head for it: the anchor was rewritten")

	un := v["unsigned"]
	require.True(t, un.Intact, "unsigned is a warning, not tampering")
	require.Equal(t, audit.VerifyAbsent, un.Checks.Signature.Status)
	require.Equal(t, "carol could not sign: invalid input: no key for carol", un.Unsigned)
	require.Equal(t, audit.VerifyOK, un.Checks.Anchor.Status)
	require.Equal(t, []string{"unsigned: carol could not sign: invalid input: no key for carol"}, un.Warnings)

	lg := v["legacy"]
	require.True(t, lg.Intact)
	require.Contains(t, lg.Unsigned, "never sealed")
	require.Equal(t, lg.Unsigned, lg.Unanchored)
	require.Equal(t, audit.VerifyAbsent, lg.Checks.Anchor.Status)
}

func checkNames(failed []string) []string {
	var out []string
	for _, f := range failed {
		name, _, _ := strings.Cut(f, ":")
		out = append(out, name)
	}
	return out
}

// TestVerifyJournalsWithoutPeopleOrAnchorSaysWhatItDidNotCheck: verify
// run without the project's people file or anchor cannot vouch for
// signatures or anchors, and says so instead of passing them.
func TestVerifyJournalsWithoutPeopleOrAnchorSaysWhatItDidNotCheck(t *testing.T) {
	t.Parallel()
	w := newSealWorld()
	w.session(t, "s1", "ana", 3)
	w.seal(t, "s1")

	v, all := w.verify(t, audit.Deps{})
	s := v["s1"]
	require.True(t, s.Intact)
	require.Empty(t, all.Anchor)
	require.Equal(t, audit.VerifyUnchecked, s.Checks.Signature.Status)
	require.Contains(t, s.Checks.Signature.Detail, "no people file is configured here")
	require.Equal(t, audit.VerifyUnchecked, s.Checks.Anchor.Status)
	require.Contains(t, s.Checks.Anchor.Detail, "no environment repository is configured here")
	require.Len(t, s.Warnings, 2)

	w.anchor.ReadErr = errors.New("fetching refs/relcap/journal: connection refused")
	v, all = w.verify(t, w.fullDeps())
	require.EqualError(t, all.AnchorError, "fetching refs/relcap/journal: connection refused")
	require.True(t, v["s1"].Intact)
	require.Equal(t, audit.VerifyUnchecked, v["s1"].Checks.Anchor.Status)
	seal, err := w.ledger.SessionSeal(t.Context(), "s1")
	require.NoError(t, err)
	require.Contains(t, v["s1"].Warnings, "anchor not checked: anchored in "+seal.Anchor+", which could not be read: fetching refs/relcap/journal: connection refused")

	w.anchor.ReadErr = fault.ErrTampered
	v, _ = w.verify(t, w.fullDeps())
	require.False(t, v["s1"].Intact, "an anchor rewritten behind this machine's back fails what it anchored")
}

func TestVerifyJournalsOfAnUnknownSessionIsAUsageError(t *testing.T) {
	t.Parallel()
	w := newSealWorld()
	q, err := audit.New(audit.Deps{Project: testProject(0), Ledger: w.ledger, Sessions: w.files, Anchor: w.anchor})
	require.NoError(t, err)
	_, err = q.VerifyJournals(t.Context(), []string{"nope"})
	require.ErrorIs(t, err, fault.ErrUsage)
}

// TestVerifyJournalsSaysWhichApprovalsWereUnsigned: the approvals a
// session journaled are listed, the unsigned ones (where the environment
// allowed them) and those whose key has left the people file as warnings,
// never as tampering.
func TestVerifyJournalsSaysWhichApprovalsWereUnsigned(t *testing.T) {
	t.Parallel()
	w := newSealWorld()
	ctx := t.Context()
	require.NoError(t, w.ledger.OpenSession(ctx, workflow.Session{ID: "s1", Actor: "bo", Command: "approve", StartedAt: t0}))
	unsigned := approval.Approval{Kind: approval.Plan, Subject: strings.Repeat("a", 64), Env: "staging", Approver: "carol", At: t0}
	signed := approval.Approval{Kind: approval.Promotion, Subject: "web-prod-20261130-1a2b3c", Env: "prod", Approver: "bo", At: t0, Commit: "c0ffee", Digest: "sha256:x"}
	signed.Signature = workflowtest.SignAs("bo", approval.NamespaceApproval, signed.Statement())
	var (
		prev  *journal.Entry
		lines []string
	)
	for _, a := range []approval.Approval{unsigned, signed} {
		e, err := journal.Next(prev, t0, "bo", journal.KindApprovalRecorded, journal.ApprovalRecorded{Approval: a})
		require.NoError(t, err)
		b, err := json.Marshal(e)
		require.NoError(t, err)
		lines, prev = append(lines, string(b)), &e
	}
	w.files.SetJournal("s1", lines)
	require.NoError(t, w.ledger.SetJournalHead(ctx, journal.Head{SessionID: "s1", Seq: prev.Seq, Hash: prev.Hash}))
	require.NoError(t, w.ledger.CloseSession(ctx, "s1", t0))
	w.seal(t, "s1")

	v, _ := w.verify(t, w.fullDeps())
	s := v["s1"]
	require.True(t, s.Intact)
	require.Len(t, s.Approvals, 2)
	require.False(t, s.Approvals[0].Signed)
	require.Equal(t, audit.VerifyAbsent, s.Approvals[0].Signature.Status)
	require.True(t, s.Approvals[1].Signed)
	require.Equal(t, audit.VerifyOK, s.Approvals[1].Signature.Status)
	require.Equal(t, []string{"unsigned plan approval of aaaaaaaaaaaa in staging by carol"}, s.Warnings)

	w.sigs.Revoke("bo")
	v, _ = w.verify(t, w.fullDeps())
	s = v["s1"]
	require.False(t, s.Intact, "bo's head signature no longer verifies either")
	require.Equal(t, audit.VerifyFailed, s.Approvals[1].Signature.Status)
	require.Contains(t, s.Warnings, "promotion approval of web-prod-20261130-1a2b3c in prod by bo: its signature no longer verifies: blocked by policy: key FAKE:bo is not in the people file")
}
